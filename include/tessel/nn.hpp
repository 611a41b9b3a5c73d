// tessel::nn: model layer kernels, each forward and backward, through the executors — embedding
// (gather, deterministic scatter-add), LayerNorm, RMSNorm, GELU (tanh form), SiLU and SwiGLU, and
// causal attention with its compile-time tiling plan. PyTorch's semantics; see docs/nn.md and
// docs/attention.md. Device tensors: <tessel/nn/cuda.cuh> and <tessel/nn/attention_cuda.cuh>
// from a CUDA TU.
#pragma once

#include "nn/activations.hpp"
#include "nn/attention.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/rms_norm.hpp"
