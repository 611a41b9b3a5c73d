// Dividing a static (8) by the static tiler (3):(1) fails to compile: (complement, tiler) covers
// 9 indices, not 8.
// expect: the static tiler does not divide the static layout
#include <tessel/core/divide.hpp>
using namespace tessel;
auto bad = logical_divide(make_layout(make_shape(Int<8>{})), Int<3>{});
