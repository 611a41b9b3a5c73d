// tessel's float exp on the host, as numbers: the reduction, the polynomial and the range. The
// host packets (exec/host/packet.hpp, at the width the build's flags give) and the run-time-chosen
// row kernel (kernels/wide_exp.cpp, AVX-512 or AVX2 intrinsics) compute the same function from these.
//
//   exp(x) = 2^k exp(f),  k = round(x log2 e),  f = x - k ln 2 in [-ln2/2, ln2/2],
//
// exp(f) by its Taylor polynomial of degree 7 (truncation below 6e-9 relative there, under a tenth
// of an ulp; the rest is the Horner steps' rounding: within an ulp, with or without fused
// multiply-adds, tests/exec/packet_test.cpp), and 2^k added to the result's exponent bits. ln 2 is
// split into a part with a short mantissa, so that k ln2_hi is exact for every k that occurs, and
// the remainder.
//
// Only normal results are computed: 0 below smallest_argument (the exact result is subnormal,
// under FLT_MIN ~ 1.2e-38), +inf above largest_argument, NaN for NaN. Eigen's generic pexp costs
// about 1.5x the instructions, many of them in a general ldexp that keeps subnormal results.
#pragma once

namespace tessel::exec::detail::exp_float {

inline constexpr float log2e = 1.44269504088896341f;
inline constexpr float ln2_hi = 0.693145751953125f;
inline constexpr float ln2_lo = 1.42860682030941723e-6f;

// Coefficients from the highest degree down, for Horner's rule.
inline constexpr float taylor[] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24,
                                   1.0f / 6,    0.5f,       1.0f,       1.0f};

// 1.5 * 2^23: x log2e + round_shift holds round(x log2e) in its low mantissa bits (for
// |x log2e| < 2^22), so k comes from one fused multiply-add and its bits shift straight into an
// exponent.
inline constexpr float round_shift = 12582912.0f;

// The least float whose exp is normal: its k is -126 and its f >= 0. Below ln(FLT_MIN) =
// -87.3365447... the result is 0.
inline constexpr float smallest_argument = -87.33654022216797f;

// The greatest float whose exp is finite (ln(FLT_MAX) = 88.7228391...): its k is 128 and its
// f < 0, so exp(f) < 1 keeps 2^k exp(f) within the exponent field. Above it the result is +inf.
inline constexpr float largest_argument = 88.72283172607422f;

}  // namespace tessel::exec::detail::exp_float
