// A block shape of another rank than the layout fails to compile.
// expect: the block shape.s rank differs from the layout.s rank
#include <tessel/core/block_layout.hpp>
using namespace tessel;
auto bad = block_layout(make_layout(make_shape(Int<8>{}, Int<6>{})), make_shape(Int<2>{}), BlockOrder::reordered);
