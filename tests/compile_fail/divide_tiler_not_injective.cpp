// Dividing by a static tiler with a broadcast (stride-0) mode fails to compile.
// expect: cannot divide by this static tiler: it is not injective
#include <tessel/core/divide.hpp>
using namespace tessel;
auto bad = logical_divide(make_layout(make_shape(Int<8>{})),
                          make_layout(make_shape(Int<2>{}), make_stride(Int<0>{})));
