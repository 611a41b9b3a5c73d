// Reshaping a static strided layout where no view exists fails to compile.
// expect: cannot be reshaped to that shape without a copy
#include <tessel/core/composition.hpp>
using namespace tessel;
auto bad = reshape(make_layout(make_shape(Int<4>{}, Int<4>{}), make_stride(Int<8>{}, Int<1>{})), make_shape(Int<16>{}));
