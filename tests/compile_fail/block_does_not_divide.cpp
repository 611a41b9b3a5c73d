// A static block shape that does not divide the static shape fails to compile.
// expect: the block shape does not divide the shape
#include <tessel/core/block_layout.hpp>
using namespace tessel;
auto bad = block_layout(make_layout(make_shape(Int<8>{}, Int<6>{})), make_shape(Int<3>{}, Int<2>{}), BlockOrder::merged);
