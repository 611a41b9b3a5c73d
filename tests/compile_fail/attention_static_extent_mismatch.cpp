// Attention with a static plan and a static k whose sequence length differs from the plan's
// fails to compile, naming the tensor (1: k), the mode (1: T) and both extents.
// expect: StaticAttentionExtentAgrees<1, 1, 63, 64>
#include <tessel/nn/attention.hpp>
using namespace tessel;
void f(float* p) {
  auto const s = make_shape(Int<2>{}, Int<64>{}, Int<3>{}, Int<8>{});
  auto q = make_tensor(p, s);
  auto k = make_tensor(p, make_shape(Int<2>{}, Int<63>{}, Int<3>{}, Int<8>{}));
  auto lse = make_tensor(p, make_shape(Int<2>{}, Int<3>{}, Int<64>{}));
  constexpr auto plan = nn::make_attention_plan<float>(Int<2>{}, Int<3>{}, Int<64>{}, Int<8>{});
  nn::attention_forward(plan, q, k, q, q, lse, exec::Serial{});
}
