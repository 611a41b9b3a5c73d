// Assigning an expression with only the expression layer included names the missing header.
// expect: evaluating an assignment needs an executor
#include <tessel/expr/arithmetic.hpp>
#include <tessel/expr/assign.hpp>
#include <tessel/tensor/tensor.hpp>
using namespace tessel;
void f(float* p, float* q) {
  auto x = make_tensor(p, make_shape(4));
  auto y = make_tensor(q, make_shape(4));
  y = x + 1.0f;
}
