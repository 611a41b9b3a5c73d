// The complement of a static layout with a broadcast (stride-0) mode fails to compile.
// expect: this static layout has no complement: it is not injective
#include <tessel/core/complement.hpp>
using namespace tessel;
auto bad = complement(make_layout(make_shape(Int<4>{}, Int<2>{}), make_stride(Int<0>{}, Int<1>{})),
                      Int<8>{});
