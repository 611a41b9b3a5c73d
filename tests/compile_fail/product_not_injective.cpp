// The product of a static layout with a broadcast (stride-0) mode fails to compile.
// expect: cannot form the product of this static layout: it is not injective
#include <tessel/core/product.hpp>
using namespace tessel;
auto bad = logical_product(
    make_layout(make_shape(Int<4>{}, Int<2>{}), make_stride(Int<0>{}, Int<1>{})), Int<3>{});
