// Causal multi-head attention with a compile-time tiling plan, forward and backward: everything
// a model's attention layer needs from tessel on the host (<tessel/nn/attention_cuda.cuh> adds
// exec::Cuda). docs/attention.md is the guide.
#pragma once

#include "attention_backward.hpp"
#include "attention_forward.hpp"
#include "attention_plan.hpp"
#include "attention_plan_print.hpp"
#include "attention_tensors.hpp"
