// The left inverse of a static layout that is not injective fails to compile.
// expect: this static layout has no left inverse: it is not injective
#include <tessel/core/inverse.hpp>
using namespace tessel;
auto bad =
    left_inverse(make_layout(make_shape(Int<3>{}, Int<2>{}), make_stride(Int<1>{}, Int<0>{})));
