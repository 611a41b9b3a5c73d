// Assigning to a tensor of const elements fails to compile with a sentence.
// expect: cannot assign to a tensor of const elements
#include <tessel/tessel.hpp>
using namespace tessel;
void f(float const* p, float* q) {
  auto dst = make_tensor(p, make_shape(4));
  assign(dst, make_tensor(q, make_shape(4)), exec::Serial{});
}
