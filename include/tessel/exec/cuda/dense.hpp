// Dense linear algebra behind the CUDA executor: gemm and syrk on device tensors with the host
// primitives' contract (exec/dense.hpp: same operands, same checks and sentences, row-major or
// column-major matrices, batches with an operand shared by the whole batch), as one
// cublasGemmStridedBatchedEx call queued on the executor's stream. A and B may be f32, f64, f16 or
// bf16 (the same type); C the same type or f32 (16-bit products accumulate in f32; f64 in f64).
// syrk is a gemm with A^T: cuBLAS has no strided-batched syrk, and one batched call over the
// group beats a loop of half-size ones. Host C++ (no kernels): link CUDA::cublas.
#pragma once

#include <climits>
#include <type_traits>

#include "../../core/float16.hpp"
#include "../dense/operands.hpp"
#include "../executors.hpp"
#include "libraries.hpp"

namespace tessel::exec {

namespace detail {

template <class T>
constexpr cudaDataType_t cublas_type() {
  if constexpr (std::is_same_v<T, float>)
    return CUDA_R_32F;
  else if constexpr (std::is_same_v<T, double>)
    return CUDA_R_64F;
  else if constexpr (std::is_same_v<T, half>)
    return CUDA_R_16F;
  else
    return CUDA_R_16BF;
}

template <class T>
inline constexpr bool device_dense_type_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                            std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

inline int cublas_int(index_t v, char const* what) {
  if (v > INT_MAX)
    throw_error(sentence("cuBLAS takes 32-bit sizes, but the ", what, " is ", v, "."));
  return static_cast<int>(v);
}

// C = alpha A B + beta C on the device. @pre check_gemm passed
template <class TC, class TA>
void device_gemm(cudaStream_t stream, MatrixBatch<TC> c, MatrixBatch<TA const> a,
                 MatrixBatch<TA const> b, DenseScale s) {
  if (c.batch == 0 || c.rows == 0 || c.cols == 0) return;
  auto const g = column_major_gemm(c, a, b);
  auto const op = [](bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; };
  int const m = cublas_int(g.m, "column count"), n = cublas_int(g.n, "row count");
  int const k = cublas_int(g.k, "inner dimension");
  int const batch = cublas_int(g.batch, "batch");
  int const lda = cublas_int(g.lda, "leading dimension of B");
  int const ldb = cublas_int(g.ldb, "leading dimension of A");
  int const ldc = cublas_int(g.ldc, "leading dimension of C");
  long long const sa = g.stride_a, sb = g.stride_b, sc = g.stride_c;
  cublasHandle_t const h = gpu::cublas_handle(stream);
  auto const call = [&](auto const* alpha, auto const* beta, cublasComputeType_t compute) {
    gpu::check_cublas(cublasGemmStridedBatchedEx(
                          h, op(g.trans_a), op(g.trans_b), m, n, k, alpha, g.a, cublas_type<TA>(),
                          lda, sa, g.b, cublas_type<TA>(), ldb, sb, beta, g.c, cublas_type<TC>(),
                          ldc, sc, batch, compute, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmStridedBatchedEx", "a batched matrix product");
  };
  if constexpr (std::is_same_v<TA, double>) {
    double const alpha = s.alpha, beta = s.beta;
    call(&alpha, &beta, CUBLAS_COMPUTE_64F);
  } else {
    float const alpha = static_cast<float>(s.alpha), beta = static_cast<float>(s.beta);
    call(&alpha, &beta, CUBLAS_COMPUTE_32F);
  }
}

template <class TC, class TA>
constexpr void check_device_dense_types() {
  static_assert(device_dense_type_v<TA>,
                "tessel: the device dense primitives take f32, f64, f16 or bf16 operands.");
  static_assert(std::is_same_v<TC, TA> || (std::is_same_v<TC, float> && sizeof(TA) == 2),
                "tessel: the device dense primitives write C in the operands' type, or in float "
                "for 16-bit operands.");
}

template <class C, class... Ops>
constexpr void check_device_spaces() {
  static_assert(std::is_same_v<typename C::space, DeviceSpace> &&
                    (std::is_same_v<typename Ops::space, DeviceSpace> && ...),
                "tessel: exec::Cuda multiplies device tensors; use a host executor for host "
                "tensors.");
}

}  // namespace detail

// C = alpha A B + beta C on exec.stream (queued; nothing waits). The host gemm's contract.
template <DeviceExecutor X, TensorType C, TensorType A, TensorType B>
void gemm(X const& executor, C const& c, A const& a, B const& b, DenseScale scale = {}) {
  using TA = typename A::value_type;
  static_assert(std::is_same_v<typename B::value_type, TA>,
                "tessel: gemm's A and B have one element type.");
  detail::check_device_dense_types<typename C::value_type, TA>();
  detail::check_device_spaces<C, A, B>();
  auto cm = detail::matrix_batch(c, "C");
  auto am = detail::matrix_batch(a, "A");
  auto bm = detail::matrix_batch(b, "B");
  detail::check_gemm(cm, am, bm);
  detail::device_gemm(executor.stream, cm, detail::as_const(am), detail::as_const(bm), scale);
}

// C = alpha A A^T + beta C on exec.stream; C comes out symmetric. The host syrk's contract.
template <DeviceExecutor X, TensorType C, TensorType A>
void syrk(X const& executor, C const& c, A const& a, DenseScale scale = {}) {
  detail::check_device_dense_types<typename C::value_type, typename A::value_type>();
  detail::check_device_spaces<C, A>();
  auto cm = detail::matrix_batch(c, "C");
  auto am = detail::matrix_batch(a, "A");
  detail::check_syrk(cm, am);
  auto const ac = detail::as_const(am);
  detail::device_gemm(executor.stream, cm, ac, ac.transposed(), scale);
}

}  // namespace tessel::exec
