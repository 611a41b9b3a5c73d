// A negative static extent fails to compile.
// expect: a static extent is negative
#include <tessel/core/shape.hpp>
using namespace tessel;
auto bad = make_shape(Int<4>{}, Int<-2>{});
