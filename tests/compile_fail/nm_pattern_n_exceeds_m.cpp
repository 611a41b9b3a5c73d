// A static N:M pattern with N > M fails to compile.
// expect: an N:M pattern keeps 0 <= N <= M elements per group
#include <tessel/sparsity/nm_pattern.hpp>
using namespace tessel;
NMPattern<Int<5>, Int<4>> bad{};
