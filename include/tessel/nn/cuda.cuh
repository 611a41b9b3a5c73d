// The nn kernels on device tensors: include this from a CUDA translation unit (link CUDA::cudart)
// and pass exec::Cuda{stream} as the last argument of any nn function. The functions are the host
// ones (one source): their row bodies run as row kernels (<tessel/exec/cuda/rows.cuh>, a block of
// 256 threads per row), their expressions as the CUDA executor's kernels, their scratch is
// stream-ordered device memory. This header adds what only the device needs: the stable sort of
// token positions by id behind embedding_backward, CUB's radix sort (stable, so equal ids keep
// their positions in increasing order, as std::stable_sort on the host, and the backward's sums
// are the same on both).
#pragma once

#include <cstddef>

#include <cub/device/device_radix_sort.cuh>

#include <tessel/exec/cuda.cuh>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/exec/cuda/memory.hpp>
#include <tessel/exec/cuda/rows.cuh>
#include <tessel/exec/cuda/scratch.hpp>
#include <tessel/nn.hpp>

namespace tessel::nn::detail {

// keys(i) = ids(i) as index_t, positions(i) = i: the sort's input, one row of lanes striding
// over the tokens.
template <class IdsV>
struct SortInputRows {
  IdsV ids;
  index_t* keys;
  index_t* positions;
  index_t tokens;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t) const {
    for (index_t i = ctx.lane(); i < tokens; i += ctx.lanes()) {
      keys[i] = static_cast<index_t>(ids(i));
      positions[i] = i;
    }
  }
};

template <>
struct TokenSort<exec::Cuda> {
  template <class Ids>
  static void sort(exec::Cuda const& executor, Ids const& ids, index_t* sorted_ids,
                   index_t* positions) {
    index_t const n = to_index(size(ids.shape()));
    using Memory = exec::Memory<exec::Cuda>;
    auto keys = Memory::scratch<index_t>(executor, n);
    auto unsorted = Memory::scratch<index_t>(executor, n);
    exec::for_each_row<1024>(executor, 1, n,
                             SortInputRows<Ids>{ids, keys.data(), unsorted.data(), n});
    std::size_t bytes = 0;
    TESSEL_CUDA_CHECK(
        cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), sorted_ids, unsorted.data(),
                                        positions, n, 0, int(sizeof(index_t) * 8), executor.stream),
        "sizing the sort of embedding token ids");
    gpu::StreamBuffer temp(bytes, executor.stream);
    TESSEL_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, keys.data(), sorted_ids,
                                                      unsorted.data(), positions, n, 0,
                                                      int(sizeof(index_t) * 8), executor.stream),
                      "sorting embedding token ids");
  }
};

}  // namespace tessel::nn::detail
