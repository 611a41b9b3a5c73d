// The CUDA executor's kernels: thin __global__ wrappers around the bodies in exec/body/ (the same
// source the host runs with SequentialContext); only the context differs. Included by
// <tessel/exec/cuda.cuh> only.
//   elementwise_linear_kernel   one coalesced mode, grid-stride, scalar accesses
//   elementwise_packet_kernel   one contiguous aligned mode, grid-stride, 16-byte accesses
//   elementwise_nest_kernel     any loop nest, grid-stride, flat index -> coordinates by FastDivmod
//                               (NestIndexer) or by constant divisors with constant strides when
//                               every layout is static (StaticNestIndexer)
//   reduce_row_kernel           one row (reduced modes) per team (a block, or a warp for short
//                               rows): producer fused in, cub::BlockReduce / cub::WarpReduce
//   softmax_row_kernel          the same rows with the softmax / log-softmax epilogue fused out
// Full reductions have no kernel of their own: cub::DeviceReduce reads the expression through an
// iterator (see cuda.cuh).
#pragma once

#include <tessel/exec/cuda/block_context.cuh>
#include <tessel/exec/body/elementwise.hpp>
#include <tessel/exec/body/nest.hpp>
#include <tessel/exec/body/row.hpp>

namespace tessel::exec::kernels {

// Threads per block of every kernel here (their "default configuration", the one the ptxas spill
// check compiles).
inline constexpr int elementwise_threads = 256;
inline constexpr int row_threads = 256;
// Rows of at most this many elements are reduced by one warp instead of a whole block.
inline constexpr index_t warp_row_limit = 1024;

// The lanes of a grid-stride loop: every thread of the grid. No cooperative part (elementwise
// bodies never reduce).
struct GridContext {
  __device__ index_t lane() const {
    return static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  }
  __device__ index_t lanes() const { return static_cast<index_t>(gridDim.x) * blockDim.x; }
};

template <class Dst, class Ev>
__global__ void __launch_bounds__(elementwise_threads)
    elementwise_linear_kernel(Dst dst, Ev ev, index_t total) {
  elementwise_body(GridContext{}, dst, ev, 0, total);
}

template <int V, class Dst, class Ev>
__global__ void __launch_bounds__(elementwise_threads)
    elementwise_packet_kernel(Dst dst, Ev ev, index_t total) {
  packet_elementwise_body<V>(GridContext{}, dst, ev, total);
}

// Nest: NestIndexer (run-time extents) or StaticNestIndexer (compile-time extents and strides).
template <class Nest, class Dst, class Ev>
__global__ void __launch_bounds__(elementwise_threads)
    elementwise_nest_kernel(Nest nest, Dst dst, Ev ev, typename Nest::index_type total) {
  nest_elementwise_body(GridContext{}, nest, dst, ev, total);
}

// Team: row_threads (a block per row) or 32 (a warp per row).
template <int Team, bool Flat, class Op, class Nest, class Dst, class Ev>
__global__ void __launch_bounds__(row_threads)
    reduce_row_kernel(Op op, Nest nest, Dst dst, Ev ev, typename Nest::index_type rows, index_t n) {
  using Index = typename Nest::index_type;
  BlockContext<row_threads, Team> const ctx;
  Index const row = static_cast<Index>(blockIdx.x) * (row_threads / Team) + threadIdx.x / Team;
  if (row >= rows) return;  // a whole team leaves together
  nest_reduce_row_body<Flat>(ctx, op, nest, dst, ev, row, n);
}

template <int Team, bool Log, bool Flat, class Nest, class Dst, class Ev>
__global__ void __launch_bounds__(row_threads)
    softmax_row_kernel(Nest nest, Dst dst, Ev ev, typename Nest::index_type rows, index_t n) {
  using Index = typename Nest::index_type;
  BlockContext<row_threads, Team> const ctx;
  Index const row = static_cast<Index>(blockIdx.x) * (row_threads / Team) + threadIdx.x / Team;
  if (row >= rows) return;
  nest_softmax_row_body<Log, Flat>(ctx, nest, dst, ev, row, n);
}

}  // namespace tessel::exec::kernels
