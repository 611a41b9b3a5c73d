// tessel Shampoo: blocking plans, the optimizer, inverse roots, quantized factors and
// CombinedLinear. tessel.hpp includes only the light part (plans, distribute_buffer_sizes,
// options, utilities); the optimizer needs Eigen's eigensolver, so it comes with this header. The
// state files (safetensors and nlohmann/json, 2 s of compile time) are not part of the step:
// <tessel/shampoo/state/checkpoint.hpp> and <tessel/shampoo/distributed/checkpoint.hpp>.
// The device optimizer is <tessel/shampoo/device_shampoo.cuh> (CUDA translation units).
#pragma once

#include "shampoo/combined_linear.hpp"
#include "shampoo/distributed/distributed.hpp"
#include "shampoo/optimizer.hpp"
#include "shampoo/options.hpp"
#include "shampoo/options_check.hpp"
#include "shampoo/param_groups.hpp"
#include "shampoo/plan/distribute.hpp"
#include "shampoo/plan/geometry.hpp"
#include "shampoo/plan/plan.hpp"
#include "shampoo/plan/segments.hpp"
#include "shampoo/plan/static_plan.hpp"
#include "shampoo/roots/inverse_root.hpp"
#include "shampoo/state/quantized.hpp"
#include "shampoo/state/state_dict.hpp"
#include "shampoo/utils.hpp"
