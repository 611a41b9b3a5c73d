// Scalar math usable on the host and in CUDA device code: the per-element functions expressions
// and kernel bodies are built from. NaN handling follows PyTorch: max / min propagate NaN.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "../core/config.hpp"

namespace tessel::math {

template <class T>
TESSEL_HOST_DEVICE constexpr bool isnan(T x) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

// Neither infinite nor NaN (every integer is finite).
template <class T>
TESSEL_HOST_DEVICE constexpr bool isfinite(T x) noexcept {
  if constexpr (std::is_floating_point_v<T>) {
    return x - x == T(0);
  } else {
    return true;
  }
}

template <class T>
TESSEL_HOST_DEVICE constexpr T infinity() noexcept {
  return std::numeric_limits<T>::infinity();
}

// The larger of a and b; NaN when either is NaN.
template <class T>
TESSEL_HOST_DEVICE constexpr T max(T a, T b) noexcept {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return a < b ? b : a;
}

// The smaller of a and b; NaN when either is NaN.
template <class T>
TESSEL_HOST_DEVICE constexpr T min(T a, T b) noexcept {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return b < a ? b : a;
}

template <class T>
TESSEL_HOST_DEVICE constexpr T abs(T x) noexcept {
  if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) {
    return x;
  } else if constexpr (std::is_floating_point_v<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    // The sign bit cleared: abs(-0) is +0, NaN stays NaN, and no branch (a branch on the sign
    // mispredicts half the time on data of random sign, e.g. an L1 norm of weights).
    using U = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    return std::bit_cast<T>(static_cast<U>(std::bit_cast<U>(x) & ~(U{1} << (sizeof(U) * 8 - 1))));
  } else if constexpr (std::is_floating_point_v<T>) {
    return x < T(0) ? -x : (x == T(0) ? T(0) : x);  // abs(-0) is +0; NaN stays NaN
  } else {
    return x < T(0) ? static_cast<T>(-x) : x;
  }
}

// a * b rounded to T before anything else uses it: never fused into a later addition. A formula
// written with it has the same bits in every copy the compiler makes of it (a static and a
// run-time extent, a plain and a vocabulary-parallel FLCE pass), where contraction into FMAs,
// GCC's default on a target that has them, may differ from copy to copy. Other types than float
// and double (integers) are multiplied as they are.
template <class T>
TESSEL_HOST_DEVICE TESSEL_FORCEINLINE T rounded_product(T a, T b) noexcept {
#if TESSEL_DEVICE_PASS
  if constexpr (std::is_same_v<T, float>)
    return __fmul_rn(a, b);
  else if constexpr (std::is_same_v<T, double>)
    return __dmul_rn(a, b);
  else
    return a * b;
#else
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
#if TESSEL_HAS_ASSOC_BARRIER
    return __builtin_assoc_barrier(a * b);
#else
    T product = a * b;
    TESSEL_OPTIMIZATION_BARRIER(product);
    return product;
#endif
  } else {
    return a * b;
  }
#endif
}

// exp, log, tanh, sqrt, pow of float and double. The C functions are what CUDA provides in device
// code; the host uses the <cmath> overloads.
#if TESSEL_DEVICE_PASS
TESSEL_HOST_DEVICE inline float exp(float x) {
  return ::expf(x);
}
TESSEL_HOST_DEVICE inline double exp(double x) {
  return ::exp(x);
}
TESSEL_HOST_DEVICE inline float log(float x) {
  return ::logf(x);
}
TESSEL_HOST_DEVICE inline double log(double x) {
  return ::log(x);
}
TESSEL_HOST_DEVICE inline float tanh(float x) {
  return ::tanhf(x);
}
TESSEL_HOST_DEVICE inline double tanh(double x) {
  return ::tanh(x);
}
TESSEL_HOST_DEVICE inline float sqrt(float x) {
  return ::sqrtf(x);
}
TESSEL_HOST_DEVICE inline double sqrt(double x) {
  return ::sqrt(x);
}
TESSEL_HOST_DEVICE inline float pow(float x, float p) {
  return ::powf(x, p);
}
TESSEL_HOST_DEVICE inline double pow(double x, double p) {
  return ::pow(x, p);
}
#else
TESSEL_HOST_DEVICE inline float exp(float x) {
  return std::exp(x);
}
TESSEL_HOST_DEVICE inline double exp(double x) {
  return std::exp(x);
}
TESSEL_HOST_DEVICE inline float log(float x) {
  return std::log(x);
}
TESSEL_HOST_DEVICE inline double log(double x) {
  return std::log(x);
}
TESSEL_HOST_DEVICE inline float tanh(float x) {
  return std::tanh(x);
}
TESSEL_HOST_DEVICE inline double tanh(double x) {
  return std::tanh(x);
}
TESSEL_HOST_DEVICE inline float sqrt(float x) {
  return std::sqrt(x);
}
TESSEL_HOST_DEVICE inline double sqrt(double x) {
  return std::sqrt(x);
}
TESSEL_HOST_DEVICE inline float pow(float x, float p) {
  return std::pow(x, p);
}
TESSEL_HOST_DEVICE inline double pow(double x, double p) {
  return std::pow(x, p);
}
#endif

}  // namespace tessel::math
