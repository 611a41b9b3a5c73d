// Compile-time benchmark: the Shampoo blocking plan of a 64-layer transformer's parameter list
// (per layer q, k, v, o 4096x4096; mlp 4096x11008, 11008x4096, 4096x11008; two norms 4096; plus a
// 32000x4096 embedding), computed entirely by the compiler. Built by
// `g++ -std=c++20 -O2 -Iinclude -c tools/bench/compile_time/shampoo_plan_64_layers.cpp`; see
// docs/benchmarks.md for the measured time.
#include <tessel/core/shape.hpp>
#include <tessel/shampoo/plan.hpp>

namespace {

using namespace tessel;
using namespace tessel::literals;
using shampoo::Extents;

constexpr auto attn = make_shape(4096_c, 4096_c);
constexpr auto up = make_shape(4096_c, 11008_c);
constexpr auto down = make_shape(11008_c, 4096_c);
constexpr auto norm = make_shape(4096_c);
constexpr auto embedding = make_shape(32000_c, 4096_c);

#define TESSEL_LAYER attn, attn, attn, attn, up, down, up, norm, norm
#define TESSEL_LAYERS_4 TESSEL_LAYER, TESSEL_LAYER, TESSEL_LAYER, TESSEL_LAYER
#define TESSEL_LAYERS_16 TESSEL_LAYERS_4, TESSEL_LAYERS_4, TESSEL_LAYERS_4, TESSEL_LAYERS_4
#define TESSEL_LAYERS_64 TESSEL_LAYERS_16, TESSEL_LAYERS_16, TESSEL_LAYERS_16, TESSEL_LAYERS_16

constexpr auto plan =
    shampoo::make_plan(shampoo::plan_options(1024_c, 1_c, 8), embedding, TESSEL_LAYERS_64);

#undef TESSEL_LAYERS_64
#undef TESSEL_LAYERS_16
#undef TESSEL_LAYERS_4
#undef TESSEL_LAYER

// 577 parameters; per layer 4 * 16 + 3 * 44 + 2 * 4 = 204 blocks, plus 32 * 4 for the embedding.
static_assert(plan.num_params() == 1 + 64 * 9);
static_assert(plan.num_blocks() == 128 + 64 * 204);
// Block shapes: 1024x1024, 256x1024 (the remainder of 32000), 1024x768 and 768x1024 (the
// remainder of 11008), and 1024 for the norms.
static_assert(plan.num_groups() == 5);
static_assert(plan.groups[1].shape == Extents{256, 1024} && plan.groups[1].count == 4);
static_assert(plan.blocks[0].rank == 0 && plan.blocks[1].rank == 1);
// Eight ranks share the blocks' f32 buffers evenly, to within one 4 MiB block.
static_assert(plan.rank_bytes(0) - plan.rank_bytes(7) <= 4 * 1024 * 1024);

}  // namespace

int main() {
  return static_cast<int>(plan.num_blocks() % 2);
}
