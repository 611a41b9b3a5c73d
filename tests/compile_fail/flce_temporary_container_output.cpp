// A temporary std::vector as an FLCE output would dangle: it fails to compile with the sentence
// that names the containers a vector argument borrows.
// expect: a contiguous range of T the caller keeps alive
#include <tessel/flce/forward.hpp>
#include <vector>
using namespace tessel;
void f(float* x, float* w, std::int64_t* y) {
  flce::forward(make_tensor(x, make_shape(8, 4)), make_tensor(w, make_shape(10, 4)),
                make_tensor(y, make_shape(8)), {.reduction = flce::Reduction::none},
                {.loss = std::vector<float>(8)});
}
