// The execution context a kernel body sees on the GPU: one thread block, whose threads are the
// lanes, with a CUB block reduction whose result every lane gets. The host twin is
// flce/detail/sequential_context.hpp (to be unified with the exec layer's contexts).
#pragma once

#include <cub/block/block_reduce.cuh>

#include <tessel/core/config.hpp>
#include <tessel/core/int.hpp>

namespace tessel::flce::device {

// @pre the kernel runs with blockDim == (Threads, 1, 1)
template <int Threads>
struct BlockContext {
  __device__ index_t lane() const { return static_cast<index_t>(threadIdx.x); }
  // Static, so a body's strided loops have a constant stride.
  __device__ static constexpr Int<Threads> lanes() { return {}; }

  // Every lane's partial combined; every lane gets the result. Also a barrier: no lane returns
  // before every lane has called it.
  template <class T, class Combine>
  __device__ T reduce(T partial, Combine const& combine) const {
    using Reduce = cub::BlockReduce<T, Threads>;
    __shared__ typename Reduce::TempStorage storage;
    // Raw storage: T may have default member initializers, which __shared__ variables cannot.
    __shared__ alignas(T) unsigned char result[sizeof(T)];
    T total = Reduce(storage).Reduce(partial, combine);
    if (threadIdx.x == 0) *reinterpret_cast<T*>(result) = total;
    __syncthreads();
    T const out = *reinterpret_cast<T const*>(result);
    __syncthreads();  // storage and result may be reused by the next reduction
    return out;
  }
};

}  // namespace tessel::flce::device
