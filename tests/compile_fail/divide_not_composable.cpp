// Two consecutive indices of a static column-major (2, 3) are no layout: the divide fails to
// compile.
// expect: does not line up with the layout.s extents
#include <tessel/core/divide.hpp>
using namespace tessel;
auto bad = logical_divide(
    make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<1>{}, Int<2>{})), Int<2>{});
