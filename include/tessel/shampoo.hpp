// tessel Shampoo: blocking plans, the optimizer, inverse roots, quantized factors, state files and
// CombinedLinear. tessel.hpp includes only the light part (plans, distribute_buffer_sizes,
// options, utilities); the optimizer needs Eigen's dense solvers and the state files nlohmann/json,
// which would triple the umbrella's compile time, so they come with this header (as tessel/io.hpp).
#pragma once

#include "shampoo/checkpoint.hpp"
#include "shampoo/combined_linear.hpp"
#include "shampoo/context.hpp"
#include "shampoo/distribute.hpp"
#include "shampoo/distributed.hpp"
#include "shampoo/distributed_checkpoint.hpp"
#include "shampoo/matrix_functions.hpp"
#include "shampoo/optimizer.hpp"
#include "shampoo/options.hpp"
#include "shampoo/plan.hpp"
#include "shampoo/quantized.hpp"
#include "shampoo/root_bodies.hpp"
#include "shampoo/state.hpp"
#include "shampoo/state_keys.hpp"
#include "shampoo/step_bodies.hpp"
#include "shampoo/utils.hpp"
