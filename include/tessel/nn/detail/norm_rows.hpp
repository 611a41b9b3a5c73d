// The row bodies of LayerNorm and RMSNorm, written once over an execution context (exec's row
// reduction with a fused epilogue, exec/body/row.hpp): the host runs them one lane per row through
// exec::for_each_row, the CUDA executor one thread block per row (exec/cuda/rows.cuh). The two
// norms differ only in whether a row is centred first, a compile-time choice (Centered), so each
// formula below exists once.
//
// Per row x of D elements, with weight w and bias b (LayerNorm only):
//   mu   = sum_i x_i / D                         (LayerNorm; 0 for RMSNorm)
//   rstd = 1 / sqrt(sum_i (x_i - mu)^2 / D + eps)  (biased variance, or the mean square)
//   xhat = (x - mu) rstd,   y = xhat w + b
// Backward, with g = dy w (per element) and means over the row:
//   dx = rstd (g - mean(g) - xhat mean(g xhat))    (LayerNorm)
//   dx = rstd (g - xhat mean(g xhat))              (RMSNorm: mu = 0 and no mean(g) term)
// The statistics are two reductions over the row (the mean, then the centred squares), not the
// one-pass sum of squares, whose cancellation loses every digit of a row far from zero; the
// second pass reads a row the first has just brought into cache (L1 on the host, registers or L1
// on the GPU).
#pragma once

#include "../../core/config.hpp"
#include "../../core/int.hpp"
#include "../../core/int_tuple.hpp"
#include "../../exec/body/reduce_ops.hpp"
#include "../../exec/body/row.hpp"
#include "../../expr/element.hpp"
#include "../../expr/scalar_math.hpp"

namespace tessel::nn::detail {

// A tensor a kernel does not have (RMSNorm's bias and saved mean).
struct Absent {};

template <class T>
TESSEL_HOST_DEVICE constexpr auto load(T const& v) {
  return load_element(v);
}

// y, mean (LayerNorm) and rstd of rows of x. XV..RV are tensor views (host or device) of shapes
// (N, D), (N, D), (D), (D), (N), (N); C is the compute type.
template <bool Centered, class C, class XV, class YV, class WV, class BV, class MV, class RV>
struct NormForwardRows {
  XV x;
  YV y;
  WV weight;
  [[no_unique_address]] BV bias;
  [[no_unique_address]] MV mean;
  RV rstd;
  C eps;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t r) const {
    auto const n = get<1>(x.shape());  // D: static when x's shape is
    C const inv_n = C(1) / static_cast<C>(to_index(n));
    auto const xr = [&](index_t i) { return static_cast<C>(load(x(r, i))); };
    C mu = C(0);
    if constexpr (Centered) mu = exec::row_reduction(ctx, exec::SumOp<C>{}, xr, n) * inv_n;
    auto const centred_square = [&](index_t i) {
      C const d = xr(i) - mu;
      return d * d;
    };
    exec::row_reduce_epilogue_body(ctx, exec::SumOp<C>{}, centred_square, n, [&](C squares) {
      C const rs = C(1) / math::sqrt(squares * inv_n + eps);
      if (to_index(ctx.lane()) == 0) {
        if constexpr (Centered) mean(r) = store_element<typename MV::element_type>(mu);
        rstd(r) = store_element<typename RV::element_type>(rs);
      }
      return [&, rs](index_t i) {
        C v = (xr(i) - mu) * rs * static_cast<C>(load(weight(i)));
        if constexpr (Centered) v += static_cast<C>(load(bias(i)));
        y(r, i) = store_element<typename YV::element_type>(v);
      };
    });
  }
};

// dx of rows of x from dy and the saved statistics (mean: LayerNorm only).
template <bool Centered, class C, class DXV, class DYV, class XV, class WV, class MV, class RV>
struct NormBackwardRows {
  DXV dx;
  DYV dy;
  XV x;
  WV weight;
  [[no_unique_address]] MV mean;
  RV rstd;

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t r) const {
    auto const n = get<1>(x.shape());
    C const inv_n = C(1) / static_cast<C>(to_index(n));
    C mu = C(0);
    if constexpr (Centered) mu = static_cast<C>(load(mean(r)));
    C const rs = static_cast<C>(load(rstd(r)));
    auto const g = [&](index_t i) {
      return static_cast<C>(load(dy(r, i))) * static_cast<C>(load(weight(i)));
    };
    auto const xhat = [&](index_t i) { return (static_cast<C>(load(x(r, i))) - mu) * rs; };
    using Out = typename DXV::element_type;
    if constexpr (Centered) {
      auto const terms = [&](index_t i) {
        C const gi = g(i);
        return exec::Pair<C, C>{gi, gi * xhat(i)};
      };
      using Op = exec::PairOp<exec::SumOp<C>, exec::SumOp<C>>;
      exec::row_reduce_epilogue_body(ctx, Op{}, terms, n, [&](exec::Pair<C, C> s) {
        C const mean_g = s.first * inv_n, mean_gx = s.second * inv_n;
        return [&, mean_g, mean_gx](index_t i) {
          dx(r, i) = store_element<Out>(rs * (g(i) - mean_g - xhat(i) * mean_gx));
        };
      });
    } else {
      auto const term = [&](index_t i) { return g(i) * xhat(i); };
      exec::row_reduce_epilogue_body(ctx, exec::SumOp<C>{}, term, n, [&](C s) {
        C const mean_gx = s * inv_n;
        return [&, mean_gx](index_t i) {
          dx(r, i) = store_element<Out>(rs * (g(i) - xhat(i) * mean_gx));
        };
      });
    }
  }
};

}  // namespace tessel::nn::detail
