// What FLCE's chunk loop (flce/chunk_loop.hpp) and backward need of an executor: its memory
// (exec::Memory<Executor>: space, scratch, views, the target check read back), which type the
// GEMMs read, and the checks the executor's libraries need. Backend<Executor> names them and
// forwards to exec's for_each_row, gemm and assign, whose host and CUDA overloads live in different
// headers (the CUDA ones only in CUDA translation units). This header gives the host executors'
// backend; <tessel/flce/cuda.cuh> gives exec::Cuda's.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../exec/dense.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../exec/memory.hpp"
#include "../exec/rows.hpp"
#include "../tensor/memory_space.hpp"
#include "../tensor/tensor.hpp"
#include "loop_bodies.hpp"
#include "plan.hpp"
#include "types.hpp"

namespace tessel::flce::detail {

// Executors without a backend: only exec::Cuda, whose backend is in <tessel/flce/cuda.cuh>.
template <class Executor>
struct Backend {
  static_assert(sizeof(Executor) == 0,
                "tessel: FLCE on device tensors (exec::Cuda) needs <tessel/flce/cuda.cuh>, "
                "included from a CUDA translation unit.");
};

// The chunk loop cuts one scratch allocation into sub-buffers at ScratchLayout's offsets, which
// assume exec's scratch alignment on every executor.
static_assert(static_cast<std::size_t>(scratch_alignment) == exec::scratch_alignment);

// The host executors (Serial, OpenMP, Auto): Eigen's GEMMs through exec::gemm, rows spread over
// the executor's threads, f16/bf16 operands widened to f32 for Eigen.
template <exec::HostExecutor X>
struct Backend<X> : exec::Memory<X> {
  static constexpr Device device = Device::host;
  // What the GEMMs read: f32/f64, so 16-bit storage is converted (ScratchLayout's *_f32 buffers).
  template <class T>
  using gemm_t = accum_t<T>;

  // Nothing beyond validate_call: Eigen takes any size.
  template <class Plan, class Call>
  static void check_call(Plan const&, Call const&) {}

  template <int Threads, class Body>
  static void rows(X const& executor, index_t rows, index_t row_work, Body const& body) {
    exec::for_each_row(executor, rows, row_work, body);
  }
  template <class C, class A, class B>
  static void gemm(X const& executor, C const& c, A const& a, B const& b, exec::DenseScale scale) {
    exec::gemm(executor, c, a, b, scale);
  }
  template <class D, class S>
  static void assign(X const& executor, D const& dst, S const& src) {
    tessel::assign(dst, src, executor);
  }
};

}  // namespace tessel::flce::detail
