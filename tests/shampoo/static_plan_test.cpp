// A plan as a type (plan/static_plan.hpp): static_plan<plan> keeps make_plan's constexpr result,
// and the layouts the step's stages are instantiated with carry its constants as Int<>s (checked by
// static_assert: a group's block shape and state strides, a segment's grid and parameter strides).
// A Shampoo built from the static plan runs the same step as one built from the run-time plan,
// bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

// (32, 17) at 24: rows [0, 24) [24, 32); (4, 33): columns [0, 24) [24, 33).
constexpr auto plan = make_plan(plan_options(Int<24>{}, Int<1>{}, 1),
                                make_shape(Int<32>{}, Int<17>{}), make_shape(Int<4>{}, Int<33>{}));
using SP = static_plan<plan>;

static_assert(SP::num_groups == 4 && SP::num_segments == 4);
static_assert(SP::segments[1].group == 1 && SP::segments[1].offset == 24 * 17);

// Group 1 (blocks of (8, 17)): its state is (count, _8, _17) : (_136, _17, _1).
using L1 = group_layout_t<SP, 1>;
static_assert(std::is_same_v<L1, Layout<tuple<index_t, Int<8>, Int<17>>,
                                        tuple<Int<136>, Int<17>, Int<1>>>>);

// Segment 3 (parameter 1's (4, 9) block at column 24): the parameter seen as (grid, block) with
// strides (block * 33, 33, 1), every extent and stride a constant.
using S3 = static_segment_t<SP, 3>;
using P3 = decltype(S3{}.param_layout());
static_assert(std::is_same_v<P3, Layout<tuple<Int<1>, Int<1>, Int<4>, Int<9>>,
                                        tuple<Int<132>, Int<9>, Int<33>, Int<1>>>>);
static_assert(is_static_v<decltype(S3{}.state_layout().shape())> &&
              is_static_v<decltype(S3{}.state_layout().stride())> &&
              is_static_v<decltype(S3{}.slot_layout().stride())>);

// Run-time plans pad to rank 8 with index_t extents: one instantiation for every parameter rank.
static_assert(std::is_same_v<RuntimeSegment,
                             SegmentGeometry<RuntimeExtents, RuntimeExtents, RuntimeExtents>>);
static_assert(tuple_size_v<RuntimeExtents> == runtime_rank && !is_static_v<RuntimeExtents>);

template <class Opt>
std::vector<std::vector<float>> run(Opt& opt, int steps) {
  std::vector<std::vector<float>> params{std::vector<float>(32 * 17), std::vector<float>(4 * 33)};
  for (std::size_t p = 0; p < 2; ++p)
    for (std::size_t i = 0; i < params[p].size(); ++i)
      params[p][i] = static_cast<float>(std::sin(1.0 + static_cast<double>(i + 7 * p)));
  for (int t = 0; t < steps; ++t) {
    std::vector<std::vector<float>> grads;
    for (std::size_t p = 0; p < 2; ++p) {
      grads.emplace_back(params[p].size());
      for (std::size_t i = 0; i < grads[p].size(); ++i)
        grads[p][i] = static_cast<float>(std::cos(static_cast<double>(3 * i + 5 * p + t)));
    }
    std::vector<std::span<float>> ps(params.begin(), params.end());
    std::vector<std::span<float const>> gs(grads.begin(), grads.end());
    opt.step(ps, gs);
  }
  return params;
}

// Every pass over the parameters' blocks of a static plan runs over Int<> layouts; a run-time plan
// shares one geometry.
static_assert(std::is_same_v<segment_geometry_t<SP, 3>, S3>);
static_assert(std::is_same_v<segment_geometry_t<RuntimePlan>, RuntimeSegment>);

TEST(StaticPlan, RunsTheSameStepAsTheRunTimePlan) {
  Options o;
  o.grafting = adam_grafting();
  o.momentum = 0.9;
  o.weight_decay = 0.01;
  o.precondition_frequency = 2;
  Shampoo<float, SP> fixed(o);
  Shampoo<float> dynamic(plan, o);
  EXPECT_EQ(fixed.plan(), dynamic.plan());
  EXPECT_EQ(run(fixed, 4), run(dynamic, 4));
  EXPECT_EQ(fixed.state_dict(), dynamic.state_dict());
}

// The static segment passes with every option path: the plain update, L2 decay into the
// gradient, iterate averaging, and Nesterov momentum with decoupled decay.
TEST(StaticPlan, EveryUpdatePathRunsTheSameStepAsTheRunTimePlan) {
  std::vector<Options> paths(4);
  paths[1].weight_decay = 0.05;
  paths[1].weight_decay_type = WeightDecayType::l2;
  paths[2].averaging.type = AveragingType::schedule_free;
  paths[2].weight_decay = 0.01;
  paths[3].momentum = 0.5;
  paths[3].use_nesterov = true;
  paths[3].weight_decay = 0.01;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    paths[i].grafting = adagrad_grafting();
    Shampoo<float, SP> fixed(paths[i]);
    Shampoo<float> dynamic(plan, paths[i]);
    EXPECT_EQ(run(fixed, 3), run(dynamic, 3)) << "path " << i;
    EXPECT_EQ(fixed.state_dict(), dynamic.state_dict()) << "path " << i;
  }
}

}  // namespace
