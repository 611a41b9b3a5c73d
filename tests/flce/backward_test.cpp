// flce::backward: rescaling the gradients forward computed equals computing them with that
// upstream gradient in the first place.
#include <gtest/gtest.h>

#include <vector>

#include <tessel/flce/backward.hpp>
#include <tessel/flce/forward.hpp>

#include "flce/harness.hpp"
#include "flce/reference.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;

template <class T>
class FlceBackward : public ::testing::Test {};
using StorageTypes = ::testing::Types<double, float, half, bfloat16>;
TYPED_TEST_SUITE(FlceBackward, StorageTypes);

TYPED_TEST(FlceBackward, AScalarGradOutputScalesEveryGradient) {
  using T = TypeParam;
  using C = accum_t<T>;
  Problem const p = rounded<T>(random_problem(20, 9, 33, 41u, true, true, 0.2));
  ReferenceOptions o;
  o.label_smoothing = 0.1;
  o.lse_square_scale = 1e-2;
  auto x = to_storage<T>(p.x), w = to_storage<T>(p.w), b = to_storage<T>(p.bias);
  auto cw = to_storage<T>(p.class_weights);
  std::vector<C> loss(1), dw(33 * 9), db(33);
  std::vector<T> dx(20 * 9);
  Outputs<T> const out{.loss = make_tensor(loss.data(), make_shape(1)),
                       .grad_input = make_tensor(dx.data(), make_shape(20, 9)),
                       .grad_weight = make_tensor(dw.data(), make_shape(33, 9)),
                       .grad_bias = make_tensor(db.data(), make_shape(33))};
  forward(make_tensor(x.data(), make_shape(20, 9)), make_tensor(w.data(), make_shape(33, 9)),
          make_tensor(p.target.data(), make_shape(20)),
          {.label_smoothing = 0.1,
           .lse_square_scale = 1e-2,
           .class_weights = make_tensor(cw.data(), make_shape(33)),
           .bias = make_tensor(b.data(), make_shape(33))},
          out);
  C const loss_before = loss[0];
  backward(-3.0, out);
  EXPECT_EQ(loss[0], loss_before);
  o.grad_output = -3.0;
  ReferenceResult const want = reference(p, o);
  // One more rounding for the 16-bit grad_input (it is rounded, scaled, rounded again).
  Tolerance tol = tolerance<T>();
  if (is_narrow_v<T>) tol.rtol *= 2;
  EXPECT_TRUE(all_close(to_double(dx), want.grad_input, tol));
  EXPECT_TRUE(all_close(to_double(dw), want.grad_weight, tol));
  EXPECT_TRUE(all_close(to_double(db), want.grad_bias, tol));
}

TEST(FlceBackward, GradOutputOneChangesNothing) {
  std::vector<float> dx = {1.5f, -2.0f, 0.1f, 7.0f};
  auto const before = dx;
  backward(1.0, Outputs<float>{.grad_input = make_tensor(dx.data(), make_shape(2, 2))});
  EXPECT_EQ(dx, before);
}

TEST(FlceBackward, PerRowGradOutputScalesGradInputLikeForwardWithGradOutputRows) {
  Problem const p = random_problem(16, 6, 21, 43u, false, true, 0.2);
  ReferenceOptions o;
  o.reduction = Reduction::none;
  o.label_smoothing = 0.1;
  Wanted dx_only;
  dx_only.grad_weight = dx_only.grad_bias = false;
  FlceRun const unit = run_tessel<float>(p, o, 0, dx_only);

  std::vector<float> dx(unit.grad_input.begin(), unit.grad_input.end());
  std::vector<float> rows;
  for (int i = 0; i < 16; ++i) rows.push_back(0.5f * static_cast<float>(i) - 3.0f);
  backward(make_tensor(rows.data(), make_shape(16)),
           Outputs<float>{.grad_input = make_tensor(dx.data(), make_shape(16, 6))});

  o.grad_output_rows.assign(rows.begin(), rows.end());
  EXPECT_TRUE(all_close(to_double(dx), reference(p, o).grad_input, tolerance<float>()));
}

}  // namespace
