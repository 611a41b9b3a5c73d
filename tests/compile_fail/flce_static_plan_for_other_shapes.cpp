// A static FLCE plan given to forward for other static shapes than the call's fails to compile,
// with both extents in the diagnostic.
// expect: StaticPlanExtentAgrees<100, 101>
#include <tessel/flce/forward.hpp>
using namespace tessel;
void f(float* x, float* w, std::int64_t* y, float* loss) {
  auto input = make_tensor(x, make_shape(Int<8>{}, Int<16>{}));
  auto weight = make_tensor(w, make_shape(Int<100>{}, Int<16>{}));
  auto target = make_tensor(y, make_shape(Int<8>{}));
  auto plan = flce::make_plan(Int<8>{}, Int<16>{}, Int<101>{}, Int<4>{});
  flce::forward(plan, input, weight, target, {}, {.loss = make_tensor(loss, make_shape(Int<1>{}))});
}
