// An expression over an owning temporary tensor would dangle; it fails to compile.
// expect: an expression would hold a view of an owning temporary tensor
#include <tessel/tessel.hpp>
using namespace tessel;
auto bad = make_host_tensor<float>(make_shape(2, 3)) * 2.0f;
