// A Swizzle whose shift is smaller than its bit count (the bits read and flipped overlap) fails
// to compile.
// expect: Swizzle<B, M, S> needs \|S\| >= B
#include <tessel/core/swizzle.hpp>
using namespace tessel;
auto bad = Swizzle<3, 4, 2>{}(index_t{5});
