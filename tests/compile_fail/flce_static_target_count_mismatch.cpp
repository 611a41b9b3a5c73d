// FLCE with static extents whose target has another length than the input's rows fails to
// compile, with both counts in the diagnostic.
// expect: StaticTargetCountAgrees<8, 7>
#include <tessel/flce/forward.hpp>
using namespace tessel;
void f(float* x, float* w, std::int64_t* y, float* loss) {
  auto input = make_tensor(x, make_shape(Int<8>{}, Int<16>{}));
  auto weight = make_tensor(w, make_shape(Int<100>{}, Int<16>{}));
  auto target = make_tensor(y, make_shape(Int<7>{}));
  flce::forward(input, weight, target, {}, {.loss = make_tensor(loss, make_shape(Int<1>{}))});
}
