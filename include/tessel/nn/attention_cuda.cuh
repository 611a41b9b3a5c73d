// Causal attention on device tensors: include this from a CUDA translation unit (link
// CUDA::cudart) and pass exec::Cuda{stream} as the executor of nn::attention_forward and
// nn::attention_backward. The functions are the host ones (one source): their bodies become row
// kernels of the CUDA executor (exec/cuda/rows.cuh, one block of Threads per work item, the
// tile's rows dealt to the block's threads), the backward's D scratch stream-ordered device memory
// (exec/cuda/memory.hpp). The tile products and exponentials are the bodies' device loops
// (nn/attention_tiles.hpp): correct, and tested on the host as the same source, but not a tuned
// kernel (no shared-memory staging of the key/value tiles, no tensor cores); docs/attention.md
// says what a tuned one would change.
#pragma once

#include <tessel/exec/cuda/memory.hpp>
#include <tessel/exec/cuda/rows.cuh>
#include <tessel/nn/attention.hpp>
