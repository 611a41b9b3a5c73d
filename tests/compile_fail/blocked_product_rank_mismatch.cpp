// A blocked product of a rank-2 block over a rank-1 grid fails to compile.
// expect: need a layout and a tiler of the same rank
#include <tessel/core/product.hpp>
using namespace tessel;
auto bad = blocked_product(make_shape(Int<2>{}, Int<2>{}), make_shape(Int<3>{}));
