// Three copies of the static (2):(2) do not line up with its complement (2,2):(4,1): the product
// fails to compile.
// expect: a mode of the tiler does not line up with the extents of the layout.s complement
#include <tessel/core/product.hpp>
using namespace tessel;
auto bad = logical_product(make_layout(make_shape(Int<2>{}), make_stride(Int<2>{})), Int<3>{});
