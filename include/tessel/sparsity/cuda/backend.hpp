// The sparsity layer's memory for exec::Cuda (see sparsity/detail/backend.hpp): results are owning
// device tensors (make_device_tensor), scratch is stream-ordered (gpu::StreamBuffer), and a value
// comes back to the host by a copy on the executor's stream followed by a wait for that stream —
// the only synchronization of a sparsity call, made only by the calls that return host values
// (first_violation, satisfies, check_nm, count_nonzero, density). Included by
// <tessel/sparsity/cuda.cuh>; needs the CUDA runtime, not nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "../../core/int.hpp"
#include "../../exec/cuda/device_memory.hpp"
#include "../../exec/cuda/error.hpp"
#include "../../exec/cuda/scratch.hpp"
#include "../../exec/executors.hpp"
#include "../../tensor/tensor.hpp"
#include "../detail/backend.hpp"

namespace tessel::detail {

template <>
struct SparsityBackend<exec::Cuda> {
  template <class T, IntTuple S>
  static auto make(exec::Cuda const&, S const& s) {
    return make_device_tensor<T>(s);
  }

  // n elements of device memory, freed in stream order when the owner dies.
  template <class T>
  struct Scratch {
    gpu::StreamBuffer buffer;
    T* data() const { return static_cast<T*>(buffer.data()); }
  };
  template <class T>
  static Scratch<T> scratch(exec::Cuda const& executor, index_t n) {
    return Scratch<T>{gpu::StreamBuffer(static_cast<std::size_t>(n) * sizeof(T), executor.stream)};
  }

  template <class T, class L>
  static auto view(T* p, L const& l) {
    return make_device_tensor(p, l);
  }

  // The element at device address p, once the executor's stream has reached everything queued.
  template <class T>
  static T read(exec::Cuda const& executor, T const* p) {
    T value{};
    gpu::copy_to_host(make_tensor(&value, make_shape(Int<1>{})),
                      make_device_tensor(p, make_shape(Int<1>{})), executor.stream);
    TESSEL_CUDA_CHECK(cudaStreamSynchronize(executor.stream),
                      "waiting for a sparsity result on its stream");
    return value;
  }
};

}  // namespace tessel::detail
