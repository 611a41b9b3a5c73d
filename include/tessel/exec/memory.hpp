// Memory in an executor's space, for the workloads written over exec (FLCE, Shampoo, sparsity):
// owning storage, per-call scratch, views of raw pointers, and the few values the host must read
// back. A workload writes its code once over exec::Memory<X>, tessel::assign, exec::for_each_row
// and exec's dense primitives; this header gives the host executors' memory (copies are immediate,
// waiting is free), <tessel/exec/cuda/memory.hpp> exec::Cuda's (device memory, stream-ordered
// scratch, copies queued on the executor's stream).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "../core/error.hpp"
#include "../core/int.hpp"
#include "../core/int_tuple.hpp"
#include "../tensor/engine.hpp"
#include "../tensor/host_tensor.hpp"
#include "../tensor/tensor.hpp"
#include "executors.hpp"
#include "host/scratch_cache.hpp"

namespace tessel::exec {

// The alignment of scratch in every space (cudaMallocAsync's), so that one allocation can be cut
// into sub-buffers at the same offsets on the host and on a device.
inline constexpr std::size_t scratch_alignment = 256;

template <class X>
inline constexpr bool memory_included = false;

// Executors whose memory is declared elsewhere: exec::Cuda, in <tessel/exec/cuda/memory.hpp>.
template <class X>
struct Memory {
  static_assert(memory_included<X>,
                "tessel: work on device tensors (exec::Cuda) needs the layer's CUDA half "
                "(<tessel/flce/cuda.cuh>, <tessel/sparsity/cuda.cuh>, "
                "<tessel/shampoo/device_shampoo.cuh>), included from a CUDA translation unit.");
};

// n uninitialized elements of U on the host, aligned to scratch_alignment, given back with the
// object to the calling thread's scratch cache (exec/host/scratch_cache.hpp), which a later call
// of about the same size takes from. Uninitialized because a call's scratch can be large (FLCE's
// logits chunk) and is always written before it is read; device scratch is uninitialized too.
template <class U>
class HostScratch {
 public:
  // `what` names the workload in the allocation failure's sentence ("FLCE"), or nothing.
  explicit HostScratch(index_t n, char const* what = nullptr) {
    std::size_t const bytes = static_cast<std::size_t>(n > 0 ? n : 0) * sizeof(U);
    std::size_t const rounded =
        bytes == 0 ? scratch_alignment
                   : (bytes + scratch_alignment - 1) / scratch_alignment * scratch_alignment;
    std::size_t capacity = rounded;
    void* p = nullptr;
    if (rounded >= bytes) {  // else n * sizeof(U) overflowed
      auto* cache = detail::ScratchCache::local();
      if (cache) p = cache->take(rounded, capacity);
      if (p == nullptr) p = std::aligned_alloc(scratch_alignment, rounded);
      if (p == nullptr && cache && cache->held() > 0) {  // the kept blocks may be what is missing
        cache->release();
        p = std::aligned_alloc(scratch_alignment, rounded);
      }
    }
    if (p == nullptr)
      tessel::detail::throw_error(tessel::detail::sentence("cannot allocate ", bytes, " bytes of ",
                                                           what ? what : "", what ? " " : "",
                                                           "scratch memory."));
    data_ = std::unique_ptr<U, Give>(static_cast<U*>(p), Give{capacity});
  }
  U* data() const noexcept { return data_.get(); }

 private:
  struct Give {
    std::size_t capacity = 0;
    void operator()(U* p) const noexcept {
      if (auto* cache = detail::ScratchCache::local())
        cache->give(p, capacity);
      else
        std::free(p);
    }
  };
  std::unique_ptr<U, Give> data_;
};

template <HostExecutor X>
struct Memory<X> {
  using space = HostSpace;

  // Owning storage of n elements, zero-filled, for state kept across calls; data() is its first
  // element.
  template <class U>
  using Buffer = HostArrayEngine<U>;
  template <class U>
  static Buffer<U> allocate(index_t n) {
    return Buffer<U>(n);
  }

  // An owning, zero-filled tensor of shape s (results a call hands back).
  template <class U, IntTuple S>
  static auto make(X const&, S const& s) {
    return make_host_tensor<U>(s);
  }

  // Storage for the duration of one call: uninitialized, aligned to scratch_alignment.
  template <class U>
  static HostScratch<U> scratch(X const&, index_t n, char const* what = nullptr) {
    return HostScratch<U>(n, what);
  }

  // A view of memory in this space.
  template <class U, class LayoutOrShape>
  static auto view(U* data, LayoutOrShape const& l) {
    return make_tensor(data, l);
  }

  // n elements from this space to the host / from the host to this space, queued on the executor
  // (immediate here). The host side must stay alive until wait().
  template <class U>
  static void to_host(X const&, U const* src, index_t n, U* dst) {
    if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(U));
  }
  template <class U>
  static void from_host(X const&, U const* src, index_t n, U* dst) {
    if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(U));
  }

  // Waits for the work queued on the executor (nothing is queued on the host).
  static void wait(X const&) {}

  // The element at p once everything queued before has run: to_host and wait.
  template <class U>
  static U read(X const&, U const* p) {
    return *p;
  }
};

}  // namespace tessel::exec
