// A std::vector given where FLCE wants a matrix (grad_input) fails to compile with the one
// sentence saying what a matrix argument takes.
// expect: this matrix argument .input, weight, grad_input, grad_weight. takes a rank-2 tessel
// tensor
#include <tessel/flce/forward.hpp>
#include <vector>
using namespace tessel;
void f(float* x, float* w, std::int64_t* y) {
  std::vector<float> dx(8 * 4);
  flce::forward(make_tensor(x, make_shape(8, 4)), make_tensor(w, make_shape(10, 4)),
                make_tensor(y, make_shape(8)), {}, {.grad_input = dx});
}
