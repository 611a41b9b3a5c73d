// The host-device bodies, run with the host context: block geometry and gathering, the filtered
// gradient, grafting state and direction, the parameter update, the eigenvalue map and the
// coupled Newton pieces. (The step tests check them again through the reference.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <tessel/shampoo/root_bodies.hpp>
#include <tessel/shampoo/step_bodies.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

// A context that visits only odd indices: a body must touch exactly what its context hands it,
// as one thread of a grid-stride loop does.
struct OddContext {
  constexpr index_t first() const { return 1; }
  constexpr index_t stride() const { return 2; }
};

TEST(StepBodies, GeometryAndGatherFollowTheBlockInsideItsParameter) {
  auto plan =
      make_plan(PlanOptions<index_t, index_t>{2, 1, 1}, std::vector<std::vector<index_t>>{{3, 5}});
  // Blocks at (0,0) (0,2) (0,4) (2,0) (2,2) (2,4); block 1 is rows [0, 2), columns [2, 4).
  BlockGeometry g = block_geometry(plan, 1);
  EXPECT_EQ(to_vector(plan.block_offset(1)), (std::vector<std::int64_t>{0, 2}));
  EXPECT_EQ(g.numel, 2 * 2);
  EXPECT_EQ(g.param_offset(0), 0 * 5 + 2);
  EXPECT_EQ(g.param_offset(3), 1 * 5 + 3);
  std::vector<float> grad(15), param(15, 2.0f), out(4, -1.0f);
  for (int i = 0; i < 15; ++i) grad[static_cast<std::size_t>(i)] = static_cast<float>(i);
  gather_gradient(HostContext{}, g, grad.data(), param.data(), 0.5f, out.data());
  EXPECT_EQ(out, (std::vector<float>{3, 4, 8, 9}));  // grad + 0.5 * 2
  std::vector<float> odd(4, -1.0f);
  gather_gradient(OddContext{}, g, grad.data(), param.data(), 0.0f, odd.data());
  EXPECT_EQ(odd, (std::vector<float>{-1, 3, -1, 8}));
}

TEST(StepBodies, FilteredGradientWithAndWithoutBeta3) {
  std::vector<double> state{1.0, 2.0}, grad{3.0, -2.0}, out(2);
  filter_gradient(HostContext{}, 2, state.data(), grad.data(), 0.9, 0.9, 2.0, out.data());
  EXPECT_DOUBLE_EQ(state[0], 0.9 * 1.0 + 0.1 * 3.0);
  EXPECT_DOUBLE_EQ(out[0], 2.0 * state[0]);
  std::vector<double> s2{1.0}, g2{3.0}, o2(1);
  filter_gradient(HostContext{}, 1, s2.data(), g2.data(), 0.9, 0.5, 1.0, o2.data());
  EXPECT_DOUBLE_EQ(o2[0], 0.5 * 1.0 + 0.5 * 3.0);  // from the old state
  EXPECT_DOUBLE_EQ(s2[0], 1.2);
}

TEST(StepBodies, GraftingStateAndDirection) {
  std::vector<double> a{4.0}, g{2.0}, d(1);
  accumulate_grafting(HostContext{}, 1, a.data(), g.data(), 0.5, 0.25);
  EXPECT_DOUBLE_EQ(a[0], 0.5 * 4.0 + 0.25 * 4.0);
  grafting_direction(HostContext{}, 1, a.data(), g.data(), 1.0 / 0.75, 0.1, d.data());
  EXPECT_DOUBLE_EQ(d[0], 2.0 / (std::sqrt(3.0 / 0.75) + 0.1));
}

TEST(StepBodies, UpdateWithDecayAndMomentum) {
  BlockGeometry g{};
  g.rank = 1;
  g.numel = 2;
  g.shape[0] = 2;
  g.offset[0] = 1;
  g.stride[0] = 1;
  std::vector<double> param{9.0, 1.0, 2.0}, dir{0.5, -1.0}, m{1.0, 0.0};
  update_parameter(HostContext{}, g, param.data(), dir.data(), 2.0, 0.1, m.data(), 0.5, 0.0, false,
                   0.1);
  // p = 2 * 0.5 + 0.1 * 1 = 1.1; m = 0.5 * 1 + 1.1 = 1.6; w = 1 - 0.1 * 1.6.
  EXPECT_DOUBLE_EQ(m[0], 1.6);
  EXPECT_DOUBLE_EQ(param[1], 1.0 - 0.16);
  EXPECT_EQ(param[0], 9.0);
  std::vector<double> w{1.0}, p{1.0}, mm{2.0};
  BlockGeometry one{};
  one.rank = 1;
  one.numel = 1;
  one.shape[0] = 1;
  one.stride[0] = 1;
  update_parameter(HostContext{}, one, w.data(), p.data(), 1.0, 0.0, mm.data(), 0.5, 0.2, true,
                   1.0);
  // m = 0.5 * 2 + 0.8 * 1 = 1.8; nesterov p = 0.8 * 1 + 0.5 * 1.8 = 1.7.
  EXPECT_DOUBLE_EQ(w[0], 1.0 - 1.7);
}

TEST(RootBodies, EigenvalueMap) {
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
  std::vector<float> L{1.0f, 16.0f};
  EigenvalueMap quarter{4.0, 0.0, false, true, 0.0, 0.0};
  map_eigenvalues(HostContext{}, 2, L.data(), 1.0f, 16.0f, quarter);
  EXPECT_EQ(L, (std::vector<float>{1.0f, 0.5f}));
}

TEST(RootBodies, NewtonPieces) {
  std::vector<double> M{2.0, 1.0, 1.0, 3.0}, out(4);
  newton_affine(HostContext{}, 2, M.data(), -0.5, out.data());
  EXPECT_EQ(out, (std::vector<double>{-1.0 + 1.5, -0.5, -0.5, -1.5 + 1.5}));
  EXPECT_EQ(distance_to_identity(M.data(), 2, 0), 1.0);
  EXPECT_EQ(distance_to_identity(M.data(), 2, 1), 1.0);
  EXPECT_EQ(distance_to_identity(M.data(), 2, 3), 2.0);
}

}  // namespace
