// Spectral descent's direction (Muon): each 2-D block's gradient G (rows, cols) replaced by
// U V^T (G = U S V^T, the reduced SVD), approximated by the quintic Newton-Schulz iteration
//   X0 = G / max(||G||_F, 1e-8),   X <- a X + b (X X^T) X + c (X X^T)^2 X.
// The iteration runs on the smaller Gram matrix: for a tall block (rows >= cols) it is
// X <- X (a I + b M + c M^2) with M = X^T X (cols, cols), for a wide one (a I + b M + c M^2) X with
// M = X X^T (rows, rows); both are the same polynomial of X. Per iteration: one batched syrk and
// two batched gemms over the group's slots, on the executor (BLAS on the host, cuBLAS on a GPU).
//
// The exact U V^T (SVD orthogonalization) is the polar factor of G: U V^T = G (G^T G)^(-1/2) for a
// tall block, (G G^T)^(-1/2) G for a wide one. It comes from the eigendecomposition of the smaller
// Gram matrix, G^T G = V diag(lambda) V^T with lambda = S^2, rather than from an SVD: eigh is the
// one dense decomposition tessel already runs batched on the host (LAPACK or Eigen) and on a GPU
// (cuSOLVER), and the inverse root of a symmetric matrix is what the Shampoo roots compute
// (roots/eigen.hpp, reused here). The price: the Gram matrix squares the condition number, so
// singular values below about sqrt(n eps) S_max (n = max(rows, cols)) are lost to rounding:
// sqrt(n) 1.5e-8 S_max in double, sqrt(n) 3.5e-4 S_max in float. So a float block is orthogonalized
// in double (G widened, the result rounded back), which keeps what a float SVD would resolve, and a
// float gradient cannot overflow its Gram matrix. Eigenvalues at or below n eps lambda_max are
// taken as 0 (the pseudo-inverse root): those directions give 0, as U V^T restricted to the nonzero
// singular values does. Cost per block: one syrk, one eigh and two gemms of the k x k Gram matrix
// (k = min(rows, cols)), one gemm with G.
#pragma once

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../core/layout.hpp"
#include "../../exec/dense.hpp"
#include "../../exec/memory.hpp"
#include "../../expr/cast.hpp"
#include "../../expr/math.hpp"
#include "../../expr/minmax.hpp"
#include "../../expr/reduce.hpp"
#include "../options.hpp"
#include "../roots/eigen.hpp"

namespace tessel::shampoo::stages {

// Writes the orthogonalized g (count blocks of shape (rows, cols), back to back) to x0 and
// returns where the result is: x0 or x1 (count * rows * cols each, distinct from g).
// norms: count doubles of scratch.
template <class X, class T>
T* orthogonalize(X const& x, T const* g, T* x0, T* x1, index_t count, index_t rows, index_t cols,
                 NewtonSchulzConfig const& config, double* norms) {
  using B = exec::Memory<X>;
  index_t const numel = rows * cols;
  auto const flat = make_layout(make_shape(count, numel));
  auto const n = B::view(norms, make_layout(make_shape(count)));
  auto const gv = B::view(g, flat);
  assign(n, sum(cast<double>(gv) * cast<double>(gv), mode<1>), x);
  auto const per_slot = make_layout(make_shape(count, numel), make_stride(Int<1>{}, Int<0>{}));
  assign(B::view(x0, flat), gv / cast<T>(max(sqrt(B::view(norms, per_slot)), 1e-8)), x);
  bool const tall = rows >= cols;
  index_t const k = tall ? cols : rows;
  auto gram = B::template scratch<T>(x, count * k * k);
  auto poly = B::template scratch<T>(x, count * k * k);
  auto const square = make_layout(make_shape(count, k, k));
  auto const m = B::view(gram.data(), square);
  auto const p = B::view(poly.data(), square);
  auto const matrices = make_layout(make_shape(count, rows, cols));
  // X^T as a (count, cols, rows) view of the same elements.
  auto const transposed =
      make_layout(make_shape(count, cols, rows), make_stride(numel, Int<1>{}, cols));
  T* cur = x0;
  T* next = x1;
  for (index_t it = 0; it < config.num_iterations; ++it) {
    auto const xc = B::view(cur, matrices);
    auto const xn = B::view(next, matrices);
    if (tall)
      syrk(x, m, B::view(cur, transposed));  // X^T X
    else
      syrk(x, m, xc);  // X X^T
    assign(p, m, x);
    gemm(x, p, m, m, {.alpha = config.c, .beta = config.b});  // b M + c M^2
    assign(xn, xc, x);
    if (tall)
      gemm(x, xn, xc, p, {.alpha = 1.0, .beta = config.a});  // a X + X P
    else
      gemm(x, xn, p, xc, {.alpha = 1.0, .beta = config.a});  // a X + P X
    std::swap(cur, next);
  }
  if (config.scale_by_dims) {
    auto const scale = static_cast<T>(config.scale_by_dims(cols, rows));
    assign(B::view(cur, flat), B::view(cur, flat) * scale, x);
  }
  return cur;
}

// svd_orthogonalize computed in T itself (the caller widens float).
template <class X, class T>
std::vector<index_t> svd_orthogonalize_in_own_type(X const& x, T const* g, T* out, index_t count,
                                                   index_t rows, index_t cols,
                                                   SvdOrthogonalizationConfig const& config,
                                                   double* norms) {
  using B = exec::Memory<X>;
  index_t const numel = rows * cols;
  bool const tall = rows >= cols;
  index_t const k = tall ? cols : rows;
  auto const matrices = make_layout(make_shape(count, rows, cols));
  auto const transposed =
      make_layout(make_shape(count, cols, rows), make_stride(numel, Int<1>{}, cols));
  auto gram = B::template scratch<T>(x, count * k * k);
  auto root = B::template scratch<T>(x, count * k * k);
  auto info = B::template scratch<int>(x, count);
  auto const square = detail::matrices_layout(count, k);
  if (tall)
    syrk(x, B::view(gram.data(), square), B::view(g, transposed));  // G^T G
  else
    syrk(x, B::view(gram.data(), square), B::view(g, matrices));  // G G^T
  // (Gram)^(-1/2), eigenvalues at or below n eps lambda_max dropped: the rounding of the n-term
  // inner products that form the Gram matrix, and of eigh, is of that order.
  EigenvalueMap const inverse_square_root{
      .root = 2.0,
      .epsilon = 0.0,
      .pseudo_inverse = true,
      .perturb_before_computation = false,
      .rank_atol = 0.0,
      .rank_rtol = static_cast<double>(std::max(rows, cols)) * std::numeric_limits<T>::epsilon()};
  auto const r = B::view(root.data(), square);
  detail::eigen_roots_in(x, gram.data(), count, k, inverse_square_root, r, info.data());
  auto const o = B::view(out, matrices);
  if (tall)
    gemm(x, o, B::view(g, matrices), r);  // G (G^T G)^(-1/2)
  else
    gemm(x, o, r, B::view(g, matrices));  // (G G^T)^(-1/2) G
  auto const flat = make_layout(make_shape(count, numel));
  if (config.scale_by_nuclear_norm) {
    // <G, U V^T> = trace(V S U^T U V^T) = sum(S) over the kept singular values.
    assign(B::view(norms, make_layout(make_shape(count))),
           sum(cast<double>(B::view(g, flat)) * cast<double>(B::view(out, flat)), mode<1>), x);
    auto const per_slot = make_layout(make_shape(count, numel), make_stride(Int<1>{}, Int<0>{}));
    assign(B::view(out, flat), B::view(out, flat) * cast<T>(B::view(norms, per_slot)), x);
  }
  if (config.scale_by_dims) {
    auto const scale = static_cast<T>(config.scale_by_dims(cols, rows));
    assign(B::view(out, flat), B::view(out, flat) * scale, x);
  }
  std::vector<int> verdicts(static_cast<std::size_t>(count));
  B::to_host(x, info.data(), count, verdicts.data());
  B::wait(x);
  std::vector<index_t> failed;
  for (index_t b = 0; b < count; ++b)
    if (verdicts[static_cast<std::size_t>(b)] != 0) failed.push_back(b);
  return failed;
}

// Writes U V^T of each block of g (count blocks of shape (rows, cols), back to back) to out
// (count * rows * cols, distinct from g), multiplied by the nuclear norm and scale_by_dims as
// `config` says (SvdOrthogonalizationConfig has the semantics). norms: count doubles of scratch.
// Returns the slots whose Gram matrix eigh could not decompose (their out is unspecified); reading
// that verdict waits for the executor once.
template <class X, class T>
std::vector<index_t> svd_orthogonalize(X const& x, T const* g, T* out, index_t count, index_t rows,
                                       index_t cols, SvdOrthogonalizationConfig const& config,
                                       double* norms) {
  using B = exec::Memory<X>;
  if (count == 0 || rows == 0 || cols == 0) return {};
  index_t const numel = rows * cols;
  if constexpr (std::is_same_v<T, float>) {  // in double: see above
    auto const flat = make_layout(make_shape(count * numel));
    auto wide = B::template scratch<double>(x, 2 * count * numel);
    double* const gd = wide.data();
    double* const od = gd + count * numel;
    assign(B::view(gd, flat), cast<double>(B::view(g, flat)), x);
    std::vector<index_t> failed = svd_orthogonalize_in_own_type(
        x, static_cast<double const*>(gd), od, count, rows, cols, config, norms);
    assign(B::view(out, flat), cast<float>(B::view(od, flat)), x);
    return failed;
  } else {
    return svd_orthogonalize_in_own_type(x, g, out, count, rows, cols, config, norms);
  }
}

}  // namespace tessel::shampoo::stages
