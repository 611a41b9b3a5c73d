// A by-mode tiler of rank 1 for a layout of rank 2 fails to compile.
// expect: a by-mode tiler needs one tiler per mode of the layout
#include <tessel/core/divide.hpp>
using namespace tessel;
auto bad = tiled_divide(make_layout(make_shape(8, 8)), make_shape(2));
