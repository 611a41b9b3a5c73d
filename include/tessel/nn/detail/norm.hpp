// The calls shared by LayerNorm and RMSNorm (nn/layer_norm.hpp, nn/rms_norm.hpp): the checks, the
// row pass (detail/norm_rows.hpp through exec::for_each_row, found by argument-dependent lookup so
// that the CUDA overload serves exec::Cuda) and the parameter gradients as expressions through the
// executor: dweight = sum over rows of dy xhat, dbias = sum over rows of dy, each output column
// reduced in row order by one thread (the same bits whatever the executor's thread count).
#pragma once

#include <type_traits>

#include "../../core/error.hpp"
#include "../../core/int.hpp"
#include "../../core/int_tuple.hpp"
#include "../../core/layout.hpp"
#include "../../exec/executors.hpp"
#include "../../exec/host.hpp"
#include "../../exec/rows.hpp"
#include "../../expr/arithmetic.hpp"
#include "../../expr/assign.hpp"
#include "../../expr/element.hpp"
#include "../../expr/reduce.hpp"
#include "../../tensor/tensor.hpp"
#include "../../tensor/views.hpp"
#include "checks.hpp"
#include "norm_rows.hpp"

namespace tessel::nn::detail {

// The compute type of a norm over elements of T (float for half and bfloat16, as PyTorch's
// accumulate type).
template <TensorType X>
using norm_compute_t = compute_t<typename std::remove_cvref_t<X>::value_type>;

template <TensorType X>
constexpr void check_rows_tensor() {
  static_assert(rank_of<X> == 2,
                "tessel: a norm takes x as a rank-2 (rows, features) tensor; reshape a (B, T, C) "
                "tensor to (B*T, C) first (reshape(x, make_shape(B * T, C)) is a view).");
}

// The (N, D) view of a per-row vector v (N): element (r, i) is v(r), a stride-0 second mode.
template <TensorType V, IntTuple S>
auto per_row(V const& v, S const& rows_shape) {
  return view_as(v.view(), make_layout(rows_shape, make_stride(get<0>(v.stride()), Int<0>{})));
}

// The checks of a forward call, before anything is written.
template <bool Centered, class X, class Y, class W, class B, class M, class R>
void check_forward(char const* kernel, X const& x, Y const& y, W const& weight, B const& bias,
                   M const& mean, R const& rstd) {
  check_same_shape(kernel, "y", y, "x", x);
  auto const features = make_shape(get<1>(x.shape()));
  auto const rows = make_shape(get<0>(x.shape()));
  check_shape(kernel, "weight", weight, "x", x, features);
  if constexpr (Centered) {
    check_shape(kernel, "bias", bias, "x", x, features);
    check_shape(kernel, "mean", mean, "x", x, rows);
  }
  check_shape(kernel, "rstd", rstd, "x", x, rows);
}

// t's view, or Absent for an absent tensor (RMSNorm's bias and mean).
template <class T>
auto view_or_absent(T const& t) {
  if constexpr (std::is_same_v<T, Absent>)
    return Absent{};
  else
    return t.view();
}

// y (and the saved mean, rstd) of x; bias and mean are Absent for RMSNorm.
template <bool Centered, exec::Executor Ex, class X, class Y, class W, class B, class M, class R>
void norm_forward(Ex const& executor, char const* kernel, X const& x, Y const& y, W const& weight,
                  B const& bias, M const& mean, R const& rstd, double eps) {
  check_rows_tensor<X>();
  check_spaces<Ex, X, Y, W, R>();
  check_writable<Y, R>();
  check_forward<Centered>(kernel, x, y, weight, bias, mean, rstd);
  using C = norm_compute_t<X>;
  using Body = NormForwardRows<Centered, C, decltype(x.view()), decltype(y.view()),
                               decltype(weight.view()), decltype(view_or_absent(bias)),
                               decltype(view_or_absent(mean)), decltype(rstd.view())>;
  Body const body{
      x.view(),    y.view(),           weight.view(), view_or_absent(bias), view_or_absent(mean),
      rstd.view(), static_cast<C>(eps)};
  for_each_row(executor, to_index(get<0>(x.shape())), to_index(get<1>(x.shape())), body);
}

// dx, dweight (and dbias) from dy, x and the saved statistics.
template <bool Centered, exec::Executor Ex, class DX, class DW, class DB, class DY, class X,
          class W, class M, class R>
void norm_backward(Ex const& executor, char const* kernel, DX const& dx, DW const& dweight,
                   DB const& dbias, DY const& dy, X const& x, W const& weight, M const& mean,
                   R const& rstd) {
  check_rows_tensor<X>();
  check_spaces<Ex, DX, DW, DY, X, W, R>();
  check_writable<DX, DW>();
  check_same_shape(kernel, "dy", dy, "x", x);
  check_same_shape(kernel, "dx", dx, "x", x);
  auto const features = make_shape(get<1>(x.shape()));
  auto const rows = make_shape(get<0>(x.shape()));
  check_shape(kernel, "weight", weight, "x", x, features);
  check_shape(kernel, "dweight", dweight, "x", x, features);
  if constexpr (Centered) {
    check_shape(kernel, "dbias", dbias, "x", x, features);
    check_shape(kernel, "mean", mean, "x", x, rows);
  }
  check_shape(kernel, "rstd", rstd, "x", x, rows);

  // The parameter gradients first: dx may overwrite dy (an in-place backward).
  auto const rstd_b = per_row(rstd, x.shape());
  if constexpr (Centered) {
    auto const xhat = (x.view() - per_row(mean, x.shape())) * rstd_b;
    assign(dweight.view(), sum(dy.view() * xhat, mode<0>), executor);
    assign(dbias.view(), sum(dy.view(), mode<0>), executor);
  } else {
    assign(dweight.view(), sum(dy.view() * (x.view() * rstd_b), mode<0>), executor);
  }

  using C = norm_compute_t<X>;
  using Body = NormBackwardRows<Centered, C, decltype(dx.view()), decltype(dy.view()),
                                decltype(x.view()), decltype(weight.view()),
                                decltype(view_or_absent(mean)), decltype(rstd.view())>;
  Body const body{dx.view(), dy.view(), x.view(), weight.view(), view_or_absent(mean), rstd.view()};
  for_each_row(executor, to_index(get<0>(x.shape())), to_index(get<1>(x.shape())), body);
}

}  // namespace tessel::nn::detail
