// Shampoo, eigenvalue-corrected Shampoo (SOAP), spectral descent (Muon) and Shampoo with
// Schedule-Free averaging side by side on a small MLP: two CombinedLinear layers
// (weight and bias in one matrix each) fit a random teacher network, once per preconditioner from
// the same start and the same batches. The blocking plan is computed by the compiler from the
// static parameter shapes and stays a type (shampoo::static_plan<plan>): each batch group's block
// shape reaches the step's loops as Int<> extents. Every block is 2-D, so Muon applies to all.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <type_traits>
#include <vector>

#include <tessel/shampoo.hpp>
#include <tessel/tessel.hpp>

using namespace tessel;
using namespace tessel::literals;

constexpr index_t in = 16, hidden = 32, out = 4, batch = 64;

// Parameters (hidden, in + 1) and (out, hidden + 1), blocks of at most 24 per mode.
constexpr auto plan = shampoo::make_plan(shampoo::plan_options(24_c, 1_c, 2),
                                         make_shape(Int<hidden>{}, Int<in + 1>{}),
                                         make_shape(Int<out>{}, Int<hidden + 1>{}));
// (32, 17): rows [0, 24) [24, 32), all 17 columns; (4, 33): columns [0, 24) [24, 33).
static_assert(plan.num_blocks() == 2 + 2);
static_assert(plan.block_shape(1) == shampoo::Extents{8, 17});
// Block 1's group: its block shape as constants in the passes over its segments.
static_assert(std::is_same_v<shampoo::group_block_t<shampoo::static_plan<plan>, 1>,
                             decltype(make_shape(Int<8>{}, Int<17>{}))>);

// 60 steps of one optimizer from the same initialization and batches; the loss of each step.
std::vector<double> train(shampoo::Options const& options) {
  shampoo::CombinedLinear<float> l1(in, hidden, true, 1), l2(hidden, out, true, 2);
  shampoo::CombinedLinear<float> t1(in, hidden, true, 3), t2(hidden, out, true, 4);  // teacher
  shampoo::Shampoo<float, shampoo::static_plan<plan>> opt(options);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(batch * in), h(batch * hidden), y(batch * out), target(batch * out);
  std::vector<float> th(batch * hidden);
  std::vector<float> dy(batch * out), dh(batch * hidden);
  std::vector<float> g1(l1.parameter().size()), g2(l2.parameter().size());
  std::vector<double> losses;
  for (int step = 1; step <= 60; ++step) {
    for (auto& v : x) v = normal(rng);
    t1.forward(x, batch, th);
    for (auto& v : th) v = std::tanh(v);
    t2.forward(th, batch, target);
    // Forward: y = l2(tanh(l1(x))), loss = mean squared error.
    l1.forward(x, batch, h);
    for (auto& v : h) v = std::tanh(v);
    l2.forward(h, batch, y);
    double loss = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      dy[i] = 2.0f * (y[i] - target[i]) / static_cast<float>(y.size());
      loss += (y[i] - target[i]) * (y[i] - target[i]);
    }
    losses.push_back(loss / static_cast<double>(y.size()));
    // Backward into the combined parameters.
    l2.backward(h, dy, batch, g2, dh);
    for (std::size_t i = 0; i < dh.size(); ++i) dh[i] *= 1.0f - h[i] * h[i];
    l1.backward(x, dh, batch, g1);
    opt.step({l1.parameter(), l2.parameter()},
             {std::span<float const>(g1), std::span<float const>(g2)});
  }
  return losses;
}

int main() {
  std::printf("plan: %zu parameters, %zu blocks, %zu batch groups\n", plan.num_params(),
              plan.num_blocks(), plan.num_groups());
  for (std::size_t b = 0; b < plan.num_blocks(); ++b)
    std::printf("  parameter %ld block %ld: offset %s shape %s, rank %ld\n",
                static_cast<long>(plan.blocks[b].param), static_cast<long>(plan.blocks[b].index),
                to_string(plan.block_offset(b)).c_str(), to_string(plan.block_shape(b)).c_str(),
                static_cast<long>(plan.blocks[b].rank));

  // Shampoo with Adam grafting, roots every 5 steps; Muon: the filtered gradient (beta1 0.95)
  // orthogonalized by 5 Newton-Schulz iterations, scaled by sqrt(max(1, rows / columns)).
  shampoo::Options shampoo_options;
  shampoo_options.lr = 0.02;
  shampoo_options.epsilon = 1e-8;
  shampoo_options.grafting = shampoo::adam_grafting();
  shampoo_options.precondition_frequency = 5;
  shampoo::Options muon_options;
  muon_options.preconditioner = shampoo::PreconditionerType::spectral_descent;
  muon_options.lr = 0.02;
  muon_options.beta1 = 0.95;
  muon_options.newton_schulz.scale_by_dims = [](index_t d_in, index_t d_out) {
    return std::sqrt(std::max(1.0, static_cast<double>(d_out) / static_cast<double>(d_in)));
  };
  // SOAP: Adam in the factors' eigenbasis (beta2 0.95 for both), eigenvectors every 5 steps.
  shampoo::Options soap_options;
  soap_options.preconditioner = shampoo::PreconditionerType::eigenvalue_corrected;
  soap_options.lr = 0.01;
  soap_options.beta2 = 0.95;
  soap_options.epsilon = 1e-8;
  soap_options.precondition_frequency = 5;
  // Shampoo with Schedule-Free averaging: the same direction, the parameters an interpolation of
  // the descent sequence and its lr^2-weighted average (no schedule needed); its losses are at the
  // training sequence y, where the gradients are taken.
  shampoo::Options free_options = shampoo_options;
  free_options.averaging.type = shampoo::AveragingType::schedule_free;
  free_options.averaging.train_interp_coeff = 0.9;
  std::vector<double> const shampoo_loss = train(shampoo_options);
  std::vector<double> const free_loss = train(free_options);
  std::vector<double> const soap_loss = train(soap_options);
  std::vector<double> const muon_loss = train(muon_options);
  std::printf("step  Shampoo   SOAP     Muon     Shampoo+SF\n");
  for (std::size_t step = 1; step <= shampoo_loss.size(); ++step)
    if (step == 1 || step % 10 == 0)
      std::printf("%4zu  %.4f  %.4f  %.4f  %.4f\n", step, shampoo_loss[step - 1],
                  soap_loss[step - 1], muon_loss[step - 1], free_loss[step - 1]);
  // All four fit the teacher: the last loss well under the first.
  bool ok = true;
  for (auto const* losses : {&shampoo_loss, &soap_loss, &muon_loss, &free_loss})
    ok = ok && losses->back() < 0.5 * losses->front();
  if (!ok) std::printf("a run did not halve its loss\n");
  return ok ? 0 : 1;
}
