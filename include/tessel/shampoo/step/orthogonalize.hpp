// Spectral descent's direction (Muon): each 2-D block's gradient G (rows, cols) replaced by an
// approximation of U V^T (G = U S V^T, the reduced SVD), from the quintic Newton-Schulz iteration
//   X0 = G / max(||G||_F, 1e-8),   X <- a X + b (X X^T) X + c (X X^T)^2 X.
// The iteration runs on the smaller Gram matrix: for a tall block (rows >= cols) it is
// X <- X (a I + b M + c M^2) with M = X^T X (cols, cols), for a wide one (a I + b M + c M^2) X with
// M = X X^T (rows, rows); both are the same polynomial of X. Per iteration: one batched syrk and
// two batched gemms over the group's slots, on the executor (BLAS on the host, cuBLAS on a GPU).
#pragma once

#include <algorithm>

#include "../../core/layout.hpp"
#include "../../exec/dense.hpp"
#include "../../exec/memory.hpp"
#include "../../expr/cast.hpp"
#include "../../expr/math.hpp"
#include "../../expr/minmax.hpp"
#include "../../expr/reduce.hpp"
#include "../options.hpp"

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

}  // namespace tessel::shampoo::stages
