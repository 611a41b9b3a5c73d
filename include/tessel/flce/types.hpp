// FLCE's element types: the storage types it accepts (f32, f64, f16, bf16), the type its math runs
// in (f32, or f64 for f64 storage), and the reductions.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/float16.hpp"

namespace tessel::flce {

// A storage type FLCE computes on: float, double, tessel::half or tessel::bfloat16.
namespace detail {
template <class T>
inline constexpr bool is_element_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                     std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
}  // namespace detail

template <class T>
concept Element = detail::is_element_v<std::remove_cv_t<T>>;

// A target (class index) type: any signed integer of 32 or 64 bits.
template <class T>
concept TargetElement = std::signed_integral<std::remove_cv_t<T>> &&
    (sizeof(T) == 4 || sizeof(T) == 8);

namespace detail {
template <class T>
struct accum_type {
  using type = float;
};
template <>
struct accum_type<double> {
  using type = double;
};
}  // namespace detail

// The type softmax, exp and log run in and gradients of the weight and bias accumulate in: float
// for f32, f16 and bf16 storage (never a 16-bit accumulator: Liger-Kernel's bf16 accumulation is
// a known cause of divergence), double for f64.
template <Element T>
using accum_t = typename detail::accum_type<std::remove_cv_t<T>>::type;

// Whether 16-bit storage: the cases where the logits gradient is rounded for the GEMMs (CUDA) or
// operands are widened for Eigen (host).
template <Element T>
inline constexpr bool is_narrow_v = sizeof(T) == 2;

enum class Reduction : std::uint8_t { mean, sum, none };

constexpr std::string_view reduction_name(Reduction r) noexcept {
  switch (r) {
    case Reduction::mean:
      return "mean";
    case Reduction::sum:
      return "sum";
    case Reduction::none:
      return "none";
  }
  return {};
}

// "mean", "sum" or "none" (PyTorch's spellings); tessel::Error otherwise.
inline Reduction parse_reduction(std::string_view name) {
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none})
    if (name == reduction_name(r)) return r;
  tessel::detail::throw_error(tessel::detail::sentence(
      "unknown reduction \"", name, "\"; valid reductions are mean, sum and none."));
}

}  // namespace tessel::flce
