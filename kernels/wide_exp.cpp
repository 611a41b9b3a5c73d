// tessel::blas's vector kernel for the host's one-exp softmax row (declared in
// tessel/exec/host/wide_exp.hpp): the same arithmetic in AVX-512 and in AVX2+FMA, each in a
// function compiled for its instruction set by a target attribute, and the CPU's widest chosen
// once, when first called. Intrinsics only, and nothing inline shared with other translation
// units: a function compiled for AVX-512 must never be the copy an SSE caller links to.
#include <tessel/exec/host/wide_exp.hpp>

#include <tessel/exec/host/exp_float.hpp>

#include "cpu_vectors.hpp"

#if TESSEL_CPU_VECTORS_X86
// GCC 12's AVX-512 intrinsics make their "undefined" operands by self-initialization, which its
// uninitialized-use warnings flag wherever they are inlined (a false positive fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace tessel::exec::detail {

namespace {

namespace c = exp_float;  // the function's constants, shared with the host packets

enum class Vectors { none, avx2, avx512 };

// The widest form this CPU runs, found once.
Vectors vectors() {
  static Vectors const v = [] {
    int const level = cpu_vector_level();
    return level >= 3 ? Vectors::avx512 : level == 2 ? Vectors::avx2 : Vectors::none;
  }();
  return v;
}

#if TESSEL_CPU_VECTORS_X86

__attribute__((target("avx512f"))) __m512 exp16(__m512 r) {
  __m512 const shift = _mm512_set1_ps(c::round_shift);
  __m512 const shifted = _mm512_fmadd_ps(r, _mm512_set1_ps(c::log2e), shift);
  __m512 const k = _mm512_sub_ps(shifted, shift);
  __m512 f = _mm512_fnmadd_ps(k, _mm512_set1_ps(c::ln2_hi), r);
  f = _mm512_fnmadd_ps(k, _mm512_set1_ps(c::ln2_lo), f);
  __m512 p = _mm512_set1_ps(c::taylor[0]);
  for (int i = 1; i < 8; ++i) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(c::taylor[i]));
  __m512i const e =
      _mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(_mm512_castps_si512(shifted), 23));
  // Arguments here are at most 0 (x - max). Below the normal range, -inf included, the bits
  // are garbage and the lane is zeroed.
  __mmask16 const tiny = _mm512_cmp_ps_mask(r, _mm512_set1_ps(c::smallest_argument), _CMP_LT_OQ);
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~tiny), _mm512_castsi512_ps(e));
}

__attribute__((target("avx512f"))) float exp_shifted_avx512(float* x, index_t n, float m) {
  __m512 const shift = _mm512_set1_ps(m);
  __m512 sum = _mm512_setzero_ps();
  index_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 const e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), shift));
    _mm512_storeu_ps(x + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (j < n) {
    auto const lanes = static_cast<__mmask16>((1u << (n - j)) - 1u);
    __m512 const e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, x + j), shift));
    _mm512_mask_storeu_ps(x + j, lanes, e);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(lanes, e));
  }
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx2,fma"))) __m256 exp8(__m256 r) {
  __m256 const shift = _mm256_set1_ps(c::round_shift);
  __m256 const shifted = _mm256_fmadd_ps(r, _mm256_set1_ps(c::log2e), shift);
  __m256 const k = _mm256_sub_ps(shifted, shift);
  __m256 f = _mm256_fnmadd_ps(k, _mm256_set1_ps(c::ln2_hi), r);
  f = _mm256_fnmadd_ps(k, _mm256_set1_ps(c::ln2_lo), f);
  __m256 p = _mm256_set1_ps(c::taylor[0]);
  for (int i = 1; i < 8; ++i) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(c::taylor[i]));
  __m256i const e =
      _mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_castps_si256(shifted), 23));
  __m256 const tiny = _mm256_cmp_ps(r, _mm256_set1_ps(c::smallest_argument), _CMP_LT_OQ);
  return _mm256_andnot_ps(tiny, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) float exp_shifted_avx2(float* x, index_t n, float m) {
  __m256 const shift = _mm256_set1_ps(m);
  __m256 sum = _mm256_setzero_ps();
  index_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 const e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), shift));
    _mm256_storeu_ps(x + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (j < n) {  // the tail through a padded copy: -inf pads give exp 0
    alignas(32) float tail[8];
    for (int i = 0; i < 8; ++i) tail[i] = j + i < n ? x[j + i] : -__builtin_inff();
    __m256 const e = exp8(_mm256_sub_ps(_mm256_load_ps(tail), shift));
    _mm256_store_ps(tail, e);
    for (index_t i = 0; j + i < n; ++i) x[j + i] = tail[i];
    sum = _mm256_add_ps(sum, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  for (int width = 4; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) lanes[i] += lanes[i + width];
  return lanes[0];
}

#endif

// Runs form v; false where v is none (or the build is not x86).
bool run(Vectors v, float* x, index_t n, float m, float& sum) {
  switch (v) {
    case Vectors::avx512:
#if TESSEL_CPU_VECTORS_X86
      sum = exp_shifted_avx512(x, n, m);
      return true;
#endif
    case Vectors::avx2:
#if TESSEL_CPU_VECTORS_X86
      sum = exp_shifted_avx2(x, n, m);
      return true;
#endif
    case Vectors::none:
      break;
  }
  (void)x, (void)n, (void)m, (void)sum;
  return false;
}

}  // namespace

char const* wide_exp_kernels() {
  switch (vectors()) {
    case Vectors::avx512:
      return "AVX-512";
    case Vectors::avx2:
      return "AVX2";
    case Vectors::none:
      return "none";
  }
  return "none";
}

bool wide_exp_shifted(float* x, index_t n, float m, float& sum) {
  return run(vectors(), x, n, m, sum);
}

bool wide_exp_shifted_in(std::string_view kernels, float* x, index_t n, float m, float& sum) {
  Vectors const cpu = vectors();
  Vectors const named = kernels == "AVX-512" && cpu == Vectors::avx512 ? Vectors::avx512
                        : kernels == "AVX2" && cpu != Vectors::none    ? Vectors::avx2
                                                                       : Vectors::none;
  return run(named, x, n, m, sum);
}

}  // namespace tessel::exec::detail
