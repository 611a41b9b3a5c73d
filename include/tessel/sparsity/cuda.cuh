// Sparsity on device tensors: include this from a CUDA translation unit (link CUDA::cudart) and
// pass exec::Cuda{stream} as the last argument of any sparsity function — nm_mask, apply_nm,
// topk_mask, block_scores (L1Norm, L2Norm, SumOfSquares), apply_mask, satisfies, ... The functions
// are the host ones (one source): their elementwise work becomes kernels of the CUDA executor
// (<tessel/exec/cuda.cuh>), their per-scope selection and counting row kernels
// (<tessel/exec/cuda/rows.cuh>, a block of 256 threads per row), their results device tensors and
// their scratch stream-ordered device memory (exec/cuda/memory.hpp). Nothing is copied to the
// host but the one or two values a checker returns.
#pragma once

#include <tessel/exec/cuda.cuh>
#include <tessel/exec/cuda/memory.hpp>
#include <tessel/exec/cuda/rows.cuh>
#include <tessel/sparsity/block_scores.hpp>
#include <tessel/sparsity/block_update.hpp>
#include <tessel/sparsity/keep_mask.hpp>
#include <tessel/sparsity/nm_check.hpp>
#include <tessel/sparsity/nm_mask.hpp>
#include <tessel/sparsity/nm_pattern.hpp>
#include <tessel/sparsity/nonzeros.hpp>
#include <tessel/sparsity/scope.hpp>
#include <tessel/sparsity/topk.hpp>
