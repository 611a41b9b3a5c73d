// A static attention plan whose tile budget cannot hold the smallest tile (16 x 16 at head_dim 64
// in f32: 13312 bytes) fails to compile, with the tiles, head_dim, bytes and budget.
// expect: StaticAttentionTileFitsBudget<16, 16, 64, 13312, 1000>
#include <tessel/nn/attention_plan.hpp>
using namespace tessel;
constexpr auto bad =
    nn::make_attention_plan<float>(Int<4>{}, Int<12>{}, Int<64>{}, Int<64>{}, Int<1000>{});
