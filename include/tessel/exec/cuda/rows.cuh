// Row kernels behind the CUDA executor: body(ctx, row) for every row, one thread block per row,
// the block's threads the lanes of ctx (exec::BlockContext: strided loops, a CUB block reduction
// every lane receives). The same body runs on the host through exec/rows.hpp with one lane per
// row, which is how its math is tested without a GPU. Include from CUDA translation units.
#pragma once

#include <climits>

#include <tessel/core/error.hpp>
#include <tessel/exec/cuda/block_context.cuh>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/exec/executors.hpp>
#include <tessel/exec/rows.hpp>

namespace tessel::exec {

namespace kernels {

// Rows [first_row, first_row + gridDim.x): one per block. The body is a __grid_constant__
// parameter, so a body may hand out the address of a member (FLCE's soft targets) without the
// parameter being copied to every thread's stack.
template <int Threads, class Body>
__global__ void __launch_bounds__(Threads)
    rows_kernel(__grid_constant__ Body const body, index_t first_row) {
  BlockContext<Threads> const ctx;
  body(ctx, first_row + static_cast<index_t>(blockIdx.x));
}

}  // namespace kernels

// body(ctx, row) for row in [0, rows), queued on executor.stream with Threads threads per row
// (a multiple of 32). row_work is the host overload's; a block per row needs no threshold.
template <int Threads = 256, DeviceExecutor X, class Body>
void for_each_row(X const& executor, index_t rows, [[maybe_unused]] index_t row_work,
                  Body const& body) {
  static_assert(Threads % 32 == 0 && Threads <= 1024,
                "tessel: a row kernel's block is 32 to 1024 threads, in whole warps.");
  for (index_t first = 0; first < rows; first += INT_MAX) {
    index_t const blocks = rows - first < INT_MAX ? rows - first : INT_MAX;
    kernels::rows_kernel<Threads>
        <<<static_cast<unsigned>(blocks), Threads, 0, executor.stream>>>(body, first);
    TESSEL_CUDA_CHECK(cudaGetLastError(), "launching a row kernel");
  }
}

}  // namespace tessel::exec
