// Host scratch blocks kept, per thread, for that thread's next call.
//
// A workload asks for the same scratch on every call: a Shampoo step that recomputes its roots
// takes several blocks of (matrices x d x d) elements, an FLCE call its logits chunk. Blocks that
// large come from mmap and go back to the system when freed, so each call faulted every page in
// again, zero-filled by the kernel (shampoo_step_bench's all-roots step: about 48,000 page faults,
// 190 MB, per step; docs/benchmarks.md). A block freed by a HostScratch stays with the thread that
// freed it, for a later request of between half its size and its size, up to
// scratch_cache_bytes() per thread, the least recently freed block going first. Blocks under
// 64 KiB are left to malloc. release_scratch_cache() hands a thread's blocks back. Under
// AddressSanitizer the default is 0 (nothing kept), so that a stale pointer into a previous
// call's scratch is still reported.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>

#include "../../core/config.hpp"
#include "../../core/env.hpp"
#include "../../core/int.hpp"

namespace tessel::exec {

// The default per-thread bound: 1 GiB, a few steps' scratch of a large Shampoo configuration
// (sixteen 4096 x 4096 float factors are 1 GiB) and far above FLCE's chunks; 0 under ASan.
inline constexpr index_t default_scratch_cache_bytes =
    TESSEL_ADDRESS_SANITIZER ? 0 : index_t{1} << 30;

// Smaller blocks are left to malloc, which serves them from its heap without faulting pages in
// again; kept, they would take the slots of the large blocks the cache is for.
inline constexpr std::size_t min_cached_scratch_bytes = std::size_t{64} << 10;

namespace detail {

inline std::atomic<index_t>& scratch_cache_setting() {
  // TESSEL_SCRATCH_CACHE_BYTES in the environment overrides the default (0: keep nothing).
  static std::atomic<index_t> bytes{
      tessel::detail::env_integer("TESSEL_SCRATCH_CACHE_BYTES", default_scratch_cache_bytes)};
  return bytes;
}

// One thread's freed blocks, most recently freed last. At most kSlots blocks: a call holds a few
// large ones at a time, and a linear search of eight is free next to the allocation it replaces.
class ScratchCache {
 public:
  static constexpr int kSlots = 8;

  // Reads the setting, so that the environment is read (and a bad value reported) here, where a
  // HostScratch is made, and never first in give(), which runs in a destructor.
  ScratchCache() {
    scratch_cache_setting();
    alive() = true;
  }
  ScratchCache(ScratchCache const&) = delete;
  ScratchCache& operator=(ScratchCache const&) = delete;
  ~ScratchCache() {
    release();
    alive() = false;
  }

  // This thread's cache; nullptr while the thread is being torn down (a block freed after the
  // cache was destroyed goes straight back to the system).
  static ScratchCache* local() {
    thread_local ScratchCache cache;
    return alive() ? &cache : nullptr;
  }

  // A cached block of at least `bytes` and at most twice that (a much larger block would be held
  // by a small request while a later large one allocates anew), the smallest such; or nullptr.
  void* take(std::size_t bytes, std::size_t& capacity) noexcept {
    int best = -1;
    for (int i = 0; i < count_; ++i)
      if (blocks_[i].bytes >= bytes && blocks_[i].bytes / 2 <= bytes &&
          (best < 0 || blocks_[i].bytes < blocks_[best].bytes))
        best = i;
    if (best < 0) return nullptr;
    Block const b = blocks_[best];
    erase(best);
    capacity = b.bytes;
    return b.p;
  }

  // Keeps the block p of `bytes` bytes, or frees it when the bound does not allow it; evicts the
  // least recently freed blocks to stay within the bound and the slots.
  void give(void* p, std::size_t bytes) noexcept {
    index_t const bound = scratch_cache_setting().load(std::memory_order_relaxed);
    if (bytes < min_cached_scratch_bytes || bound <= 0 || bytes > static_cast<std::size_t>(bound)) {
      std::free(p);
      return;
    }
    while (count_ > 0 && (count_ == kSlots || held_ + bytes > static_cast<std::size_t>(bound))) {
      std::free(blocks_[0].p);
      erase(0);
    }
    blocks_[count_++] = {p, bytes};
    held_ += bytes;
  }

  void release() noexcept {
    for (int i = 0; i < count_; ++i) std::free(blocks_[i].p);
    count_ = 0;
    held_ = 0;
  }

  std::size_t held() const noexcept { return held_; }

 private:
  struct Block {
    void* p = nullptr;
    std::size_t bytes = 0;
  };
  // Trivially destructible, so it stays readable after the cache's destructor has run.
  static bool& alive() noexcept {
    thread_local bool flag = false;
    return flag;
  }
  void erase(int i) noexcept {
    held_ -= blocks_[i].bytes;
    for (int k = i; k + 1 < count_; ++k) blocks_[k] = blocks_[k + 1];
    --count_;
  }

  std::array<Block, kSlots> blocks_{};
  int count_ = 0;
  std::size_t held_ = 0;
};

}  // namespace detail

// Each thread keeps at most this many bytes of freed host scratch; 0 or less: none.
inline index_t scratch_cache_bytes() {
  return detail::scratch_cache_setting().load(std::memory_order_relaxed);
}

// Sets the bound for every thread (blocks already kept beyond it go at that thread's next free or
// release). Returns the previous value.
inline index_t set_scratch_cache_bytes(index_t bytes) {
  return detail::scratch_cache_setting().exchange(bytes, std::memory_order_relaxed);
}

// Frees the calling thread's kept scratch (e.g. after training, before other work that needs the
// memory).
inline void release_scratch_cache() {
  if (auto* cache = detail::ScratchCache::local()) cache->release();
}

// Bytes of freed scratch the calling thread keeps now.
inline index_t cached_scratch_bytes() {
  auto* cache = detail::ScratchCache::local();
  return cache ? static_cast<index_t>(cache->held()) : 0;
}

}  // namespace tessel::exec
