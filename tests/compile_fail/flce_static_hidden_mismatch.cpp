// FLCE with static extents whose weight has another hidden size than the input fails to compile,
// with both sizes in the diagnostic.
// expect: StaticHiddenSizesAgree<512, 511>
#include <tessel/flce/forward.hpp>
using namespace tessel;
void f(float* x, float* w, std::int64_t* y, float* loss) {
  auto input = make_tensor(x, make_shape(Int<8>{}, Int<512>{}));
  auto weight = make_tensor(w, make_shape(Int<100>{}, Int<511>{}));
  auto target = make_tensor(y, make_shape(Int<8>{}));
  flce::forward(input, weight, target, {}, {.loss = make_tensor(loss, make_shape(Int<1>{}))});
}
