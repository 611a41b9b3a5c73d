// The host's one-exp softmax row (exec::exp_shifted_in_place) in the CPU's widest vectors, chosen
// when the program runs. tessel's host packets are Eigen's, whose width the compiler flags fix: a
// build without -march runs SSE2 packets even on an AVX-512 CPU, and FLCE's row pass (an exp per
// logit) then takes 3.5-4.7x the time of the same pass in AVX-512 (docs/benchmarks.md). This kernel
// is compiled once into tessel::blas (kernels/wide_exp.cpp) in AVX-512 and AVX2+FMA forms, and runs
// where the CPU has them and the translation unit's own packets are narrower; elsewhere the packets
// run.
#pragma once

#include <string_view>

#include "../../core/config.hpp"

#if !defined(TESSEL_BLAS)
#define TESSEL_BLAS 0
#endif

namespace tessel::exec::detail {

#if TESSEL_BLAS

// The vectors wide_exp_shifted runs in on this CPU: "AVX-512", "AVX2" or "none" (then it declines).
char const* wide_exp_kernels();

// x_j <- exp(x_j - m) over n > 0 contiguous floats, each at most m (finite), and sum_j of them into
// `sum`, in AVX-512 or AVX2+FMA; false, with nothing written, on a CPU with neither. exp is
// computed to within an ulp (a degree-7 polynomial after reduction by ln 2; 7e-8 relative at
// worst over [-87, 0]), and results below FLT_MIN (x_j - m < -87.3, a probability under 1e-38 of
// the row's largest) are 0.
bool wide_exp_shifted(float* x, index_t n, float m, float& sum);

// The same in the named vectors ("AVX-512" or "AVX2", as wide_exp_kernels names them), so that
// tests check each form; false, with nothing written, where the CPU lacks them.
bool wide_exp_shifted_in(std::string_view kernels, float* x, index_t n, float m, float& sum);

#endif

// Whether this translation unit's own float packets are narrower than the widest that
// wide_exp_shifted may run: then it is worth asking it.
inline constexpr bool wide_exp_may_help =
#if TESSEL_BLAS && (defined(__x86_64__) || defined(_M_X64)) && !defined(__AVX512F__)
    true;
#else
    false;
#endif

}  // namespace tessel::exec::detail
