// The complement of a static layout whose sorted strides do not nest fails to compile.
// expect: this static layout has no complement: a mode's stride is not a multiple
#include <tessel/core/complement.hpp>
using namespace tessel;
auto bad = complement(make_layout(make_shape(Int<2>{}, Int<2>{}), make_stride(Int<4>{}, Int<6>{})));
