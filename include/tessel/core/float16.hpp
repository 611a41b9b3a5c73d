// tessel::half and tessel::bfloat16: 2-byte storage types for IEEE binary16 and bfloat16 values.
// They only hold bits and convert to and from float (tessel computes in f32); their layout is a
// single std::uint16_t, the same as CUDA's __half and __nv_bfloat16, so buffers of them can be
// handed to CUDA code as those types.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "config.hpp"

namespace tessel {

namespace detail {

// Round-to-nearest-even float -> binary16 bits; magnitudes from 65520 up become infinity.
// A NaN keeps its sign and the top ten bits of its payload (NumPy's rule), so that
// binary16 -> float -> binary16 is the identity on all 65536 patterns; a payload that would
// truncate to zero becomes the quiet bit, so a NaN never turns into an infinity.
TESSEL_HOST_DEVICE constexpr std::uint16_t float_to_half_bits(float f) noexcept {
  std::uint32_t const x = std::bit_cast<std::uint32_t>(f);
  std::uint32_t const sign = (x >> 16) & 0x8000u;
  std::uint32_t const a = x & 0x7fffffffu;
  if (a > 0x7f800000u) {
    std::uint32_t const payload = (a >> 13) & 0x3ffu;
    return static_cast<std::uint16_t>(sign | 0x7c00u | (payload != 0 ? payload : 0x200u));
  }
  // 65520 is halfway between 65504 (the largest half, odd mantissa) and 65536: ties go up.
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {  // |f| >= 2^-14: a normal half. Rebias the exponent (127 -> 15).
    std::uint32_t h = (a - 0x38000000u) >> 13;
    std::uint32_t const rest = a & 0x1fffu;
    // A carry out of the mantissa correctly bumps the exponent.
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  // A subnormal half m * 2^-24 (or zero): m = round(|f| * 2^24). Below 2^-25 everything rounds
  // to zero, float subnormals included.
  std::uint32_t const exponent = a >> 23;
  if (exponent < 102) return static_cast<std::uint16_t>(sign);
  std::uint32_t const mantissa = (a & 0x7fffffu) | 0x800000u;
  std::uint32_t const shift = 126 - exponent;  // in [14, 24]
  std::uint32_t m = mantissa >> shift;
  std::uint32_t const rest = mantissa & ((1u << shift) - 1);
  std::uint32_t const halfway = 1u << (shift - 1);
  // Rounding 0x3ff up gives 0x400, the smallest normal half: the encoding carries over.
  if (rest > halfway || (rest == halfway && (m & 1u) != 0)) ++m;
  return static_cast<std::uint16_t>(sign | m);
}

// Exact binary16 bits -> float (every half is a float); NaN payloads are kept.
TESSEL_HOST_DEVICE constexpr float half_bits_to_float(std::uint16_t h) noexcept {
  std::uint32_t const sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t const exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t bits = 0;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal m * 2^-24: shift the leading one into the implicit bit (a loop rather than
    // std::countl_zero, so device code needs no builtins).
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// Round-to-nearest-even float -> bfloat16 bits. bfloat16 has float's exponent range, so only
// values within half an ulp of the largest bfloat16 or beyond round to infinity. NaNs follow
// the same rule as float_to_half_bits.
TESSEL_HOST_DEVICE constexpr std::uint16_t float_to_bfloat16_bits(float f) noexcept {
  std::uint32_t const x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    std::uint32_t const top = x >> 16;
    return static_cast<std::uint16_t>((top & 0x7fu) != 0 ? top : top | 0x40u);
  }
  // Adding 0x7fff (+1 when the kept part is odd) carries into bit 16 exactly when the dropped
  // half is above the tie, or at the tie with an odd kept part. Cannot wrap: x <= 0xff800000.
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

TESSEL_HOST_DEVICE constexpr float bfloat16_bits_to_float(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

}  // namespace detail

// IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits. Storage only: convert to float to
// compute.
struct half {
  std::uint16_t bits;

  half() = default;
  // Rounds to nearest even; overflows to infinity; NaN stays NaN.
  TESSEL_HOST_DEVICE constexpr explicit half(float f) noexcept
      : bits(detail::float_to_half_bits(f)) {}
  // Exact.
  TESSEL_HOST_DEVICE constexpr explicit operator float() const noexcept {
    return detail::half_bits_to_float(bits);
  }
  TESSEL_HOST_DEVICE static constexpr half from_bits(std::uint16_t b) noexcept {
    half h{};
    h.bits = b;
    return h;
  }
};

// bfloat16: 1 sign, 8 exponent, 7 mantissa bits — the top half of a float. Storage only.
struct bfloat16 {
  std::uint16_t bits;

  bfloat16() = default;
  // Rounds to nearest even; NaN stays NaN.
  TESSEL_HOST_DEVICE constexpr explicit bfloat16(float f) noexcept
      : bits(detail::float_to_bfloat16_bits(f)) {}
  // Exact.
  TESSEL_HOST_DEVICE constexpr explicit operator float() const noexcept {
    return detail::bfloat16_bits_to_float(bits);
  }
  TESSEL_HOST_DEVICE static constexpr bfloat16 from_bits(std::uint16_t b) noexcept {
    bfloat16 h{};
    h.bits = b;
    return h;
  }
};

// What makes them interchangeable with __half / __nv_bfloat16 buffers and memcpy-able.
static_assert(sizeof(half) == 2 && alignof(half) == 2);
static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2);
static_assert(std::is_trivially_copyable_v<half> && std::is_standard_layout_v<half>);
static_assert(std::is_trivially_copyable_v<bfloat16> && std::is_standard_layout_v<bfloat16>);

}  // namespace tessel
