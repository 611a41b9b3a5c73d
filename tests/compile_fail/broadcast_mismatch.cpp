// Broadcasting static extents that differ and are not 1 fails to compile.
// expect: cannot broadcast: an extent differs from the target extent
#include <tessel/core/broadcast.hpp>
using namespace tessel;
auto bad = broadcast_layout(make_layout(make_shape(Int<3>{})), make_shape(Int<2>{}, Int<4>{}));
