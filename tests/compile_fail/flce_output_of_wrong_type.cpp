// An FLCE output of the wrong kind (a double* for a float loss) fails to compile with the one
// sentence saying what a vector argument takes, and the types given and wanted.
// expect: X = double\*; T = float.*this vector argument .loss, z_loss, grad_bias, bias,
// class_weights, grad_output_rows. takes a rank-1 tessel tensor of T
#include <tessel/flce/forward.hpp>
using namespace tessel;
void f(float* x, float* w, std::int64_t* y) {
  double loss = 0;
  flce::forward(make_tensor(x, make_shape(8, 4)), make_tensor(w, make_shape(10, 4)),
                make_tensor(y, make_shape(8)), {}, {.loss = &loss});
}
