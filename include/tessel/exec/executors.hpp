// Executors. Host: Serial (one thread), OpenMP (a team of threads, exec/host/team.hpp; serial
// when tessel is built without OpenMP) and Auto (the default for `dst = expr`: serial below a
// work threshold, OpenMP above); a host executor only decides how many threads share one pass,
// the pass is the same. Device: Cuda, bound to a stream; its kernels are in <tessel/exec/cuda.cuh>
// (CUDA translation units only), and this tag needs no CUDA header.
#pragma once

#include <algorithm>
#include <concepts>
#include <type_traits>

#include "../core/config.hpp"
#include "host/team.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

// The CUDA runtime's stream type (cudaStream_t is CUstream_st*), declared here so that host-only
// builds can name a Cuda executor without the CUDA headers.
struct CUstream_st;

namespace tessel::exec {

// Below this many elements of work, Auto runs serially: starting an OpenMP team costs a few
// microseconds, which is what a pass over ~2^15 floats takes on one core (see
// docs/benchmarks.md, "Host expressions").
inline constexpr index_t default_parallel_threshold = index_t{1} << 15;

struct Serial {};

struct OpenMP {
  int threads = 0;  // 0: omp_get_max_threads()
};

struct Auto {
  index_t parallel_threshold = default_parallel_threshold;
  int threads = 0;  // 0: omp_get_max_threads()
};

// Runs assignments of device tensors as CUDA kernels queued on `stream` (null: the legacy default
// stream). Nothing waits: synchronize the stream before reading results on the host.
struct Cuda {
  CUstream_st* stream = nullptr;
};

template <class X>
concept DeviceExecutor = std::same_as<std::remove_cvref_t<X>, Cuda>;

template <class X>
concept HostExecutor = std::same_as<std::remove_cvref_t<X>, Serial> ||
    std::same_as<std::remove_cvref_t<X>, OpenMP> || std::same_as<std::remove_cvref_t<X>, Auto>;

// Any executor: what a workload entry point's last argument may be.
template <class X>
concept Executor = HostExecutor<X> || DeviceExecutor<X>;

// True when tessel was compiled with OpenMP (the OpenMP executor then uses threads).
constexpr bool openmp_available() noexcept {
#if defined(_OPENMP)
  return true;
#else
  return false;
#endif
}

inline int max_threads() noexcept {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

namespace detail {

inline int threads_for(Serial const&, index_t) {
  return 1;
}
inline int threads_for(OpenMP const& x, index_t) {
  return x.threads > 0 ? x.threads : max_threads();
}
inline int threads_for(Auto const& x, index_t work) {
  if (work < x.parallel_threshold) return 1;
  return x.threads > 0 ? x.threads : max_threads();
}

// Chunks per thread: enough that a thread delayed by the OS (a shared machine) does not hold up
// the pass while the others idle, few enough that each chunk's one-time setup (finding its first
// coordinate) stays negligible.
inline constexpr index_t chunks_per_thread = 8;

// f(begin, end) over a partition of [0, total) into contiguous chunks, handed out dynamically to
// the caller and the host team's workers (exec/host/team.hpp). Which thread runs a chunk never
// changes what the chunk computes. Threads are used only when tessel is built with OpenMP (the
// thread count is OpenMP's, and OpenBLAS's OpenMP build is what the dense calls use).
template <class F>
void parallel_ranges(int threads, index_t total, F const& f) {
  if (total <= 0) return;
  if (threads > total) threads = static_cast<int>(total);
  if (openmp_available() && threads > 1) {
    index_t const chunks = std::min<index_t>(total, index_t{threads} * chunks_per_thread);
    HostTeam::instance().run(threads, chunks, [&](index_t c) {
      index_t const begin = total / chunks * c + std::min(c, total % chunks);
      index_t const end = begin + total / chunks + (c < total % chunks ? 1 : 0);
      f(begin, end);
    });
    return;
  }
  f(0, total);
}

}  // namespace detail

}  // namespace tessel::exec
