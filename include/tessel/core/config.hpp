// Compiler plumbing shared by every tessel header: execution-space annotations and the index type.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TESSEL_HOST_DEVICE __host__ __device__
#define TESSEL_DEVICE __device__
#else
#define TESSEL_HOST_DEVICE
#define TESSEL_DEVICE
#endif

// For kernel bodies whose loops must be compiled in their caller: a body that takes lambdas by
// reference and is left out of line sees their captures as escaped memory, which every exp or
// log call (a library call that may write errno) forces the compiler to reload per element.
#if defined(__CUDACC__)
#define TESSEL_FORCEINLINE __forceinline__
#elif defined(__GNUC__)
#define TESSEL_FORCEINLINE inline __attribute__((always_inline))
#else
#define TESSEL_FORCEINLINE inline
#endif

// The same for a lambda a hot loop calls, written after its parameter list: GCC may leave a
// large one out of line, and its captured accumulators then live in memory.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define TESSEL_INLINE_LAMBDA __attribute__((always_inline))
#else
#define TESSEL_INLINE_LAMBDA
#endif

// For a rare branch's work inside a hot loop (FLCE's target cursor): out of line on the host, so
// that the loop's registers are not spent on it; inline on the device, where a call would make
// the kernel save its registers to the stack around it.
#if defined(__CUDA_ARCH__)
#define TESSEL_NOINLINE __forceinline__
#elif defined(__CUDACC__)
#define TESSEL_NOINLINE __noinline__
#elif defined(__GNUC__)
#define TESSEL_NOINLINE __attribute__((noinline))
#else
#define TESSEL_NOINLINE
#endif

// Makes the compiler forget where the value x came from, at no instruction's cost: a product
// behind it is rounded on its own and never fused into a later addition (GCC's default
// -ffp-contract=fast forms FMAs across statements, and may in one copy of a formula and not in
// another), and -ffast-math cannot fold it away algebraically. For floating-point values and SIMD
// packets, which live in vector registers: the operand is pinned to one ("v": any of an AVX-512
// target's 32, "x" the SSE/AVX 16, "w" Arm's), since with a general "g" clang goes through memory.
// Host code only: device code rounds products with __fmul_rn (math::rounded_product).
#if defined(__CUDA_ARCH__) || !(defined(__GNUC__) || defined(__clang__))
#define TESSEL_OPTIMIZATION_BARRIER(x)
#elif (defined(__x86_64__) || defined(__i386__)) && defined(__AVX512F__)
#define TESSEL_OPTIMIZATION_BARRIER(x) __asm__("" : "+v"(x))
#elif (defined(__x86_64__) || defined(__i386__)) && defined(__SSE2__)
#define TESSEL_OPTIMIZATION_BARRIER(x) __asm__("" : "+x"(x))
#elif defined(__aarch64__)
#define TESSEL_OPTIMIZATION_BARRIER(x) __asm__("" : "+w"(x))
#else
#define TESSEL_OPTIMIZATION_BARRIER(x) __asm__("" : "+g"(x))
#endif

// GCC 12+'s __builtin_assoc_barrier(x): x as a value no FMA contraction or reassociation
// crosses, invisible to every other optimization (math::rounded_product uses it; an empty asm in a
// loop stops GCC from unswitching the loop on its invariant tests). nvcc's front end and clang do
// not know it.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && defined(__has_builtin)
#if __has_builtin(__builtin_assoc_barrier)
#define TESSEL_HAS_ASSOC_BARRIER 1
#endif
#endif
#ifndef TESSEL_HAS_ASSOC_BARRIER
#define TESSEL_HAS_ASSOC_BARRIER 0
#endif

// 1 in a build with AddressSanitizer (GCC defines __SANITIZE_ADDRESS__, clang answers
// __has_feature), else 0: what tessel keeps for reuse (exec/host/scratch_cache.hpp) it keeps
// nothing of there, so that a stale pointer is still reported.
#if defined(__SANITIZE_ADDRESS__)
#define TESSEL_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSEL_ADDRESS_SANITIZER 1
#endif
#endif
#ifndef TESSEL_ADDRESS_SANITIZER
#define TESSEL_ADDRESS_SANITIZER 0
#endif

// True while nvcc compiles the device side of a translation unit; host-only paths
// (exceptions, strings) are compiled out there.
#if defined(__CUDA_ARCH__)
#define TESSEL_DEVICE_PASS 1
#else
#define TESSEL_DEVICE_PASS 0
#endif

// Around an #include of Eigen: Eigen 3.4 annotates defaulted special members __host__
// __device__, which nvcc warns about (#20012); the warning is Eigen's, so it is silenced for
// Eigen's headers only.
#if defined(__CUDACC__)
#define TESSEL_BEGIN_EIGEN_INCLUDE _Pragma("nv_diagnostic push") _Pragma("nv_diag_suppress 20012")
#define TESSEL_END_EIGEN_INCLUDE _Pragma("nv_diagnostic pop")
#else
#define TESSEL_BEGIN_EIGEN_INCLUDE
#define TESSEL_END_EIGEN_INCLUDE
#endif

// Bounds-checked element access on the host (Tensor's t(i, j) and t[i]): on in Debug builds, off
// in optimized ones. A build is optimized when NDEBUG is defined or, with GCC and clang, when the
// compiler optimizes (-O1 and above, -Os and -Og define __OPTIMIZE__): `g++ -O2` without -DNDEBUG
// is a release build to its user, and a check per access made element loops ~85x slower there
// (docs/tensors.md). Define it to 0 or 1 to choose; it must be the same in every translation unit
// of a program (the checked accessors are inline). tests/bounds/check_bounds_default.cpp pins it.
#if !defined(TESSEL_CHECK_BOUNDS)
#if defined(NDEBUG) || defined(__OPTIMIZE__)
#define TESSEL_CHECK_BOUNDS 0
#else
#define TESSEL_CHECK_BOUNDS 1
#endif
#endif

namespace tessel {

// Every extent, stride, offset and index in tessel is a signed 64-bit integer: large
// vocabularies times batch sizes overflow 32 bits, and signedness keeps differences honest.
using index_t = std::int64_t;

}  // namespace tessel
