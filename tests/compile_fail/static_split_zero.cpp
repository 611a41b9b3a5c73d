// A static split size of zero fails to compile.
// expect: multi_dim_split needs a split size > 0
#include <tessel/core/multi_dim_split.hpp>
using namespace tessel;
auto bad = multi_dim_split(make_shape(Int<4>{}), Int<0>{});
