// The float64 reference itself: its hand-derived gradients agree with central finite differences
// of its loss, with every option on, for every reduction; and its loss follows PyTorch's formula
// on an example small enough to write out.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "flce/reference.hpp"

namespace {

using namespace tessel::flce;
using namespace tessel::flce::test;

// sum_i dy_i loss_i for none (what the per-row gradients are of), the scalar loss otherwise.
double objective(Problem const& p, ReferenceOptions const& o) {
  ReferenceResult const r = reference(p, o);
  if (o.reduction != Reduction::none) return o.grad_output * r.loss[0];
  double s = 0;
  for (std::size_t i = 0; i < r.loss.size(); ++i)
    s += (o.grad_output_rows.empty() ? o.grad_output : o.grad_output_rows[i]) * r.loss[i];
  return s;
}

void expect_gradient(Problem const& p, ReferenceOptions const& o,
                     std::vector<double> Problem::*field, std::vector<double> const& analytic,
                     char const* name) {
  double const step = 1e-6;
  for (std::size_t k = 0; k < analytic.size(); ++k) {
    Problem up = p, down = p;
    (up.*field)[k] += step;
    (down.*field)[k] -= step;
    double const numeric = (objective(up, o) - objective(down, o)) / (2 * step);
    ASSERT_NEAR(analytic[k], numeric, 1e-7 + 1e-6 * std::abs(numeric)) << name << "[" << k << "]";
  }
}

TEST(FlceReference, GradientsAgreeWithFiniteDifferences) {
  Problem const p = random_problem(6, 4, 7, 99u, true, true, 0.3);
  for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
    SCOPED_TRACE(std::string(reduction_name(r)));
    ReferenceOptions o;
    o.reduction = r;
    o.label_smoothing = 0.15;
    o.lse_square_scale = 0.05;
    o.softcap = 1.5;
    o.temperature = 0.6;
    o.entropy_bonus = 0.2;
    o.grad_output = 0.75;
    if (r == Reduction::none) o.grad_output_rows = {1.0, -2.0, 0.5, 3.0, 0.0, 1.5};
    ReferenceResult const g = reference(p, o);
    expect_gradient(p, o, &Problem::x, g.grad_input, "grad_input");
    expect_gradient(p, o, &Problem::w, g.grad_weight, "grad_weight");
    expect_gradient(p, o, &Problem::bias, g.grad_bias, "grad_bias");
  }
}

// The soft targets' term and its hand-derived gradient, with smoothing, class weights, softcap
// and temperature, a repeated class, alpha = 0.6 (both terms) and 1 (soft alone).
TEST(FlceReference, SoftTargetGradientsAgreeWithFiniteDifferences) {
  Problem const p = random_problem(6, 4, 7, 98u, true, true, 0.3);
  for (double alpha : {0.6, 1.0}) {
    for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
      SCOPED_TRACE(std::string(reduction_name(r)) + " alpha " + std::to_string(alpha));
      ReferenceOptions o;
      o.reduction = r;
      o.label_smoothing = 0.15;
      o.softcap = 1.5;
      o.temperature = 0.6;
      add_soft_targets(o, p.bt, p.v, 3, 5u, alpha);
      ReferenceResult const g = reference(p, o);
      expect_gradient(p, o, &Problem::x, g.grad_input, "grad_input");
      expect_gradient(p, o, &Problem::w, g.grad_weight, "grad_weight");
      expect_gradient(p, o, &Problem::bias, g.grad_bias, "grad_bias");
    }
  }
}

// Two rows, three classes, class weights and smoothing, mean: PyTorch's formula written out.
TEST(FlceReference, FollowsPyTorchsWeightedSmoothedMean) {
  Problem p;
  p.bt = 2;
  p.h = 1;
  p.v = 3;
  p.x = {1.0, -1.0};
  p.w = {0.5, 1.0, -2.0};  // logits row 0: (0.5, 1, -2); row 1: (-0.5, -1, 2)
  p.target = {1, 2};
  p.class_weights = {2.0, 3.0, 0.5};
  ReferenceOptions o;
  o.label_smoothing = 0.3;
  auto logp = [](std::vector<double> z, int j) {
    double s = 0;
    for (double e : z) s += std::exp(e);
    return z[j] - std::log(s);
  };
  std::vector<double> z0 = {0.5, 1.0, -2.0}, z1 = {-0.5, -1.0, 2.0};
  double const nll = -3.0 * logp(z0, 1) - 0.5 * logp(z1, 2);
  double smooth = 0;
  for (int j = 0; j < 3; ++j) smooth -= p.class_weights[j] * (logp(z0, j) + logp(z1, j));
  double const expected = ((1 - 0.3) * nll + 0.3 / 3 * smooth) / (3.0 + 0.5);
  EXPECT_NEAR(reference(p, o).loss[0], expected, 1e-15);
}

}  // namespace
