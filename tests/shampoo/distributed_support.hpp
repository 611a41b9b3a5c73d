// What the distributed Shampoo tests share (tests/shampoo on one process, tests/mpi under mpirun):
// a problem of several parameter shapes cut into blocks of several shapes, the optimizer modes
// compared, deterministic gradients every rank can compute, and runners that step a single-process
// Shampoo<T> or a DistributedShampoo<T> through the same steps.
#pragma once

#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <tessel/dist/communicator.hpp>
#include <tessel/shampoo/distributed.hpp>
#include <tessel/shampoo/optimizer.hpp>

namespace distributed_support {

using namespace tessel;
using namespace tessel::shampoo;

// A 0-D parameter, a bias, a matrix cut into 3 x 2 blocks of 4 shapes, and a 3-D tensor.
inline std::vector<std::vector<index_t>> const shapes = {{}, {5}, {9, 7}, {2, 3, 4}, {6}};

inline Plan plan_for(index_t group_size) {
  return make_plan(PlanOptions<index_t, index_t>{4, 1, group_size, DType::f32}, shapes);
}

struct Mode {
  std::string name;
  Options options;
};

// Every kind of grafting, both root methods (and the pseudo-inverse), every factor dtype (and
// packed factors), both weight decays, momentum with and without Nesterov, amortization with a
// warm-up, beta3, exponent overrides, and with and without the filtered gradient and bias
// correction.
inline std::vector<Mode> modes() {
  std::vector<Mode> out;
  auto add = [&](std::string name, auto&& edit) {
    Options o;
    o.lr = 0.05;
    o.epsilon = 1e-6;
    edit(o);
    out.push_back({std::move(name), o});
  };
  add("defaults", [](Options&) {});
  add("sgd_grafting", [](Options& o) { o.grafting = sgd_grafting(); });
  add("adagrad_grafting_momentum", [](Options& o) {
    o.grafting = adagrad_grafting();
    o.momentum = 0.5;
  });
  add("rmsprop_grafting_nesterov_decoupled", [](Options& o) {
    o.grafting = rmsprop_grafting();
    o.momentum = 0.6;
    o.dampening = 0.1;
    o.use_nesterov = true;
    o.weight_decay = 0.01;
  });
  add("adam_grafting_l2_beta2", [](Options& o) {
    o.grafting = adam_grafting();
    o.beta2 = 0.95;
    o.weight_decay = 0.02;
    o.weight_decay_type = WeightDecayType::l2;
  });
  add("coupled_newton_no_filter", [](Options& o) {
    o.root.method = RootMethod::coupled_newton;
    o.beta1 = 0.0;
  });
  add("pseudo_inverse", [](Options& o) {
    o.epsilon = 0.0;
    o.root.eigen.pseudo_inverse = true;
    o.root.eigen.rank_rtol = 1e-6;
  });
  add("bf16_factors_amortized_beta3", [](Options& o) {
    o.factor_matrix_dtype = DType::bf16;
    o.precondition_frequency = 2;
    o.start_preconditioning_step = 3;
    o.grafting = adam_grafting();
    o.beta3 = 0.5;
  });
  add("f16_factors_exponent_override", [](Options& o) {
    o.factor_matrix_dtype = DType::f16;
    o.inverse_exponent_override[2] = std::map<index_t, double>{{0, 0.0}};
    o.inverse_exponent_override[3] = 0.25;
    o.use_bias_correction = false;
    o.beta2 = 0.9;
  });
  add("f64_factors", [](Options& o) { o.factor_matrix_dtype = DType::f64; });
  add("packed_bf16_factors", [](Options& o) {
    o.use_symmetric_packing = true;
    o.factor_matrix_dtype = DType::bf16;
    o.grafting = adam_grafting();
  });
  return out;
}

// Step t's gradient of parameter p, and the initial parameters (t = -1): the same on every rank.
template <class T>
std::vector<std::vector<T>> values(int t, double scale) {
  std::vector<std::vector<T>> out;
  for (std::size_t p = 0; p < shapes.size(); ++p) {
    std::mt19937 rng(static_cast<unsigned>(1000 * (t + 2) + p));
    std::normal_distribution<double> n(0.0, scale);
    index_t numel = 1;
    for (index_t e : shapes[p]) numel *= e;
    std::vector<T> v(static_cast<std::size_t>(numel));
    for (auto& x : v) x = static_cast<T>(n(rng));
    out.push_back(std::move(v));
  }
  return out;
}

template <class T>
std::vector<std::vector<T>> initial_params() {
  return values<T>(-1, 1.0);
}

// Steps [first, last) of any optimizer with step(params, grads) on `params`.
template <class T, class Optimizer>
void run_steps(Optimizer& opt, std::vector<std::vector<T>>& params, int first, int last) {
  for (int t = first; t < last; ++t) {
    auto grads = values<T>(t, 1.0);
    std::vector<std::span<T>> ps(params.begin(), params.end());
    std::vector<std::span<T const>> gs(grads.begin(), grads.end());
    opt.step(ps, gs);
  }
}

// Parameters after `steps` steps of the single-process Shampoo<T>.
template <class T>
std::vector<std::vector<T>> single_process(Options const& o, int steps) {
  Shampoo<T> opt(plan_for(1), o);
  auto params = initial_params<T>();
  run_steps<T>(opt, params, 0, steps);
  return params;
}

// Parameters after `steps` steps of DistributedShampoo<T> over `world`.
template <class T>
std::vector<std::vector<T>> distributed(dist::Communicator& world, Options const& o,
                                        DistributedOptions const& d, int steps) {
  index_t const g = resolved_group_size(d, world.size());
  DistributedShampoo<T> opt(world, plan_for(g), o, d);
  auto params = initial_params<T>();
  run_steps<T>(opt, params, 0, steps);
  return params;
}

// Bit for bit equality of all parameters.
template <class T>
bool same_bits(std::vector<std::vector<T>> const& a, std::vector<std::vector<T>> const& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t p = 0; p < a.size(); ++p)
    if (a[p].size() != b[p].size() ||
        (!a[p].empty() && std::memcmp(a[p].data(), b[p].data(), a[p].size() * sizeof(T)) != 0))
      return false;
  return true;
}

}  // namespace distributed_support
