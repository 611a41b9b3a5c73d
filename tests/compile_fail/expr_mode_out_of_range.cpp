// Reducing over a mode the expression does not have fails to compile with a sentence.
// expect: mode<I> names a mode the expression does not have
#include <tessel/tessel.hpp>
using namespace tessel;
void f(float* p) { (void)sum(make_tensor(p, make_shape(2, 3)), mode<2>); }
