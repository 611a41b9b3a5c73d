// The stages of the Shampoo step on their own, run by the host executor (the host twin of every
// device stage: exec::Cuda runs the same assignments): a segment's gather (block views of the
// parameter against consecutive slots of the group), the filtered gradient, grafting state and
// direction, momentum and the parameter update, the eigenvalue map as an expression, and batched
// coupled Newton iterating each matrix exactly as it would alone. (The step tests check them again
// through the reference.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

TEST(StepStages, GatherMovesASegmentBetweenItsBlockViewsAndItsSlots) {
  auto plan =
      make_plan(PlanOptions<index_t, index_t>{2, 1, 1}, std::vector<std::vector<index_t>>{{3, 5}});
  // Blocks at (0,0) (0,2) (0,4) (2,0) (2,2) (2,4); blocks 0 and 1 are 2x2: group 0's slots 0, 1.
  auto const segs = segments(plan);
  ASSERT_EQ(segs.size(), 4u);
  SegmentPlan const& s = segs[0];
  EXPECT_EQ(s.group, 0);
  EXPECT_EQ(s.first_slot, 0);
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(to_vector(s.grid), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(to_vector(plan.block_offset(1)), (std::vector<std::int64_t>{0, 2}));
  auto const seg = runtime_segment(s, plan.groups[0].shape);
  std::vector<float> grad(15), param(15, 2.0f), out(3 * 4, -1.0f);
  for (int i = 0; i < 15; ++i) grad[static_cast<std::size_t>(i)] = static_cast<float>(i);
  stages::gather_gradient(exec::Serial{}, make_tensor(out.data(), seg.state_layout()),
                          make_tensor(grad.data(), seg.param_layout()),
                          make_tensor(param.data(), seg.param_layout()), 0.5f);
  // Slot 0: rows [0, 2) x columns [0, 2); slot 1 (block 1): columns [2, 4); grad + 0.5 * 2.
  EXPECT_EQ(out, (std::vector<float>{1, 2, 6, 7, 3, 4, 8, 9, -1, -1, -1, -1}))
      << "the segment writes its two slots and nothing else";
}

TEST(StepStages, FilteredGradientWithAndWithoutBeta3) {
  StepScalars<double> s;
  s.beta1 = s.beta3 = 0.9;
  s.inv_bias1 = 2.0;
  std::vector<double> state{1.0, 2.0}, grad{3.0, -2.0}, out(2);
  auto v = [](std::vector<double>& x) { return make_tensor(x.data(), make_shape(index_t(x.size()))); };
  stages::filter_gradient(exec::Serial{}, v(state), v(grad), v(out), s);
  EXPECT_DOUBLE_EQ(state[0], 0.9 * 1.0 + 0.1 * 3.0);
  EXPECT_DOUBLE_EQ(out[0], 2.0 * state[0]);
  std::vector<double> s2{1.0}, g2{3.0}, o2(1);
  s.beta3 = 0.5;
  s.inv_bias1 = 1.0;
  stages::filter_gradient(exec::Serial{}, v(s2), v(g2), v(o2), s);
  EXPECT_DOUBLE_EQ(o2[0], 0.5 * 1.0 + 0.5 * 3.0);  // from the old state
  EXPECT_DOUBLE_EQ(s2[0], 1.2);
}

TEST(StepStages, GraftingStateAndDirection) {
  StepScalars<double> s;
  s.grafting = {0.5, 0.25, 1.0 / 0.75, 0.1};
  std::vector<double> a{4.0}, g{2.0}, d(1);
  auto v = [](std::vector<double>& x) { return make_tensor(x.data(), make_shape(index_t(x.size()))); };
  stages::accumulate_grafting(exec::Serial{}, v(a), v(g), s);
  EXPECT_DOUBLE_EQ(a[0], 0.5 * 4.0 + 0.25 * 4.0);
  assign(v(d), grafting_direction(v(a), v(g), s.grafting), exec::Serial{});
  EXPECT_DOUBLE_EQ(d[0], 2.0 / (std::sqrt(3.0 / 0.75) + 0.1));
  // SGD: the same expression with SGD's constants and the gradient as its own accumulator.
  auto const sgd = grafting_scalars<double>(sgd_grafting(), 1);
  std::vector<double> odd{-3.25, 1e30, -0.0, 7e-300};
  std::vector<double> out(odd.size());
  assign(v(out), grafting_direction(v(odd), v(odd), sgd), exec::Serial{});
  EXPECT_EQ(out, odd) << "SGD grafts the gradient itself, bit for bit";
  EXPECT_TRUE(std::signbit(out[2]));
}

TEST(StepStages, UpdateWithDecayAndMomentum) {
  // One block of 2 at offset 1 of a parameter of 3.
  std::vector<double> param{9.0, 1.0, 2.0}, dir{0.5, -1.0}, m{1.0, 0.0}, scale{2.0};
  auto p = make_tensor(param.data() + 1, make_shape(index_t{2}));
  auto d = make_tensor(dir.data(), make_shape(index_t{2}));
  auto mm = make_tensor(m.data(), make_shape(index_t{2}));
  auto sc = make_tensor(scale.data(), make_layout(make_shape(index_t{2}), make_stride(Int<0>{})));
  StepScalars<double> s;
  s.decoupled = 0.1;
  s.momentum = 0.5;
  s.lr = 0.1;
  stages::advance_momentum(exec::Serial{}, mm, mm, d, sc, p, s);
  stages::apply_update(exec::Serial{}, p, stages::momentum_update(d, sc, p, mm, s), s.lr);
  // u = 2 * 0.5 + 0.1 * 1 = 1.1; m = 0.5 * 1 + 1.1 = 1.6; w = 1 - 0.1 * 1.6.
  EXPECT_DOUBLE_EQ(m[0], 1.6);
  EXPECT_DOUBLE_EQ(param[1], 1.0 - 0.16);
  EXPECT_EQ(param[0], 9.0);
  std::vector<double> w{1.0}, one{1.0}, m2{2.0}, unit{1.0};
  auto t = [](std::vector<double>& x) { return make_tensor(x.data(), make_shape(index_t{1})); };
  StepScalars<double> n;
  n.momentum = 0.5;
  n.dampening = 0.2;
  n.nesterov = true;
  n.lr = 1.0;
  stages::advance_momentum(exec::Serial{}, t(m2), t(m2), t(one), t(unit), t(w), n);
  stages::apply_update(exec::Serial{}, t(w), stages::momentum_update(t(one), t(unit), t(w), t(m2), n),
                       n.lr);
  // m = 0.5 * 2 + 0.8 * 1 = 1.8; nesterov u = 0.8 * 1 + 0.5 * 1.8 = 1.7.
  EXPECT_DOUBLE_EQ(m2[0], 1.8);
  EXPECT_DOUBLE_EQ(w[0], 1.0 - 1.7);
}

TEST(StepStages, EigenvalueMap) {
  EigenvalueMap m{2.0, 0.0, false, true, 0.0, 0.0};
  EXPECT_DOUBLE_EQ(map_eigenvalue(4.0, 1.0, 4.0, m), 0.5);
  m.epsilon = 0.5;  // lambda_min = -1 < 0.5: shift by 1 then add 0.5
  EXPECT_DOUBLE_EQ(map_eigenvalue(-1.0, -1.0, 3.0, m), 1.0 / std::sqrt(0.5));
  EXPECT_DOUBLE_EQ(map_eigenvalue(3.0, -1.0, 3.0, m), 1.0 / std::sqrt(4.5));
  m.perturb_before_computation = false;  // shift by -min(lambda_min, 0) then add epsilon
  EXPECT_DOUBLE_EQ(map_eigenvalue(3.0, 1.0, 3.0, m), 1.0 / std::sqrt(3.5));
  EigenvalueMap pinv{2.0, 0.0, true, true, 0.0, 0.5};
  EXPECT_EQ(map_eigenvalue(1.0, 0.0, 4.0, pinv), 0.0);  // 1 <= 0.5 * 4
  EXPECT_DOUBLE_EQ(map_eigenvalue(4.0, 0.0, 4.0, pinv), 0.5);
  // As an expression over a (matrices, eigenvalues) batch with per-matrix extremes broadcast.
  std::vector<float> L{1.0f, 16.0f}, lo{1.0f}, hi{16.0f};
  auto l = make_tensor(L.data(), make_shape(index_t{1}, index_t{2}));
  auto per_row = make_layout(make_shape(index_t{1}, index_t{2}), make_stride(index_t{1}, Int<0>{}));
  EigenvalueMap quarter{4.0, 0.0, false, true, 0.0, 0.0};
  assign(l, map(MapEigenvalue{quarter}, l, make_tensor(lo.data(), per_row), make_tensor(hi.data(), per_row)),
         exec::Serial{});
  EXPECT_EQ(L, (std::vector<float>{1.0f, 0.5f}));
}

TEST(StepStages, BatchedCoupledNewtonIteratesEachMatrixAsAlone) {
  // diag(1, 4) converges in a few iterations, a badly scaled matrix needs more: run as one batch,
  // each reports the iterations and result it has alone.
  std::vector<double> a{1, 0, 0, 4, 100, 1, 1, 0.02};
  RootConfig c;
  c.method = RootMethod::coupled_newton;
  std::vector<RootResult> alone(2);
  std::vector<double> x_alone(8);
  for (int b = 0; b < 2; ++b)
    alone[static_cast<std::size_t>(b)] =
        matrix_inverse_root<double>(a.data() + 4 * b, 2, 2.0, 0.0, c, x_alone.data() + 4 * b);
  ASSERT_NE(alone[0].iterations, alone[1].iterations);
  std::vector<RootResult> batch(2);
  std::vector<double> x(8);
  coupled_newton_inverse_roots<double>(
      exec::Serial{}, make_tensor(a.data(), make_shape(index_t{2}, index_t{2}, index_t{2})),
      make_tensor(x.data(), make_shape(index_t{2}, index_t{2}, index_t{2})), 2, 2, 2.0, 0.0,
      c.coupled_newton, std::span<RootResult>(batch));
  for (std::size_t b = 0; b < 2; ++b) {
    EXPECT_TRUE(batch[b].ok());
    EXPECT_EQ(batch[b].iterations, alone[b].iterations) << "matrix " << b;
    EXPECT_EQ(batch[b].error, alone[b].error) << "matrix " << b;
  }
  EXPECT_EQ(x, x_alone);
}

}  // namespace
