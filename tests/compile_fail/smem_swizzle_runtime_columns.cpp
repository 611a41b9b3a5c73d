// smem_swizzled_layout with a run-time column count fails to compile: the swizzle's bits are
// template parameters.
// expect: smem_swizzled_layout needs the column count as a static Int<N>
#include <tessel/core/swizzle.hpp>
using namespace tessel;
auto bad = smem_swizzled_layout<float>(Int<32>{}, index_t{32});
