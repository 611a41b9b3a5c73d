// Parameter groups: a GroupedShampoo equals, bit for bit, one Shampoo per group over that group's
// parameters; its sentences and state keys use the caller's parameter indices; a refusal in one
// group changes no group; and its construction and state checks name the group or parameter.
// Also parameters without a gradient (skipped, as Distributed Shampoo skips `grad is None`), for
// Shampoo and GroupedShampoo.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/param_groups.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using tessel::test::error_of;

std::vector<float> random_values(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::size_t numel(std::vector<index_t> const& shape) {
  std::size_t n = 1;
  for (index_t e : shape) n *= static_cast<std::size_t>(e);
  return n;
}

// A model: a (6, 4) matrix and a (4, 6) matrix with spectral descent, a (4) bias and a (3, 2)
// embedding with Shampoo and Adam grafting at another lr.
std::vector<std::vector<index_t>> const shapes{{6, 4}, {4}, {4, 6}, {3, 2}};

std::vector<ParamGroup> model_groups() {
  ParamGroup matrices{{0, 2}, {}, 1024, 2};
  matrices.options.preconditioner = PreconditionerType::spectral_descent;
  matrices.options.lr = 0.02;
  ParamGroup rest{{3, 1}, {}, 4, 1};
  rest.options.grafting = adam_grafting();
  rest.options.lr = 0.005;
  return {matrices, rest};
}

// The reference of a GroupedShampoo: one Shampoo per group over that group's parameters.
std::vector<std::unique_ptr<Shampoo<float>>> one_optimizer_per_group(
    std::vector<ParamGroup> const& groups) {
  std::vector<std::unique_ptr<Shampoo<float>>> alone;
  for (auto const& pg : groups) {
    std::vector<std::vector<index_t>> s;
    for (index_t p : pg.params) s.push_back(shapes[static_cast<std::size_t>(p)]);
    alone.push_back(std::make_unique<Shampoo<float>>(
        make_plan(PlanOptions<index_t, index_t>{pg.max_preconditioner_dim,
                                                pg.target_parameter_dimensionality, 1},
                  s),
        pg.options));
  }
  return alone;
}

// One step of each of them on its own parameters (w, g: all parameters, in the shapes' order).
void step_each_group(std::vector<std::unique_ptr<Shampoo<float>>> const& alone,
                     std::vector<ParamGroup> const& groups, std::vector<std::vector<float>>& w,
                     std::vector<std::span<float const>> const& g) {
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    std::vector<std::span<float>> ps;
    std::vector<std::span<float const>> gs;
    for (index_t p : groups[gi].params) {
      ps.emplace_back(w[static_cast<std::size_t>(p)]);
      gs.push_back(g[static_cast<std::size_t>(p)]);
    }
    alone[gi]->step(ps, gs);
  }
}

TEST(ParamGroups, EqualOneShampooPerGroupAndKeyTheStateByTheCallersIndices) {
  std::vector<std::vector<float>> w, g;
  for (std::size_t p = 0; p < shapes.size(); ++p)
    w.push_back(random_values(numel(shapes[p]), 1 + p));
  GroupedShampoo<float> grouped(shapes, model_groups());
  auto const groups = model_groups();
  auto const alone = one_optimizer_per_group(groups);
  auto w_alone = w;
  for (unsigned t = 0; t < 3; ++t) {
    g.clear();
    for (std::size_t p = 0; p < shapes.size(); ++p)
      g.push_back(random_values(numel(shapes[p]), 100 * t + p, 0.1f));
    std::vector<std::span<float const>> const gs(g.begin(), g.end());
    grouped.step(std::vector<std::span<float>>(w.begin(), w.end()), gs);
    step_each_group(alone, groups, w_alone, gs);
  }
  EXPECT_EQ(w, w_alone);
  EXPECT_EQ(grouped.step_count(), 3);
  // Keys: parameter 3 (the embedding) is the first of group 1 but keeps its index.
  StateDict const state = grouped.state_dict();
  EXPECT_TRUE(state.contains({"3", "block_0", "adagrad"}));
  EXPECT_TRUE(state.contains({"1", "step"}));
  EXPECT_TRUE(state.contains({"2", "block_0", "filtered_grad"}));
  EXPECT_FALSE(state.contains({"0", "block_0", "shampoo", "factor_matrices", "0"}));
  // Round trip into a fresh optimizer, then one more step on both: the same parameters.
  GroupedShampoo<float> resumed(shapes, model_groups());
  resumed.load_state_dict(state);
  EXPECT_TRUE(resumed.state_dict() == state);
  auto w2 = w;
  grouped.step(std::vector<std::span<float>>(w.begin(), w.end()),
               std::vector<std::span<float const>>(g.begin(), g.end()));
  resumed.step(std::vector<std::span<float>>(w2.begin(), w2.end()),
               std::vector<std::span<float const>>(g.begin(), g.end()));
  EXPECT_EQ(w, w2);
}

// The model's groups with their plans as types: group 0's (6, 4) and (4, 6) matrices at 1024
// (dimensionality 2), group 1's (3, 2) embedding and (4) bias at 4. Momentum and decoupled weight
// decay (decoupled, the default) in group 1, so that the update passes with momentum are compared
// too.
constexpr auto matrices_plan =
    make_plan(plan_options(Int<1024>{}, Int<2>{}, 1), make_shape(Int<6>{}, Int<4>{}),
              make_shape(Int<4>{}, Int<6>{}));
constexpr auto rest_plan = make_plan(plan_options(Int<4>{}, Int<1>{}, 1),
                                     make_shape(Int<3>{}, Int<2>{}), make_shape(Int<4>{}));

std::vector<ParamGroup> model_groups_with_momentum() {
  auto groups = model_groups();
  groups[1].options.momentum = 0.9;
  groups[1].options.weight_decay = 0.01;
  return groups;
}

TEST(ParamGroups, StaticPlansPerGroupGiveTheRunTimePlansBits) {
  std::vector<std::vector<float>> w;
  for (std::size_t p = 0; p < shapes.size(); ++p)
    w.push_back(random_values(numel(shapes[p]), 1 + p));
  auto w_static = w;
  GroupedShampoo<float> runtime(shapes, model_groups_with_momentum());
  GroupedShampoo<float> fixed(shapes, model_groups_with_momentum(), {},
                              static_plan<matrices_plan>{}, static_plan<rest_plan>{});
  for (unsigned t = 0; t < 4; ++t) {
    std::vector<std::vector<float>> g;
    for (std::size_t p = 0; p < shapes.size(); ++p)
      g.push_back(random_values(numel(shapes[p]), 100 * t + p, 0.1f));
    std::vector<std::span<float const>> const gs(g.begin(), g.end());
    runtime.step(std::vector<std::span<float>>(w.begin(), w.end()), gs);
    fixed.step(std::vector<std::span<float>>(w_static.begin(), w_static.end()), gs);
  }
  EXPECT_EQ(w_static, w);
  EXPECT_TRUE(fixed.state_dict() == runtime.state_dict());

  // A plan that is not the group's, and a plan count that is not the group count, are refused.
  EXPECT_EQ(error_of([&] {
              GroupedShampoo<float>(shapes, model_groups(), {}, static_plan<rest_plan>{},
                                    static_plan<rest_plan>{});
            }),
            "parameter group 0: its static plan is not the plan of its parameters' shapes and "
            "blocking; make it with make_plan from the same shapes, max_preconditioner_dim and "
            "target_parameter_dimensionality.");
  EXPECT_EQ(error_of([&] {
              GroupedShampoo<float>(shapes, model_groups(), {}, static_plan<matrices_plan>{});
            }),
            "GroupedShampoo got 1 static plans for 2 parameter groups; give one plan per group.");
}

TEST(ParamGroups, ARefusalInOneGroupChangesNoGroupAndNamesTheCallersParameter) {
  auto groups = model_groups();
  groups[1].options.factor_matrix_dtype = DType::f16;
  GroupedShampoo<float> grouped(shapes, groups);
  std::vector<std::vector<float>> w, g;
  for (std::size_t p = 0; p < shapes.size(); ++p) {
    w.push_back(random_values(numel(shapes[p]), 1 + p));
    g.push_back(random_values(numel(shapes[p]), 7 + p, 0.1f));
  }
  g[1][2] = 300.0f;  // 90000 on the f16 factor of parameter 1 (the bias), group 1's second
  auto const w0 = w;
  auto const state0 = grouped.state_dict();
  EXPECT_EQ(error_of([&] {
              grouped.step(std::vector<std::span<float>>(w.begin(), w.end()),
                           std::vector<std::span<float const>>(g.begin(), g.end()));
            }),
            "factor matrix 0 of parameter 1, block 0 would overflow at step 1: its largest entry "
            "could reach 90000 (1 times the old entry plus 1 times the gradient's part, whose "
            "squared row norms along mode 0 reach 90000), more than f16 holds (65504); nothing "
            "was changed.");
  EXPECT_EQ(w, w0);  // group 0's matrices did not move either
  EXPECT_TRUE(grouped.state_dict() == state0);
  EXPECT_EQ(grouped.step_count(), 0);
  g[1][2] = std::nanf("");
  EXPECT_EQ(error_of([&] {
              grouped.step(std::vector<std::span<float>>(w.begin(), w.end()),
                           std::vector<std::span<float const>>(g.begin(), g.end()));
            }),
            "the gradient of parameter 1 has the value nan at element 2; gradients must be "
            "finite.");
  EXPECT_EQ(w, w0);
}

TEST(ParamGroups, AnSvdThatFailsInALaterGroupMovesNoGroup) {
  // Spectral descent by SVD in the group that steps last, on a finite gradient whose squares
  // overflow double: eigh refuses its Gram matrix. The direction is computed while the groups
  // accumulate, so the refusal comes before the first group's parameters move.
  auto groups = model_groups();
  std::swap(groups[0], groups[1]);
  groups[1].options.orthogonalization = OrthogonalizationMethod::svd;
  GroupedShampoo<double> grouped(shapes, groups);
  std::vector<std::vector<double>> w, g;
  for (std::size_t p = 0; p < shapes.size(); ++p) {
    auto const wp = random_values(numel(shapes[p]), 1 + p);
    auto const gp = random_values(numel(shapes[p]), 7 + p, 0.1f);
    w.emplace_back(wp.begin(), wp.end());
    g.emplace_back(gp.begin(), gp.end());
  }
  std::fill(g[2].begin(), g[2].end(), 1e200);
  g[2][3] = -2e200;
  auto const w0 = w;
  EXPECT_EQ(error_of([&] {
              grouped.step(std::vector<std::span<double>>(w.begin(), w.end()),
                           std::vector<std::span<double const>>(g.begin(), g.end()));
            }),
            "the SVD orthogonalization of parameter 2, block 0 failed: eigh did not converge on "
            "its Gram matrix (a gradient whose squares overflow f64 does this).");
  EXPECT_EQ(w, w0);  // group 0's embedding and bias did not move either
}

TEST(ParamGroups, ConstructionAndStateErrorsNameTheGroupOrParameter) {
  auto g = model_groups();
  g[1].params = {3};
  EXPECT_EQ(error_of([&] { GroupedShampoo<float> o(shapes, g); }),
            "parameter 1 is in no parameter group; every parameter belongs to exactly one group.");
  g[1].params = {3, 1, 0};
  EXPECT_EQ(error_of([&] { GroupedShampoo<float> o(shapes, g); }),
            "parameter 0 is in parameter groups 0 and 1; every parameter belongs to exactly one "
            "group.");
  g[1].params = {3, 1, 7};
  EXPECT_EQ(error_of([&] { GroupedShampoo<float> o(shapes, g); }),
            "parameter group 1 names parameter 7, but there are 4 parameters.");
  g[1].params = {};
  EXPECT_EQ(error_of([&] { GroupedShampoo<float> o(shapes, g); }),
            "parameter group 1 has no parameters.");
  g = model_groups();
  g[0].params = {0, 1, 2};  // the bias cannot be orthogonalized
  g[1].params = {3};
  EXPECT_EQ(error_of([&] { GroupedShampoo<float> o(shapes, g); }),
            "parameter group 0: spectral descent orthogonalizes 2-D blocks, but parameter 1, "
            "block 0 has shape (4); with target_parameter_dimensionality 2 every parameter of "
            "rank 2 or more merges to 2-D blocks, and 0-D and 1-D parameters cannot be "
            "orthogonalized.");
  g = model_groups();
  g[1].options.beta1 = 1.5;
  EXPECT_EQ(error_of([&] { GroupedShampoo<float> o(shapes, g); }),
            "parameter group 1: beta1 must be in [0, 1), got 1.5.");
  GroupedShampoo<float> o(shapes, model_groups());
  StateDict state = o.state_dict();
  state[{"9", "step"}] = state.at({"1", "step"});
  EXPECT_EQ(error_of([&] { o.load_state_dict(state); }),
            "the state has the key [\"9\",\"step\"], which names no parameter of the 4 in this "
            "optimizer.");
  state = o.state_dict();
  state.erase({"3", "block_0", "adagrad"});
  EXPECT_EQ(error_of([&] { o.load_state_dict(state); }).substr(0, 39),
            "parameter group 1: the state has no key");
  std::vector<std::vector<float>> w(4), gr(4);
  EXPECT_EQ(error_of([&] {
              o.step(std::vector<std::span<float>>(w.begin(), w.begin() + 3),
                     std::vector<std::span<float const>>(gr.begin(), gr.end()));
            }),
            "step got 3 parameters and 4 gradients but the optimizer has 4 parameters.");
}

TEST(ParamGroups, GroupsShareOneStepAndParamKeysMustNameEveryParameter) {
  GroupedShampoo<float> o(shapes, model_groups());
  StateDict state = o.state_dict();
  std::int64_t const two = 2;
  for (char const* p : {"3", "1"})  // group 1's parameters: consistent within the group
    std::memcpy(state.at({p, "step"}).data.data(), &two, sizeof two);
  EXPECT_EQ(error_of([&] { o.load_state_dict(state); }),
            "the state's step of parameter group 1 is 2 but group 0's is 0; all groups share one "
            "step.");
  auto plan = make_plan(PlanOptions<index_t, index_t>{4, 1, 1},
                        std::vector<std::vector<index_t>>{{3}, {2}});
  EXPECT_EQ(error_of([&] { Shampoo<float> s(plan, {}, {}, ParamKeys{{5}}); }),
            "ParamKeys names 1 parameters but the plan has 2.");
}

// ---- parameters without a gradient ----

Options skipping_options() {
  Options o;
  o.lr = 0.01;
  o.beta2 = 0.99;
  o.beta1 = 0.9;
  o.momentum = 0.5;
  o.weight_decay = 0.01;
  o.precondition_frequency = 2;  // step 2 computes roots: the skipped blocks keep theirs
  o.start_preconditioning_step = 2;
  o.grafting = adam_grafting();
  return o;
}

Plan plan_of(std::vector<std::vector<index_t>> const& s) {
  return make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, s);
}

// The entries of parameter `key` (all but its step count).
StateDict entries_of(StateDict const& state, std::string const& key) {
  StateDict out;
  for (auto const& [k, v] : state)
    if (k.front() == key && k.back() != "step") out[k] = v;
  return out;
}

TEST(SkippedParameters, KeepTheirStateAndValuesWhileTheStepCountAdvances) {
  // Parameter 2 has no gradient at step 2. Shapes 0 and 2 block alike ((4, 4) blocks of the same
  // group), so skipping has to work slot by slot inside a batch.
  std::vector<std::vector<index_t>> const s{{6, 4}, {4}, {4, 6}, {5, 3}};
  Shampoo<float> opt(plan_of(s), skipping_options());
  std::vector<std::vector<float>> w;
  for (std::size_t p = 0; p < s.size(); ++p) w.push_back(random_values(numel(s[p]), 11 + p));
  auto grads = [&](unsigned t) {
    std::vector<std::vector<float>> g;
    for (std::size_t p = 0; p < s.size(); ++p)
      g.push_back(random_values(numel(s[p]), 50 * t + p, 0.1f));
    return g;
  };
  // The references: the other parameters alone (they never miss a step), and parameter 2 alone
  // with its step count moved past the skipped step through its state dictionary.
  std::vector<std::vector<index_t>> const others{s[0], s[1], s[3]};
  Shampoo<float> rest(plan_of(others), skipping_options());
  Shampoo<float> two(plan_of({s[2]}), skipping_options());
  std::vector<std::vector<float>> w_rest{w[0], w[1], w[3]};
  std::vector<float> w_two = w[2];
  for (unsigned t = 1; t <= 3; ++t) {
    auto const g = grads(t);
    std::vector<std::span<float const>> gs(g.begin(), g.end());
    if (t == 2) gs[2] = {};  // no gradient
    auto const before = opt.state_dict();
    auto const w2 = w[2];
    opt.step(std::vector<std::span<float>>(w.begin(), w.end()), gs);
    rest.step(std::vector<std::span<float>>(w_rest.begin(), w_rest.end()),
              std::vector<std::span<float const>>{g[0], g[1], g[3]});
    if (t == 2) {
      EXPECT_EQ(w[2], w2);
      EXPECT_TRUE(entries_of(opt.state_dict(), "2") == entries_of(before, "2"));
      StateDict moved = two.state_dict();
      std::int64_t const step = 2;
      std::memcpy(moved.at({"0", "step"}).data.data(), &step, sizeof step);
      two.load_state_dict(moved);
    } else {
      two.step(std::vector<std::span<float>>{w_two}, std::vector<std::span<float const>>{g[2]});
    }
  }
  EXPECT_EQ(opt.step_count(), 3);
  EXPECT_EQ(w[0], w_rest[0]);
  EXPECT_EQ(w[1], w_rest[1]);
  EXPECT_EQ(w[3], w_rest[2]);
  EXPECT_EQ(w[2], w_two);
}

TEST(SkippedParameters, AStepWithoutAnyGradientOnlyCountsAndPointersSkipToo) {
  std::vector<std::vector<index_t>> const s{{6, 4}, {4}};
  Shampoo<float> opt(plan_of(s), skipping_options());
  std::vector<std::vector<float>> w{random_values(24, 1), random_values(4, 2)};
  auto const g0 = random_values(24, 3, 0.1f), g1 = random_values(4, 4, 0.1f);
  opt.step({w[0].data(), w[1].data()}, {g0.data(), g1.data()});
  auto const w1 = w;
  auto const state1 = opt.state_dict();
  opt.step({w[0].data(), w[1].data()}, {nullptr, nullptr});
  EXPECT_EQ(w, w1);
  EXPECT_EQ(opt.step_count(), 2);
  EXPECT_TRUE(entries_of(opt.state_dict(), "0") == entries_of(state1, "0"));
  EXPECT_TRUE(entries_of(opt.state_dict(), "1") == entries_of(state1, "1"));
  opt.step({w[0].data(), w[1].data()}, {g0.data(), nullptr});
  EXPECT_NE(w[0], w1[0]);
  EXPECT_EQ(w[1], w1[1]);
}

TEST(SkippedParameters, AreRefusedWhereAStepCannotSkip) {
  std::vector<std::vector<index_t>> const s{{6, 4}, {4}};
  std::vector<std::vector<float>> w{random_values(24, 1), random_values(4, 2)};
  auto const g0 = random_values(24, 3, 0.1f);
  Shampoo<float> opt(plan_of(s), skipping_options());
  std::vector<float> updates(static_cast<std::size_t>(opt.update_numel()));
  EXPECT_EQ(error_of([&] {
              opt.compute_updates(std::vector<std::span<float>>(w.begin(), w.end()),
                                  std::vector<std::span<float const>>{g0, {}}, updates);
            }),
            "compute_updates needs the gradient of every parameter, but parameter 1 has none; "
            "only step() skips the blocks of a parameter without a gradient.");
  EXPECT_EQ(error_of([&] {
              opt.compute_updates({w[0].data(), w[1].data()}, {nullptr, g0.data()}, updates.data());
            }),
            "compute_updates needs the gradient of every parameter, but parameter 0 has none; "
            "only step() skips the blocks of a parameter without a gradient.");
  // Iterate averaging starts z at the parameters on the first step: it needs them all then.
  Options o = skipping_options();
  o.momentum = 0.0;
  o.averaging.type = AveragingType::generalized_primal;
  Shampoo<float> averaged(plan_of(s), o);
  auto const w0 = w;
  EXPECT_EQ(error_of([&] {
              averaged.step({w[0].data(), w[1].data()}, {g0.data(), nullptr});
            }),
            "with iterate averaging the first step needs the gradient of every parameter (it "
            "starts each block's sequence z at the parameter's values), but parameter 1 has "
            "none.");
  EXPECT_EQ(w, w0);
  EXPECT_EQ(averaged.step_count(), 0);
  auto const g1 = random_values(4, 4, 0.1f);
  averaged.step({w[0].data(), w[1].data()}, {g0.data(), g1.data()});
  auto const w1 = w;
  averaged.step({w[0].data(), w[1].data()}, {g0.data(), nullptr});  // later steps may skip
  EXPECT_EQ(w[1], w1[1]);
  EXPECT_NE(w[0], w1[0]);
}

TEST(SkippedParameters, GroupedShampooSkipsThemInEveryGroup) {
  // Parameter 1 (group 1) and parameter 2 (group 0) miss step 2: the grouped optimizer equals
  // one Shampoo per group that skips the same parameters.
  GroupedShampoo<float> grouped(shapes, model_groups());
  auto const groups = model_groups();
  auto const alone = one_optimizer_per_group(groups);
  std::vector<std::vector<float>> w;
  for (std::size_t p = 0; p < shapes.size(); ++p)
    w.push_back(random_values(numel(shapes[p]), 21 + p));
  auto w_alone = w;
  for (unsigned t = 1; t <= 3; ++t) {
    std::vector<std::vector<float>> g;
    for (std::size_t p = 0; p < shapes.size(); ++p)
      g.push_back(random_values(numel(shapes[p]), 70 * t + p, 0.1f));
    std::vector<std::span<float const>> gs(g.begin(), g.end());
    if (t == 2) gs[1] = gs[2] = {};
    auto const w_before = w;
    grouped.step(std::vector<std::span<float>>(w.begin(), w.end()), gs);
    if (t == 2) {
      EXPECT_EQ(w[1], w_before[1]);
      EXPECT_EQ(w[2], w_before[2]);
    }
    step_each_group(alone, groups, w_alone, gs);
  }
  EXPECT_EQ(w, w_alone);
  EXPECT_EQ(grouped.step_count(), 3);
}

}  // namespace
