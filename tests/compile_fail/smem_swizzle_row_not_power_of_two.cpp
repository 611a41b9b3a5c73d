// SmemSwizzle for rows that are not a power-of-two number of 16-byte vectors (24 floats: 6
// vectors) fails to compile.
// expect: SmemSwizzle needs rows of a power-of-two number of 16-byte vectors
#include <tessel/core/swizzle.hpp>
using namespace tessel;
auto bad = smem_swizzled_layout<float>(Int<32>{}, Int<24>{});
