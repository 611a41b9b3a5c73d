// Calling a layout with more coordinates than it has modes fails to compile.
// expect: the coordinate.s rank differs from the layout.s rank
#include <tessel/core/layout.hpp>
using namespace tessel;
auto bad = make_layout(make_shape(Int<4>{}, Int<4>{}))(1, 2, 3);
