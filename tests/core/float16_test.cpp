// half and bfloat16: exact widening to float, round-to-nearest-even narrowing, checked
// exhaustively over every 16-bit pattern and every rounding boundary.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <tessel/core/float16.hpp>

namespace {

using tessel::bfloat16;
using tessel::half;

// Layout: interchangeable with CUDA's __half / __nv_bfloat16 and with raw uint16_t buffers.
static_assert(sizeof(half) == 2 && alignof(half) == 2);
static_assert(std::is_trivially_copyable_v<half> && std::is_standard_layout_v<half>);
static_assert(std::is_trivially_copyable_v<bfloat16> && std::is_standard_layout_v<bfloat16>);
static_assert(std::bit_cast<std::uint16_t>(half(1.0f)) == 0x3c00);
// Conversions go one way only explicitly: no silent float arithmetic on storage types.
static_assert(!std::is_convertible_v<float, half> && !std::is_convertible_v<half, float>);
static_assert(!std::is_convertible_v<float, bfloat16> && !std::is_convertible_v<bfloat16, float>);

// Everything is constexpr.
static_assert(half(1.0f).bits == 0x3c00);
static_assert(half(-2.0f).bits == 0xc000);
static_assert(half(65504.0f).bits == 0x7bff);
static_assert(half(-0.0f).bits == 0x8000);
static_assert(static_cast<float>(half::from_bits(0x3555)) == 0x1.554p-2f);
static_assert(static_cast<float>(half::from_bits(0x0001)) == 0x1p-24f);
static_assert(bfloat16(1.0f).bits == 0x3f80);
static_assert(bfloat16(-0.0f).bits == 0x8000);
static_assert(static_cast<float>(bfloat16::from_bits(0x4049)) == 3.140625f);

// Ties round to even; anything past the tie rounds away.
static_assert(half(1.0f + 0x1p-11f).bits == 0x3c00);      // tie, 0x3c00 is even
static_assert(half(1.0f + 3 * 0x1p-11f).bits == 0x3c02);  // tie, 0x3c01 is odd: up
static_assert(half(1.0f + 0x1p-11f + 0x1p-23f).bits == 0x3c01);
static_assert(bfloat16(1.0f + 0x1p-8f).bits == 0x3f80);      // tie to even
static_assert(bfloat16(1.0f + 3 * 0x1p-8f).bits == 0x3f82);  // tie to even, up
// Subnormals: the smallest half is 2^-24; 2^-25 is a tie with zero, which is even.
static_assert(half(0x1p-24f).bits == 0x0001);
static_assert(half(0x1p-25f).bits == 0x0000);
static_assert(half(0x1.000002p-25f).bits == 0x0001);
static_assert(half(3 * 0x1p-25f).bits == 0x0002);  // 1.5 ulp: tie between 1 and 2, even
static_assert(half(0x1.ff8p-15f).bits == 0x03ff);  // largest subnormal
static_assert(half(0x1.ffcp-15f).bits == 0x0400);  // rounds up into the smallest normal
static_assert(half(-0x1p-24f).bits == 0x8001);
static_assert(half(std::numeric_limits<float>::denorm_min()).bits == 0x0000);
// Overflow: 65520 is the tie between 65504 (odd) and 65536, so it and everything above is inf.
static_assert(half(65519.996f).bits == 0x7bff);
static_assert(half(65520.0f).bits == 0x7c00);
static_assert(half(-1e10f).bits == 0xfc00);
static_assert(half(std::numeric_limits<float>::infinity()).bits == 0x7c00);
static_assert(bfloat16(std::numeric_limits<float>::max()).bits == 0x7f80);
static_assert(bfloat16(-std::numeric_limits<float>::infinity()).bits == 0xff80);
// NaN stays NaN: the quiet NaN maps to the quiet NaN, a payload only in the low bits (which
// would truncate to an infinity) becomes quiet, and the sign is kept.
static_assert(half(std::bit_cast<float>(0x7fc00000u)).bits == 0x7e00);
static_assert(half(std::bit_cast<float>(0x7f800001u)).bits == 0x7e00);
static_assert(half(std::bit_cast<float>(0xff802000u)).bits == 0xfc01);
static_assert(bfloat16(std::bit_cast<float>(0x7f800001u)).bits == 0x7fc0);
static_assert(bfloat16(std::bit_cast<float>(0xffc00000u)).bits == 0xffc0);

// binary16 value of bits h, computed from the definition rather than by bit manipulation.
double half_reference(std::uint16_t h) {
  int const sign = h >> 15;
  int const exponent = (h >> 10) & 0x1f;
  int const mantissa = h & 0x3ff;
  double const magnitude =
      exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return sign ? -magnitude : magnitude;
}

double bfloat16_reference(std::uint16_t b) {
  int const sign = b >> 15;
  int const exponent = (b >> 7) & 0xff;
  int const mantissa = b & 0x7f;
  double const magnitude =
      exponent == 0 ? std::ldexp(mantissa, -133) : std::ldexp(128 + mantissa, exponent - 134);
  return sign ? -magnitude : magnitude;
}

TEST(Half, EveryBitPatternWidensExactlyAndNarrowsBackToItself) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto const h = static_cast<std::uint16_t>(bits);
    float const f = static_cast<float>(half::from_bits(h));
    bool const nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    bool const inf = (h & 0x7fff) == 0x7c00;
    if (nan) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << bits;
    } else if (inf) {
      ASSERT_EQ(f, (h & 0x8000) ? -INFINITY : INFINITY) << std::hex << bits;
    } else {
      ASSERT_EQ(static_cast<double>(f), half_reference(h)) << std::hex << bits;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << bits;
    }
    ASSERT_EQ(half(f).bits, h) << std::hex << bits;
  }
}

TEST(BFloat16, EveryBitPatternWidensExactlyAndNarrowsBackToItself) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    auto const b = static_cast<std::uint16_t>(bits);
    float const f = static_cast<float>(bfloat16::from_bits(b));
    bool const nan = (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
    bool const inf = (b & 0x7fff) == 0x7f80;
    if (nan) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << bits;
    } else if (inf) {
      ASSERT_EQ(f, (b & 0x8000) ? -INFINITY : INFINITY) << std::hex << bits;
    } else {
      ASSERT_EQ(static_cast<double>(f), bfloat16_reference(b)) << std::hex << bits;
      ASSERT_EQ(std::signbit(f), (b & 0x8000) != 0) << std::hex << bits;
    }
    ASSERT_EQ(bfloat16(f).bits, b) << std::hex << bits;
  }
}

// For every pair of neighbours (lo, lo + 1) among the non-negative finite values (and the
// largest finite value with the next power of two, which stands for infinity), the floats at,
// just below and just above their midpoint round to the right side; the midpoint itself goes
// to the even one. Together with the round trip above this pins down every rounding decision.
template <class T>
void check_rounding_at_every_midpoint(std::uint16_t largest_finite, double (*value)(std::uint16_t),
                                      double beyond_largest) {
  for (std::uint32_t lo = 0; lo <= largest_finite; ++lo) {
    auto const lo16 = static_cast<std::uint16_t>(lo);
    auto const hi16 = static_cast<std::uint16_t>(lo + 1);
    double const hi_value = lo == largest_finite ? beyond_largest : value(hi16);
    // The midpoint needs one more bit than T has, which float has to spare: exact.
    float const mid = static_cast<float>((value(lo16) + hi_value) / 2);
    ASSERT_EQ(static_cast<double>(mid), (value(lo16) + hi_value) / 2);
    std::uint16_t const even = (lo & 1) ? hi16 : lo16;
    float const below = std::nextafter(mid, 0.0f);
    float const above = std::nextafter(mid, INFINITY);
    for (std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000}}) {
      float const s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(T(s * mid).bits, even | sign) << std::hex << lo;
      ASSERT_EQ(T(s * below).bits, lo16 | sign) << std::hex << lo;
      ASSERT_EQ(T(s * above).bits, hi16 | sign) << std::hex << lo;
    }
  }
}

TEST(Half, RoundsToNearestEvenAtEveryMidpoint) {
  check_rounding_at_every_midpoint<half>(0x7bff, half_reference, 65536.0);
}

TEST(BFloat16, RoundsToNearestEvenAtEveryMidpoint) {
  check_rounding_at_every_midpoint<bfloat16>(0x7f7f, bfloat16_reference, std::ldexp(1.0, 128));
}

#if defined(__FLT16_MAX__)
// An independent implementation: the compiler's own float -> _Float16 conversion (IEEE
// round-to-nearest-even), over a spread of float bit patterns covering every exponent.
TEST(Half, AgreesWithTheCompilersFloat16OnASampleOfAllFloats) {
  for (std::uint64_t i = 0; i <= 0xffffffffu; i += 4099) {
    float const f = std::bit_cast<float>(static_cast<std::uint32_t>(i));
    if (std::isnan(f)) continue;
    _Float16 const reference = static_cast<_Float16>(f);
    ASSERT_EQ(half(f).bits, std::bit_cast<std::uint16_t>(reference)) << std::hex << i;
  }
}
#endif

}  // namespace
