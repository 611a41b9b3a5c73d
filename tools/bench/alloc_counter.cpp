// Interposes glibc's allocator to count live heap bytes and their peak (see alloc_counter.hpp).
// Each replacement forwards to glibc's own implementation (__libc_malloc, ...) and adds or
// subtracts malloc_usable_size of the block.
#include "alloc_counter.hpp"

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);
}

namespace {

std::atomic<std::int64_t> live{0};
std::atomic<std::int64_t> peak{0};

void raise_peak(std::int64_t now) {
  std::int64_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

void* counted(void* p) {
  if (p != nullptr)
    raise_peak(live.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)),
                              std::memory_order_relaxed) +
               static_cast<std::int64_t>(malloc_usable_size(p)));
  return p;
}

void uncount(void* p) {
  if (p != nullptr)
    live.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
}

}  // namespace

extern "C" {

void* malloc(std::size_t n) {
  return counted(__libc_malloc(n));
}
void* calloc(std::size_t n, std::size_t size) {
  return counted(__libc_calloc(n, size));
}
void free(void* p) {
  uncount(p);
  __libc_free(p);
}
void* realloc(void* p, std::size_t n) {
  std::int64_t const before = p != nullptr ? static_cast<std::int64_t>(malloc_usable_size(p)) : 0;
  void* q = __libc_realloc(p, n);
  if (q == nullptr) return nullptr;  // p is untouched (or n was 0 and p freed: rare, ignored)
  std::int64_t const delta = static_cast<std::int64_t>(malloc_usable_size(q)) - before;
  raise_peak(live.fetch_add(delta, std::memory_order_relaxed) + delta);
  return q;
}
void* memalign(std::size_t alignment, std::size_t n) {
  return counted(__libc_memalign(alignment, n));
}
void* aligned_alloc(std::size_t alignment, std::size_t n) {
  return counted(__libc_memalign(alignment, n));
}
int posix_memalign(void** out, std::size_t alignment, std::size_t n) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = counted(__libc_memalign(alignment, n));
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

}  // extern "C"

namespace tessel::bench {

std::int64_t allocated_bytes() {
  return live.load();
}
void reset_peak() {
  peak.store(live.load());
}
std::int64_t peak_allocated_bytes() {
  return peak.load();
}

}  // namespace tessel::bench
