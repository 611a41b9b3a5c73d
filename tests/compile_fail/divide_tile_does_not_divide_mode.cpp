// A static by-mode tiler (4, 5) of a static (6, 10) fails to compile: 4 does not divide 6.
// expect: a by-mode tiler does not divide the static layout
#include <tessel/core/divide.hpp>
using namespace tessel;
auto bad =
    zipped_divide(make_layout(make_shape(Int<6>{}, Int<10>{})), make_shape(Int<4>{}, Int<5>{}));
