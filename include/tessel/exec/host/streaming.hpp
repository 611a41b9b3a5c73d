// When the host executors write a destination with non-temporal (streaming) stores.
//
// An ordinary store to a line that is not in cache first reads the line (read-for-ownership), so a
// pass `y = f(x, z)` over arrays larger than the caches moves y twice. A streaming store writes the
// line around the caches: one memory stream less, and the caches keep what the pass reads. It
// pays only when nobody reads y from cache soon after, i.e. when y is larger than the caches would
// keep anyway, so the host executors stream a destination of at least streaming_store_bytes()
// bytes (and only along contiguous runs of at least 4 KiB; shorter runs would flush partial
// lines). The values written are the same either way.
#pragma once

#include <atomic>

#include "../../core/env.hpp"
#include "../../core/int.hpp"

namespace tessel::exec {

// The default: 32 MiB, about what two cores' share of a server's last-level cache holds and far
// above their L2 (a smaller destination is likely still cached when the next pass reads it).
// Measured with tools/bench/host_expr_bench.cpp (docs/benchmarks.md, "Streaming stores").
inline constexpr index_t default_streaming_store_bytes = index_t{32} << 20;

namespace detail {

inline std::atomic<index_t>& streaming_store_setting() {
  // TESSEL_STREAMING_STORE_BYTES in the environment overrides the default (a negative value
  // turns streaming off).
  static std::atomic<index_t> bytes{
      tessel::detail::env_integer("TESSEL_STREAMING_STORE_BYTES", default_streaming_store_bytes)};
  return bytes;
}

}  // namespace detail

// Host assignments whose destination holds at least this many bytes write it with streaming
// stores; negative: never.
inline index_t streaming_store_bytes() {
  return detail::streaming_store_setting().load(std::memory_order_relaxed);
}

// Sets the threshold for the whole process (0: stream every destination that can be; negative:
// never). Returns the previous value.
inline index_t set_streaming_store_bytes(index_t bytes) {
  return detail::streaming_store_setting().exchange(bytes, std::memory_order_relaxed);
}

// A destination of `bytes` bytes is streamed under the current setting.
inline bool streams_destination(index_t bytes) {
  index_t const threshold = streaming_store_bytes();
  return threshold >= 0 && bytes >= threshold;
}

}  // namespace tessel::exec
