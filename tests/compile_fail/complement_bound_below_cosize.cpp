// A static complement bound smaller than the static layout's cosize fails to compile.
// expect: complement bound smaller than the static layout's cosize
#include <tessel/core/complement.hpp>
using namespace tessel;
auto bad = complement(make_layout(make_shape(Int<4>{}), make_stride(Int<2>{})), Int<5>{});
