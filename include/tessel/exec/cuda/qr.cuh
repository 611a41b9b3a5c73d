// The orthogonal factor of a QR factorization behind the CUDA executor: qr_orthogonal_factor on
// device tensors with the host primitive's contract (exec/qr.hpp), queued on the executor's stream
// as cuSOLVER ?geqrf then ?orgqr per matrix (cuSOLVER has no batched Householder QR; the QR
// iteration's batch groups are a few matrices). cuSOLVER wants column-major matrices stored back
// to back; the caller (roots/qr_iteration.hpp) passes its row-major buffers as column-major views.
// Include from CUDA translation units; link CUDA::cusolver.
#pragma once

#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <algorithm>
#include <type_traits>

#include "../cuda.cuh"
#include "../dense/operands.hpp"
#include "../executors.hpp"
#include "../qr.hpp"
#include "dense.hpp"
#include "libraries.hpp"
#include "scratch.hpp"

namespace tessel::exec {

namespace detail {

template <class T>
int device_geqrf_size(cusolverDnHandle_t h, int n, T* a) {
  int lwork = 0;
  if constexpr (std::is_same_v<T, float>)
    gpu::check_cusolver(cusolverDnSgeqrf_bufferSize(h, n, n, a, n, &lwork),
                        "cusolverDnSgeqrf_bufferSize", "sizing a QR factorization");
  else
    gpu::check_cusolver(cusolverDnDgeqrf_bufferSize(h, n, n, a, n, &lwork),
                        "cusolverDnDgeqrf_bufferSize", "sizing a QR factorization");
  return lwork;
}

template <class T>
int device_orgqr_size(cusolverDnHandle_t h, int n, T const* a, T const* tau) {
  int lwork = 0;
  if constexpr (std::is_same_v<T, float>)
    gpu::check_cusolver(cusolverDnSorgqr_bufferSize(h, n, n, n, a, n, tau, &lwork),
                        "cusolverDnSorgqr_bufferSize", "sizing a QR factorization");
  else
    gpu::check_cusolver(cusolverDnDorgqr_bufferSize(h, n, n, n, a, n, tau, &lwork),
                        "cusolverDnDorgqr_bufferSize", "sizing a QR factorization");
  return lwork;
}

// Matrix a (n x n, column-major, compact) overwritten with its Q.
template <class T>
void device_qr_one(cusolverDnHandle_t h, int n, T* a, T* tau, T* work, int lwork, int* info) {
  if constexpr (std::is_same_v<T, float>) {
    gpu::check_cusolver(cusolverDnSgeqrf(h, n, n, a, n, tau, work, lwork, info), "cusolverDnSgeqrf",
                        "a QR factorization");
    gpu::check_cusolver(cusolverDnSorgqr(h, n, n, n, a, n, tau, work, lwork, info),
                        "cusolverDnSorgqr", "forming a QR factorization's Q");
  } else {
    gpu::check_cusolver(cusolverDnDgeqrf(h, n, n, a, n, tau, work, lwork, info), "cusolverDnDgeqrf",
                        "a QR factorization");
    gpu::check_cusolver(cusolverDnDorgqr(h, n, n, n, a, n, tau, work, lwork, info),
                        "cusolverDnDorgqr", "forming a QR factorization's Q");
  }
}

}  // namespace detail

// Q of A = Q R for each device matrix (queued on executor.stream; nothing waits). The host
// primitive's contract, for column-major matrices stored back to back; f32 or f64.
template <DeviceExecutor X, TensorType M>
void qr_orthogonal_factor(X const& executor, M const& matrices) {
  using T = typename M::value_type;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "tessel: the device qr_orthogonal_factor takes f32 or f64 matrices.");
  detail::check_device_spaces<M>();
  auto const m = detail::matrix_batch(matrices, "the matrices");
  detail::check_qr_square(m, tuple_size_v<std::remove_cvref_t<decltype(matrices.shape())>> == 3);
  index_t const n = m.rows;
  if (n == 0 || m.batch == 0) return;
  if ((n > 1 && m.row_major()) || m.leading() != n || (m.batch > 1 && m.batch_stride != n * n))
    detail::throw_error(detail::sentence(
        "the device qr_orthogonal_factor needs compact column-major matrices (strides (", n * n,
        ",1,", n, ")), got strides (", m.batch_stride, ",", m.row_stride, ",", m.col_stride,
        "); pass a column-major view or copy."));
  cudaStream_t const stream = executor.stream;
  cusolverDnHandle_t const h = gpu::cusolver_handle(stream);
  int const ni = static_cast<int>(n);
  gpu::StreamBuffer tau(sizeof(T) * static_cast<std::size_t>(n), stream);
  gpu::StreamBuffer info(sizeof(int), stream);
  T* const tau_data = static_cast<T*>(tau.data());
  int const lwork = std::max(detail::device_geqrf_size<T>(h, ni, m.data),
                             detail::device_orgqr_size<T>(h, ni, m.data, tau_data));
  gpu::StreamBuffer work(sizeof(T) * static_cast<std::size_t>(std::max(lwork, 1)), stream);
  for (index_t b = 0; b < m.batch; ++b)
    detail::device_qr_one<T>(h, ni, m.data + b * m.batch_stride, tau_data,
                             static_cast<T*>(work.data()), lwork, static_cast<int*>(info.data()));
}

}  // namespace tessel::exec
