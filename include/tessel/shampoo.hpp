// tessel Shampoo: blocking plans, the optimizer, inverse roots, quantized factors, state files and
// CombinedLinear. tessel.hpp includes only the light part (plans, distribute_buffer_sizes,
// options, utilities); the optimizer needs Eigen's dense solvers and the state files nlohmann/json,
// which would triple the umbrella's compile time, so they come with this header (as tessel/io.hpp).
// The device optimizer is <tessel/shampoo/device_shampoo.cuh> (CUDA translation units).
#pragma once

#include "shampoo/combined_linear.hpp"
#include "shampoo/distributed/checkpoint.hpp"
#include "shampoo/distributed/distributed.hpp"
#include "shampoo/optimizer.hpp"
#include "shampoo/options.hpp"
#include "shampoo/plan/distribute.hpp"
#include "shampoo/plan/geometry.hpp"
#include "shampoo/plan/plan.hpp"
#include "shampoo/plan/segments.hpp"
#include "shampoo/plan/static_plan.hpp"
#include "shampoo/roots/inverse_root.hpp"
#include "shampoo/state/checkpoint.hpp"
#include "shampoo/state/keys.hpp"
#include "shampoo/state/quantized.hpp"
#include "shampoo/state/state_dict.hpp"
#include "shampoo/utils.hpp"
