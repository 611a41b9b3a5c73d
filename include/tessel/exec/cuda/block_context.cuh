// The execution context a kernel body sees on the GPU: a team of threads (a whole block, or one
// warp of it) whose threads are the lanes, with a CUB reduction whose result every lane gets. With
// exec::SequentialContext (exec/body/context.hpp, the host twin's context) it is the only
// implementation of the cooperative part of a body; everything else is the same source.
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/util_ptx.cuh>
#include <cub/warp/warp_reduce.cuh>

#include <tessel/core/config.hpp>
#include <tessel/core/int.hpp>

namespace tessel::exec {

// Threads: the block size; Team: the lanes of one context, the whole block (one row per block,
// cub::BlockReduce) or one warp (short rows: a row per warp, cub::WarpReduce and a shuffle).
// @pre the kernel runs with blockDim == (Threads, 1, 1); with Team == 32, every lane of a warp
//      calls reduce together (a warp leaves a kernel as a whole or not at all)
template <int Threads, int Team = Threads>
struct BlockContext {
  static_assert(Threads % 32 == 0, "tessel: a block context needs whole warps.");
  static_assert(Team == Threads || Team == 32,
                "tessel: a block context's team is the whole block or one warp.");

  __device__ index_t lane() const { return static_cast<index_t>(threadIdx.x % Team); }
  // Static, so a body's strided loops have a constant stride.
  __device__ static constexpr Int<Team> lanes() { return {}; }
  // Which team of the block this thread belongs to (0 when the team is the block).
  __device__ index_t team() const { return static_cast<index_t>(threadIdx.x / Team); }
  __device__ static constexpr Int<Threads / Team> teams() { return {}; }

  // Every lane's partial combined; every lane of the team gets the result. With a block team it
  // is also a block barrier: no lane returns before every lane has called it.
  template <class T, class Combine>
  __device__ T reduce(T partial, Combine const& combine) const {
    if constexpr (Team == Threads) {
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
    } else {
      using Reduce = cub::WarpReduce<T, Team>;
      __shared__ typename Reduce::TempStorage storage[Threads / Team];
      T const total = Reduce(storage[threadIdx.x / Team]).Reduce(partial, combine);
      // The total is valid in lane 0 only; a shuffle gives it to every lane of the warp.
      return cub::ShuffleIndex<Team>(total, 0, 0xffffffffu);
    }
  }
};

}  // namespace tessel::exec
