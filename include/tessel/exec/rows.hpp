// Row kernels behind the host executors: body(ctx, row) for every row in [0, rows), each row
// worked on by one team of lanes. A body is written once for any execution context (a strided
// loop over the row's elements, ctx.reduce to combine lanes) and is the host twin of its CUDA
// launch (exec/cuda/rows.cuh: one thread block per row). The host gives every row one lane
// (SequentialContext) and spreads the rows over the executor's threads in contiguous ranges; which
// thread runs a row never changes what the row computes. Workloads (FLCE's fused row, sparsity's
// per-scope selection) run their row bodies through this instead of a loop of their own.
#pragma once

#include "../core/config.hpp"
#include "body/context.hpp"
#include "executors.hpp"

namespace tessel::exec {

// A row body: callable as body(ctx, row) with ctx a SequentialContext (host) or a block context
// (CUDA). For the device it must be a copyable function object (not a lambda: tessel builds
// without nvcc's extended lambdas) whose members are device pointers and values.
template <class B>
concept RowBody = requires(B const& body, SequentialContext const& ctx, index_t row) {
  body(ctx, row);
};

// body(ctx, row) for row in [0, rows) on the host. row_work (elements touched per row) decides,
// with the executor, how many threads share the rows (exec::Auto stays serial for small work).
template <HostExecutor X, RowBody Body>
void for_each_row(X const& executor, index_t rows, index_t row_work, Body const& body) {
  if (rows <= 0) return;
  index_t const work = rows * (row_work > 0 ? row_work : 1);
  detail::parallel_ranges(detail::threads_for(executor, work), rows,
                          [&](index_t begin, index_t end) {
                            SequentialContext const ctx;
                            for (index_t r = begin; r < end; ++r) body(ctx, r);
                          });
}

}  // namespace tessel::exec
