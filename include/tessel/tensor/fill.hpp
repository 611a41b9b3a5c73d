// fill_uniform and fill_normal: PyTorch's nn.init.uniform_ / normal_ for host tensors. Elements
// are drawn from the caller's generator in logical row-major order (the order of t[i]), so one
// seed gives the same values whatever the layout; f16 and bf16 elements are drawn in float and
// rounded to nearest.
#pragma once

#include <cmath>
#include <random>
#include <type_traits>

#include "../core/error.hpp"
#include "tensor.hpp"

namespace tessel {

namespace detail {

template <class T>
constexpr void check_fillable() {
  using Tn = std::remove_cvref_t<T>;
  using V = typename Tn::value_type;
  static_assert(std::is_same_v<typename Tn::space, HostSpace>,
                "tessel: fill_uniform and fill_normal write host tensors; fill a host tensor and "
                "copy it to the device.");
  static_assert(!std::is_const_v<typename Tn::element_type>,
                "tessel: cannot fill a tensor of const elements.");
  static_assert(
      std::is_floating_point_v<V> || std::is_same_v<V, half> || std::is_same_v<V, bfloat16>,
      "tessel: fill_uniform and fill_normal fill floating-point tensors (f16, bf16, f32, "
      "f64).");
}

template <class T, class Draw>
void fill_with(T const& t, Draw&& draw) {
  using V = typename std::remove_cvref_t<T>::value_type;
  index_t const n = to_index(size(t.layout()));
  for (index_t i = 0; i < n; ++i) {
    double const x = draw();
    if constexpr (std::is_same_v<V, double>)
      t[i] = x;
    else
      t[i] = V(static_cast<float>(x));
  }
}

}  // namespace detail

// Every element of t drawn uniformly from [lo, hi).
// @pre lo <= hi, both finite (tessel::Error otherwise, before anything is written)
template <TensorType T, std::uniform_random_bit_generator G>
void fill_uniform(T&& t, G& rng, double lo = 0.0, double hi = 1.0) {
  detail::check_fillable<T>();
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo <= hi))
    detail::throw_error(detail::sentence("fill_uniform needs finite bounds with lo <= hi, got lo ",
                                         lo, " and hi ", hi, "."));
  std::uniform_real_distribution<double> dist(lo, hi);
  detail::fill_with(t, [&] { return dist(rng); });
}

// Every element of t drawn from the normal distribution N(mean, stddev^2).
// @pre mean finite, stddev finite and >= 0 (tessel::Error otherwise, before anything is written)
template <TensorType T, std::uniform_random_bit_generator G>
void fill_normal(T&& t, G& rng, double mean = 0.0, double stddev = 1.0) {
  detail::check_fillable<T>();
  if (!(std::isfinite(mean) && std::isfinite(stddev) && stddev >= 0.0))
    detail::throw_error(
        detail::sentence("fill_normal needs a finite mean and a finite stddev >= "
                         "0, got mean ",
                         mean, " and stddev ", stddev, "."));
  if (stddev == 0.0) {  // std::normal_distribution requires stddev > 0
    detail::fill_with(t, [&] { return mean; });
    return;
  }
  std::normal_distribution<double> dist(mean, stddev);
  detail::fill_with(t, [&] { return dist(rng); });
}

}  // namespace tessel
