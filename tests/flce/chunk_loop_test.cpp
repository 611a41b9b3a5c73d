// The chunk loop a call lowers to (flce/chunk_loop.hpp): a static-shape call's plan constants in
// the type of its loop and row body (static_asserts on lowered_t), run-time shapes through the
// same templates with index_t, and the same bits from every host executor and thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include <tessel/flce/forward.hpp>

#include "flce/harness.hpp"
#include "flce/reference.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;
using tessel::test::error_of;

template <class T, class... Extents>
using View = decltype(make_tensor(std::declval<T const*>(), make_shape(Extents{}...)));

// BT 24, H 8, V 40, all static, on the host: make_host_plan picks chunks of 2 rows (the largest
// power of two <= BT / 8), 12 chunks.
using StaticX = View<float, Int<24>, Int<8>>;
using StaticW = View<float, Int<40>, Int<8>>;
using StaticY = View<std::int64_t, Int<24>>;
using Static = lowered_t<StaticX, StaticW, StaticY, exec::Serial>;
using StaticPlan = StaticFlcePlan<24, 8, 40, 2>;

static_assert(std::is_same_v<Static::plan_type, StaticPlan>);
static_assert(std::is_same_v<decltype(Static::plan_type::batch_extent()), Int<24>>);
static_assert(std::is_same_v<decltype(Static::plan_type::hidden_extent()), Int<8>>);
static_assert(std::is_same_v<decltype(Static::plan_type::vocab_extent()), Int<40>>);
static_assert(std::is_same_v<decltype(Static::plan_type::rows_per_chunk()), Int<2>>);
static_assert(std::is_same_v<decltype(Static::plan_type::chunk_count()), Int<12>>);
// The row body (the CUDA row kernel's body too) carries V as a type, and the plan costs it no
// bytes: the kernel's parameters are pointers and scalars only.
static_assert(
    std::is_same_v<Static::row_body, ChunkRows<StaticPlan, float, float, float, std::int64_t>>);
static_assert(std::is_same_v<Static::row_body::vocab_type, Int<40>>);
static_assert(std::is_empty_v<StaticPlan>);
// Every host executor runs the same row body.
static_assert(
    std::is_same_v<lowered_t<StaticX, StaticW, StaticY, exec::Auto>::row_body, Static::row_body>);

// The host's one-exp row pass (flce/host_rows.hpp) keeps V static down to its exp and scale loops.
static_assert(std::is_same_v<Static::host_row_pass::vocab_type, Int<40>>);

// A plan given to forward with a static chunk size: the loop it runs is instantiated from it.
using StaticChunk8 = decltype(make_plan(Int<24>{}, Int<8>{}, Int<40>{}, Int<8>{}));
static_assert(std::is_same_v<StaticChunk8, StaticFlcePlan<24, 8, 40, 8>>);
static_assert(std::is_same_v<decltype(StaticChunk8::rows_per_chunk()), Int<8>>);
static_assert(std::is_same_v<decltype(StaticChunk8::chunk_count()), Int<3>>);

// 16-bit storage on the host: Eigen multiplies f32 copies, and the gradient overwrites the f32
// logits in place.
using Static16 = lowered_t<View<bfloat16, Int<24>, Int<8>>, View<bfloat16, Int<40>, Int<8>>,
                           StaticY, exec::Serial>;
static_assert(std::is_same_v<Static16::gemm_type, float>);
static_assert(std::is_same_v<Static16::gradient_type, float>);
static_assert(std::is_same_v<Static16::plan_type, StaticPlan>);

// Run-time shapes: the same templates with FlcePlan, whose extents are index_t.
using Dynamic = lowered_t<View<float, index_t, index_t>, View<float, index_t, index_t>,
                          View<std::int64_t, index_t>, exec::Serial>;
static_assert(std::is_same_v<Dynamic::plan_type, FlcePlan>);
static_assert(std::is_same_v<decltype(Dynamic::plan_type{}.vocab_extent()), index_t>);
static_assert(std::is_same_v<decltype(Dynamic::plan_type{}.chunk_count()), index_t>);
static_assert(std::is_same_v<Dynamic::row_body::vocab_type, index_t>);
static_assert(std::is_same_v<Dynamic::host_row_pass::vocab_type, index_t>);
// One run-time extent is enough to make the plan a run-time one.
static_assert(std::is_same_v<lowered_t<View<float, Int<24>, Int<8>>, View<float, index_t, Int<8>>,
                                       StaticY, exec::Serial>::plan_type,
                             FlcePlan>);

// Serial, OpenMP with 2 and 3 threads and Auto: bit for bit the same loss and gradients. The
// shapes split every GEMM into tiles (V = 700 and H = 160 exceed two 64-wide tiles) and use
// every option.
template <class T>
void expect_every_executor_gives_the_same_bits(Reduction reduction) {
  Problem const p = rounded<T>(random_problem(96, 160, 700, 31u, true, true, 0.1));
  ReferenceOptions o;
  o.reduction = reduction;
  o.label_smoothing = 0.1;
  o.lse_square_scale = 1e-3;
  o.softcap = 20.0;
  FlceRun const serial = run_tessel<T>(p, o, 0, {}, exec::Serial{});
  EXPECT_EQ(serial.plan.num_chunks, 12);
  EXPECT_TRUE(all_close(serial.loss, reference(p, o).loss, tolerance<T>()));
  auto expect_same = [&](FlceRun const& other, std::string const& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(other.loss, serial.loss);
    EXPECT_EQ(other.z_loss, serial.z_loss);
    EXPECT_EQ(other.grad_input, serial.grad_input);
    EXPECT_EQ(other.grad_weight, serial.grad_weight);
    EXPECT_EQ(other.grad_bias, serial.grad_bias);
  };
  expect_same(run_tessel<T>(p, o, 0, {}, exec::OpenMP{.threads = 2}), "OpenMP, 2 threads");
  expect_same(run_tessel<T>(p, o, 0, {}, exec::OpenMP{.threads = 3}), "OpenMP, 3 threads");
  expect_same(run_tessel<T>(p, o, 0, {}, exec::Auto{.parallel_threshold = 0}), "Auto, always");
  expect_same(run_tessel<T>(p, o, 0, {}, exec::Auto{}), "Auto");
}

TEST(FlceChunkLoop, EveryHostExecutorGivesTheSameBits) {
  for (Reduction r : {Reduction::mean, Reduction::none}) {
    SCOPED_TRACE(std::string(reduction_name(r)));
    expect_every_executor_gives_the_same_bits<float>(r);
    expect_every_executor_gives_the_same_bits<double>(r);
    expect_every_executor_gives_the_same_bits<bfloat16>(r);
  }
}

// A forced chunk size runs the FlcePlan instantiation, on static shapes too; the row body and the
// GEMMs see the same numbers, so the results are those of the static instantiation.
TEST(FlceChunkLoop, AForcedChunkSizeOnStaticShapesGivesTheStaticResults) {
  Problem const p = random_problem(24, 8, 40, 12u, true, true, 0.2);
  auto x = to_storage<float>(p.x), w = to_storage<float>(p.w), b = to_storage<float>(p.bias);
  auto cw = to_storage<float>(p.class_weights);
  auto run = [&](index_t chunk) {
    std::vector<float> loss(1), dx(24 * 8), dw(40 * 8), db(40);
    FlcePlan const plan = forward(make_tensor(x.data(), make_shape(Int<24>{}, Int<8>{})),
                                  make_tensor(w.data(), make_shape(Int<40>{}, Int<8>{})),
                                  make_tensor(p.target.data(), make_shape(Int<24>{})),
                                  {.label_smoothing = 0.1,
                                   .class_weights = make_tensor(cw.data(), make_shape(40)),
                                   .bias = make_tensor(b.data(), make_shape(40)),
                                   .chunk_size = chunk},
                                  {.loss = make_tensor(loss.data(), make_shape(1)),
                                   .grad_input = make_tensor(dx.data(), make_shape(24, 8)),
                                   .grad_weight = make_tensor(dw.data(), make_shape(40, 8)),
                                   .grad_bias = make_tensor(db.data(), make_shape(40))});
    return std::pair(plan, std::vector<std::vector<float>>{loss, dx, dw, db});
  };
  auto const [static_plan, static_results] = run(0);
  auto const [forced_plan, forced_results] = run(2);  // the static plan's chunk size, at run time
  EXPECT_EQ(static_plan, FlcePlan(StaticPlan{}));
  EXPECT_EQ(forced_plan, static_plan);
  EXPECT_EQ(forced_results, static_results);
}

// forward(plan, ...): a static plan with a forced chunk size (8 rows, not the heuristic's 2) gives
// the bits of the same chunk size forced at run time, on static and on run-time shapes; a plan
// for other shapes, and a chunk_size that contradicts the plan's, are refused before anything is
// written.
TEST(FlceChunkLoop, AStaticPlanWithItsOwnChunkSizeGivesTheRunTimeChunkSizesBits) {
  Problem const p = random_problem(24, 8, 40, 13u, true, true, 0.2);
  auto x = to_storage<float>(p.x), w = to_storage<float>(p.w), b = to_storage<float>(p.bias);
  auto const sx = make_tensor(x.data(), make_shape(Int<24>{}, Int<8>{}));
  auto const sw = make_tensor(w.data(), make_shape(Int<40>{}, Int<8>{}));
  auto const sy = make_tensor(p.target.data(), make_shape(Int<24>{}));
  auto const dx_ = make_tensor(x.data(), make_shape(index_t{24}, index_t{8}));
  auto const dw_ = make_tensor(w.data(), make_shape(index_t{40}, index_t{8}));
  auto const dy_ = make_tensor(p.target.data(), make_shape(index_t{24}));
  std::vector<float> loss(1), dx(24 * 8), dw(40 * 8);
  auto outputs = [&] {
    std::fill(dx.begin(), dx.end(), -1.0f);
    std::fill(dw.begin(), dw.end(), -1.0f);
    loss[0] = -1.0f;
    return Outputs<float>{.loss = make_tensor(loss.data(), make_shape(1)),
                          .grad_input = make_tensor(dx.data(), make_shape(24, 8)),
                          .grad_weight = make_tensor(dw.data(), make_shape(40, 8))};
  };
  auto results = [&] { return std::vector<std::vector<float>>{loss, dx, dw}; };
  Options<float> const bias{.bias = make_tensor(b.data(), make_shape(40))};
  Options<float> forced = bias;
  forced.chunk_size = 8;

  FlcePlan const runtime_plan = forward(sx, sw, sy, forced, outputs());
  auto const runtime_results = results();
  EXPECT_EQ(runtime_plan, FlcePlan(StaticChunk8{}));
  EXPECT_EQ(forward(StaticChunk8{}, sx, sw, sy, bias, outputs()), runtime_plan);
  EXPECT_EQ(results(), runtime_results);
  // The plan's own chunk size repeated in the options is no contradiction.
  EXPECT_EQ(forward(StaticChunk8{}, sx, sw, sy, forced, outputs()), runtime_plan);
  EXPECT_EQ(results(), runtime_results);
  // A static plan over run-time shapes, and a run-time plan: the same bits.
  EXPECT_EQ(forward(StaticChunk8{}, dx_, dw_, dy_, bias, outputs()), runtime_plan);
  EXPECT_EQ(results(), runtime_results);
  EXPECT_EQ(forward(FlcePlan(StaticChunk8{}), dx_, dw_, dy_, bias, outputs()), runtime_plan);
  EXPECT_EQ(results(), runtime_results);

  {
    // (No structured bindings here: clang 16 cannot capture them in a lambda under OpenMP.)
    auto const o = outputs();
    auto const before = results();
    auto const other = make_plan(index_t{24}, index_t{8}, index_t{41}, index_t{8});
    EXPECT_EQ(
        error_of([&] { forward(other, dx_, dw_, dy_, bias, o); }),
        "the FLCE plan is for BT 24, H 8 and V 41, but the call has BT 24, H 8 and V 40 (input "
        "(24,8), weight (40,8)).");
    EXPECT_EQ(results(), before);
  }
  {
    auto const o = outputs();
    auto const before = results();
    Options<float> contradicting = bias;
    contradicting.chunk_size = 4;
    EXPECT_EQ(error_of([&] { forward(StaticChunk8{}, sx, sw, sy, contradicting, o); }),
              "options.chunk_size is 4, but the plan given to forward has chunks of 8 rows; leave "
              "chunk_size at 0 when passing a plan.");
    EXPECT_EQ(results(), before);
  }
}

}  // namespace
