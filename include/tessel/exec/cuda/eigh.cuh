// The symmetric eigendecomposition behind the CUDA executor: eigh on device tensors with the host
// primitive's contract (exec/eigh.hpp: same operands, same checks and sentences, the same meaning
// of info), as one cusolverDnXsyevBatched call queued on the executor's stream. cuSOLVER wants
// column-major matrices stored back to back, eigenvalues (batch, n) and info (batch) compact; a
// row-major batch is decomposed as it is (a symmetric matrix is its own transpose) and its
// eigenvectors transposed afterwards by one assignment. Include from CUDA translation units; link
// CUDA::cusolver.
#pragma once

#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <cstddef>
#include <type_traits>
#include <vector>

#include "../cuda.cuh"
#include "../dense/eigh_operands.hpp"
#include "../executors.hpp"
#include "dense.hpp"
#include "libraries.hpp"
#include "scratch.hpp"

namespace tessel::exec {

namespace detail {

// cusolverDnParams_t for one call.
class SolverParams {
 public:
  SolverParams() {
    gpu::check_cusolver(cusolverDnCreateParams(&params_), "cusolverDnCreateParams",
                        "preparing an eigendecomposition");
  }
  ~SolverParams() { cusolverDnDestroyParams(params_); }
  SolverParams(SolverParams const&) = delete;
  SolverParams& operator=(SolverParams const&) = delete;
  cusolverDnParams_t get() const noexcept { return params_; }

 private:
  cusolverDnParams_t params_ = nullptr;
};

template <class T, class V, class I>
void check_device_eigh_layout(EighOperands<T, V, I> const& ops) {
  auto const& m = ops.matrices;
  auto const& w = ops.eigenvalues;
  index_t const n = m.rows;
  if (m.batch > 1 && m.batch_stride != m.leading() * n)
    throw_error(sentence("the device eigh needs the matrices stored back to back (batch stride ",
                         m.leading() * n, "), got batch stride ", m.batch_stride,
                         "; copy them into a compact tensor."));
  if ((n > 1 && w.stride != 1) || (w.batch > 1 && w.batch_stride != n))
    throw_error(sentence("the device eigh needs compact eigenvalues (strides (", n,
                         ",1)), got strides (", w.batch_stride, ",", w.stride,
                         "); copy them into a compact tensor."));
  if (ops.info.n > 1 && ops.info.stride != 1)
    throw_error(sentence("the device eigh needs a compact info (stride 1), got stride ",
                         ops.info.stride, "."));
}

}  // namespace detail

// Eigendecomposition of symmetric device matrices on exec.stream (queued; nothing waits, info is
// written on the device). The host eigh's contract; f32 or f64.
template <DeviceExecutor X, TensorType W, TensorType M, TensorType I>
void eigh(X const& executor, W const& eigenvalues, M const& matrices, I const& info) {
  using T = typename M::value_type;
  static_assert((std::is_same_v<T, float> ||
                 std::is_same_v<T, double>)&&std::is_same_v<typename W::value_type, T>,
                "tessel: the device eigh takes f32 or f64 matrices and eigenvalues of one type.");
  static_assert(std::is_same_v<typename I::value_type, int>,
                "tessel: eigh's info is an int tensor.");
  detail::check_device_spaces<M, W, I>();
  auto const ops = detail::eigh_operands(eigenvalues, matrices, info);
  detail::check_device_eigh_layout(ops);
  auto const& m = ops.matrices;
  if (m.batch == 0) return;
  cudaStream_t const stream = executor.stream;
  if (m.rows == 0) {
    TESSEL_CUDA_CHECK(cudaMemsetAsync(ops.info.data, 0, sizeof(int) * m.batch, stream),
                      "clearing eigh's info");
    return;
  }
  cusolverDnHandle_t const h = gpu::cusolver_handle(stream);
  detail::SolverParams params;
  cudaDataType_t const type = detail::cublas_type<T>();
  // cuSOLVER sees a row-major matrix as its transpose: its upper triangle is our lower one.
  cublasFillMode_t const fill = m.row_major() ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  std::size_t device_bytes = 0, host_bytes = 0;
  gpu::check_cusolver(
      cusolverDnXsyevBatched_bufferSize(h, params.get(), CUSOLVER_EIG_MODE_VECTOR, fill, m.rows,
                                        type, m.data, m.leading(), type, ops.eigenvalues.data, type,
                                        &device_bytes, &host_bytes, m.batch),
      "cusolverDnXsyevBatched_bufferSize", "sizing an eigendecomposition");
  gpu::StreamBuffer work(device_bytes, stream);
  std::vector<unsigned char> host_work(host_bytes);
  gpu::check_cusolver(
      cusolverDnXsyevBatched(h, params.get(), CUSOLVER_EIG_MODE_VECTOR, fill, m.rows, type, m.data,
                             m.leading(), type, ops.eigenvalues.data, type, work.data(),
                             device_bytes, host_work.data(), host_bytes, ops.info.data, m.batch),
      "cusolverDnXsyevBatched", "a batched eigendecomposition");
  if (m.row_major()) {
    // The eigenvectors are the rows of each matrix as we index it; the contract wants columns.
    if constexpr (tuple_size_v<std::remove_cvref_t<decltype(matrices.shape())>> == 3)
      assign(matrices, permute<0, 2, 1>(matrices), executor);
    else
      assign(matrices, transpose(matrices), executor);
  }
}

}  // namespace tessel::exec
