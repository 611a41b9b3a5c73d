// Byte counting for benchmarks: alloc_counter.cpp interposes the C allocator (malloc, calloc,
// realloc, free and the aligned variants; operator new goes through malloc), so every heap byte
// a code path allocates is counted, Eigen's and OpenMP's included.
#pragma once

#include <cstdint>

namespace tessel::bench {

// Bytes currently allocated (malloc_usable_size of every live block).
std::int64_t allocated_bytes();
// Forgets the peak: from now on peak_allocated_bytes() starts at allocated_bytes().
void reset_peak();
// The most bytes allocated at once since the last reset_peak().
std::int64_t peak_allocated_bytes();

}  // namespace tessel::bench
