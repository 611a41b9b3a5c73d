// tessel Shampoo: blocking plans, the optimizer with every preconditioner family, inverse roots,
// quantized factors, CombinedLinear, and the state files of one optimizer (save_checkpoint,
// load_checkpoint). tessel.hpp includes only the light part (plans, distribute_buffer_sizes,
// options, utilities). A program compiles the families it names (Shampoo<float, Soap>), or every
// family when it chooses at run time (Shampoo<float>); including all of them costs parsing only.
// The distributed optimizer's files are <tessel/shampoo/distributed/checkpoint.hpp>; the device
// optimizer is <tessel/shampoo/device_shampoo.cuh> (CUDA translation units).
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
#include "shampoo/state/checkpoint.hpp"
#include "shampoo/state/quantized.hpp"
#include "shampoo/state/state_dict.hpp"
#include "shampoo/utils.hpp"
