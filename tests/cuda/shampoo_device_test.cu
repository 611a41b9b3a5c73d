// DeviceShampoo against the host Shampoo<float>: the same plan, options and gradients give the
// same parameters and state (to float rounding) with eigendecomposed and coupled-Newton roots,
// and a NaN gradient is refused before anything is written. Skips, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <tessel/shampoo/device_shampoo.cuh>
#include <tessel/shampoo/optimizer.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the device Shampoo step is not exercised"

std::vector<std::vector<index_t>> const shapes = {{6, 5}, {2, 3, 4}, {5}, {}};

double compare(Options const& o, int steps) {
  auto plan = make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, shapes);
  Shampoo<float> host(plan, o);
  DeviceShampoo device(plan, o);
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<std::vector<float>> params;
  std::vector<DeviceBuffer<float>> dparams, dgrads;
  for (auto const& s : shapes) {
    index_t numel = 1;
    for (index_t e : s) numel *= e;
    params.emplace_back(static_cast<std::size_t>(numel));
    for (auto& x : params.back()) x = n(rng);
    dparams.emplace_back(params.back().size());
    dparams.back().upload(params.back().data(), params.back().size());
    dgrads.emplace_back(params.back().size());
  }
  for (int t = 0; t < steps; ++t) {
    std::vector<std::vector<float>> grads;
    std::vector<float*> dp;
    std::vector<float const*> dg;
    for (std::size_t p = 0; p < params.size(); ++p) {
      grads.emplace_back(params[p].size());
      for (auto& x : grads.back()) x = 0.5f * n(rng);
      dgrads[p].upload(grads.back().data(), grads.back().size());
      dp.push_back(dparams[p].data());
      dg.push_back(dgrads[p].data());
    }
    std::vector<std::span<float>> hp(params.begin(), params.end());
    std::vector<std::span<float const>> hg(grads.begin(), grads.end());
    host.step(hp, hg);
    device.step(dp, dg);
  }
  double diff = 0.0, scale = 0.0;
  for (std::size_t p = 0; p < params.size(); ++p) {
    auto d = dparams[p].download();
    for (std::size_t i = 0; i < d.size(); ++i) {
      diff = std::max(diff, static_cast<double>(std::abs(d[i] - params[p][i])));
      scale = std::max(scale, static_cast<double>(std::abs(params[p][i])));
    }
  }
  auto hs = host.state_dict();
  auto ds = device.state_dict();
  EXPECT_EQ(hs.size(), ds.size());
  for (auto const& [key, t] : hs) {
    EXPECT_TRUE(ds.contains(key)) << state_key_text(key);
    if (ds.contains(key)) EXPECT_EQ(ds.at(key).shape, t.shape) << state_key_text(key);
  }
  return diff / scale;
}

TEST(DeviceShampoo, MatchesTheHostWithEigenRoots) {
  REQUIRE_DEVICE();
  Options o;
  o.epsilon = 1e-6;
  o.grafting = adam_grafting();
  o.momentum = 0.5;
  o.beta2 = 0.99;
  EXPECT_LT(compare(o, 5), 1e-4);
}

TEST(DeviceShampoo, MatchesTheHostWithCoupledNewton) {
  REQUIRE_DEVICE();
  Options o;
  o.epsilon = 1e-4;
  o.root.method = RootMethod::coupled_newton;
  o.precondition_frequency = 2;
  o.weight_decay = 0.01;
  EXPECT_LT(compare(o, 6), 1e-4);
}

TEST(DeviceShampoo, RefusesNonFiniteGradientsBeforeWriting) {
  REQUIRE_DEVICE();
  auto plan =
      make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, std::vector<std::vector<index_t>>{{3}});
  DeviceShampoo device(plan, Options{});
  std::vector<float> w{1, 2, 3}, g{0, NAN, 0};
  DeviceBuffer<float> dw(3), dg(3);
  dw.upload(w.data(), 3);
  dg.upload(g.data(), 3);
  try {
    device.step({dw.data()}, {dg.data()});
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "the gradient of parameter 0 has a NaN or Inf value; gradients must be finite.");
  }
  EXPECT_EQ(dw.download(), w);
  EXPECT_EQ(device.step_count(), 0);
}

TEST(DeviceShampoo, RefusesQuantizedFactors) {
  Options o;
  o.factor_matrix_dtype = DType::bf16;
  auto plan =
      make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, std::vector<std::vector<index_t>>{{3}});
  try {
    DeviceShampoo device(plan, o);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "DeviceShampoo keeps f32 factor matrices; factor_matrix_dtype bf16 is "
                 "host-only for now.");
  }
}

}  // namespace
