// The size of a static shape that overflows int64 fails to compile.
// expect: the product of two static integers overflows int64
#include <tessel/core/int_tuple.hpp>
#include <tessel/core/shape.hpp>
using namespace tessel;
auto bad = size(make_shape(Int<(std::int64_t{1} << 40)>{}, Int<(std::int64_t{1} << 40)>{}));
