// What the sparsity layer needs of an executor besides tessel::assign and exec::for_each_row
// (both found by argument-dependent lookup, so one template serves every executor): the
// executor's memory (exec/memory.hpp; exec::Cuda's comes with <tessel/sparsity/cuda.cuh>), and
// the check every entry point makes first, that its tensors live where its executor runs.
#pragma once

#include <type_traits>

#include "../../core/int_tuple.hpp"
#include "../../exec/executors.hpp"
#include "../../exec/memory.hpp"
#include "../../tensor/host_tensor.hpp"
#include "../../tensor/memory_space.hpp"
#include "../../tensor/tensor.hpp"

namespace tessel::detail {

// The memory of executor X (results, scratch, values read back): exec's, one for every workload.
template <class X>
using backend_t = exec::Memory<std::remove_cvref_t<X>>;

// Every tensor lives where X runs (a compile-time sentence otherwise).
template <class X, class... Ts>
constexpr void check_tensors_reach() {
  if constexpr (exec::HostExecutor<X>) {
    static_assert((std::is_same_v<typename std::remove_cvref_t<Ts>::space, HostSpace> && ...),
                  "tessel: these tensors live in device memory; pass exec::Cuda{stream} as the "
                  "executor (the last argument) and include <tessel/sparsity/cuda.cuh>.");
  } else {
    static_assert((std::is_same_v<typename std::remove_cvref_t<Ts>::space, DeviceSpace> && ...),
                  "tessel: exec::Cuda runs on device tensors, but these tensors live in host "
                  "memory; copy them to the device, or pass a host executor.");
  }
}

}  // namespace tessel::detail
