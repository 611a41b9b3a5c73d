// A shape and a stride of different ranks fail to compile.
// expect: shape and stride are not congruent
#include <tessel/core/layout.hpp>
using namespace tessel;
auto bad = make_layout(make_shape(Int<4>{}, Int<4>{}), make_stride(Int<1>{}));
