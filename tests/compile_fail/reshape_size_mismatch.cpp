// Reshaping a static layout to a static shape of another size fails to compile.
// expect: reshape to a shape with a different number of elements
#include <tessel/core/composition.hpp>
using namespace tessel;
auto bad = reshape(make_layout(make_shape(Int<4>{}, Int<6>{})), make_shape(Int<5>{}, Int<5>{}));
