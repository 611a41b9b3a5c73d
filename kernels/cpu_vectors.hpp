// The widest SIMD vectors this CPU and its operating system support, for tessel::blas's two
// run-time choices (kernels/blas.cpp: OpenBLAS's kernels; kernels/wide_exp.cpp: the softmax row's exp).
// Internal to that library: compiled with its flags, never installed.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TESSEL_CPU_VECTORS_X86 1
#else
#define TESSEL_CPU_VECTORS_X86 0
#endif

namespace tessel::exec::detail {

// 0 SSE (or not x86), 1 AVX, 2 AVX2 with FMA, 3 AVX-512 (F, BW, DQ and VL, as OpenBLAS's
// SkylakeX kernels need).
inline int cpu_vector_level() {
#if TESSEL_CPU_VECTORS_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return 3;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
  if (__builtin_cpu_supports("avx")) return 1;
#endif
  return 0;
}

}  // namespace tessel::exec::detail
