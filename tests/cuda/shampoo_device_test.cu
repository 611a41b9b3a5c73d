// DeviceShampoo (Shampoo<float, RuntimePlan, exec::Cuda>) against the host Shampoo<float>: the
// same plan, options and gradients give the same parameters and state (to float rounding) with
// eigendecomposed and coupled-Newton roots and with bf16 factors; a device run's state resumes on
// the host and a host run's on the device; a NaN gradient or one that would overflow a factor is
// refused with the host's sentence before anything is written. The host instantiation of the same
// step is the device code's twin (tests/shampoo run it). Skips, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <span>
#include <vector>

#include <tessel/shampoo/device_shampoo.cuh>
#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/param_groups.hpp>

#include "support/cuda.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using test::device_vector;
using test::host_vector;

static_assert(std::is_same_v<DeviceShampoo, Shampoo<float, RuntimePlan, exec::Cuda>>);

std::vector<std::vector<index_t>> const shapes = {{6, 5}, {2, 3, 4}, {5}, {}};

using DeviceVector = decltype(device_vector(std::vector<float>{}));

struct Problem {
  std::vector<std::vector<float>> params;
  std::vector<DeviceVector> dparams;
  std::mt19937 rng{3};

  Problem() {
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (auto const& s : shapes) {
      index_t numel = 1;
      for (index_t e : s) numel *= e;
      params.emplace_back(static_cast<std::size_t>(numel));
      for (auto& x : params.back()) x = n(rng);
      dparams.push_back(device_vector(params.back()));
    }
  }

  // One step of each optimizer on the same gradients (device pointers, or spans over device memory
  // for GroupedShampoo, whose step takes spans only).
  template <class Host, class Device>
  void step(Host& host, Device& device) {
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<std::vector<float>> grads;
    std::vector<DeviceVector> dgrads;
    std::vector<float*> dp;
    std::vector<float const*> dg;
    for (std::size_t p = 0; p < params.size(); ++p) {
      grads.emplace_back(params[p].size());
      for (auto& x : grads.back()) x = 0.5f * n(rng);
      dgrads.push_back(device_vector(grads.back()));
      dp.push_back(dparams[p].data());
      dg.push_back(dgrads.back().data());
    }
    std::vector<std::span<float>> hp(params.begin(), params.end());
    std::vector<std::span<float const>> hg(grads.begin(), grads.end());
    host.step(hp, hg);
    if constexpr (requires { device.step(dp, dg); }) {
      device.step(dp, dg);
    } else {
      std::vector<std::span<float>> dps;
      std::vector<std::span<float const>> dgs;
      for (std::size_t p = 0; p < params.size(); ++p) {
        dps.emplace_back(dp[p], params[p].size());
        dgs.emplace_back(dg[p], params[p].size());
      }
      device.step(dps, dgs);
    }
  }

  // Largest |device - host| relative to the largest |host|.
  double difference() const {
    double diff = 0.0, scale = 0.0;
    for (std::size_t p = 0; p < params.size(); ++p) {
      auto d = host_vector(dparams[p]);
      for (std::size_t i = 0; i < d.size(); ++i) {
        diff = std::max(diff, static_cast<double>(std::abs(d[i] - params[p][i])));
        scale = std::max(scale, static_cast<double>(std::abs(params[p][i])));
      }
    }
    return diff / scale;
  }
};

auto plan() {
  return make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, shapes);
}

double compare(Options const& o, int steps) {
  Shampoo<float> host(plan(), o);
  DeviceShampoo device(plan(), o);
  Problem problem;
  for (int t = 0; t < steps; ++t) problem.step(host, device);
  auto hs = host.state_dict();
  auto ds = device.state_dict();
  EXPECT_EQ(hs.size(), ds.size());
  for (auto const& [key, t] : hs) {
    EXPECT_TRUE(ds.contains(key)) << state_key_text(key);
    if (ds.contains(key)) {
      EXPECT_EQ(ds.at(key).shape, t.shape) << state_key_text(key);
      EXPECT_EQ(ds.at(key).dtype, t.dtype) << state_key_text(key);
    }
  }
  return problem.difference();
}

TEST(DeviceShampoo, MatchesTheHostWithEigenRoots) {
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  Options o;
  o.epsilon = 1e-6;
  o.grafting = adam_grafting();
  o.momentum = 0.5;
  o.beta2 = 0.99;
  EXPECT_LT(compare(o, 5), 1e-4);
}

TEST(DeviceShampoo, MatchesTheHostWithCoupledNewton) {
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  Options o;
  o.epsilon = 1e-4;
  o.root.method = RootMethod::coupled_newton;
  o.precondition_frequency = 2;
  o.weight_decay = 0.01;
  EXPECT_LT(compare(o, 6), 1e-4);
}

// Eigenvalue-corrected and eigendecomposed Shampoo with eigh, the QR iteration (exec/cuda/qr.cuh:
// cuSOLVER ?geqrf + ?orgqr) and eigh's tolerance. Preconditioning starts at step 5, once every
// factor has full rank: before that the eigenbasis of the zero eigenvalues is arbitrary and
// eigenvalue correction divides rounding noise by its own size, so even the host's float and double
// steps differ by 2e-3 (they agree to 5e-6 from step 5; the QR and tolerance options move the
// double result by 1e-3 to 6e-3, so 1e-4 tells them apart).
TEST(DeviceShampoo, MatchesTheHostWithEigenvalueCorrectionQrIterationAndEighTolerance) {
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  for (auto type :
       {PreconditionerType::eigenvalue_corrected, PreconditionerType::eigendecomposed}) {
    Options o;
    o.epsilon = 1e-6;
    o.beta2 = 0.99;
    o.preconditioner = type;
    o.start_preconditioning_step = 5;
    EXPECT_LT(compare(o, 8), 1e-4) << "eigh, preconditioner " << static_cast<int>(type);
    o.root.eigendecomposition = {EigendecompositionMethod::qr, 0.01, 2};
    EXPECT_LT(compare(o, 8), 1e-4) << "QR iteration, preconditioner " << static_cast<int>(type);
    o.root.eigendecomposition = {EigendecompositionMethod::eigh, 0.3, 1};
    EXPECT_LT(compare(o, 8), 1e-4) << "eigh tolerance, preconditioner " << static_cast<int>(type);
  }
}

TEST(DeviceShampoo, QuantizedFactorsMatchTheHost) {
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  Options o;
  o.epsilon = 1e-6;
  o.factor_matrix_dtype = DType::bf16;
  o.grafting = rmsprop_grafting();
  EXPECT_LT(compare(o, 4), 1e-2);
}

TEST(DeviceShampoo, PackedFactorsMatchTheHostAndItsPackedState) {
  // Packed factors on the device against packed ones on the host (same keys and packed shapes),
  // then the device resumes from a host state saved with full factors.
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  Options o;
  o.epsilon = 1e-6;
  o.grafting = adam_grafting();
  o.use_symmetric_packing = true;
  for (DType dtype : {DType::f32, DType::bf16}) {
    o.factor_matrix_dtype = dtype;
    EXPECT_LT(compare(o, 4), dtype == DType::f32 ? 1e-4 : 1e-2) << dtype_name(dtype);
  }
  Options full = o;
  full.use_symmetric_packing = false;
  Shampoo<float> host(plan(), full);
  DeviceShampoo device(plan(), o);
  Problem problem;
  for (int t = 0; t < 3; ++t) problem.step(host, device);
  device.load_state_dict(host.state_dict());
  Shampoo<float> packed_host(plan(), o);
  packed_host.load_state_dict(host.state_dict());
  EXPECT_EQ(device.state_dict(), packed_host.state_dict()) << "packed on load, bit for bit";
}

// Parameter groups on the device: GroupedShampoo<float, exec::Cuda> against the host's, with a
// Shampoo group (Adam grafting) and an eigenvalue-corrected group with its own learning rate and
// eigenvalue exponent (the device's pow), their state keyed by the caller's parameter indices.
TEST(DeviceShampoo, ParameterGroupsMatchTheHost) {
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  ParamGroup shampoo_group{{0, 2}, {}, 4, 1};
  shampoo_group.options.epsilon = 1e-6;
  shampoo_group.options.grafting = adam_grafting();
  ParamGroup corrected_group{{1, 3}, {}, 4, 1};
  corrected_group.options.preconditioner = PreconditionerType::eigenvalue_corrected;
  corrected_group.options.epsilon = 1e-6;
  corrected_group.options.beta2 = 0.99;
  corrected_group.options.start_preconditioning_step = 5;  // full-rank factors (see above)
  corrected_group.options.inverse_exponent_override[3] = 0.25;
  std::vector<ParamGroup> const groups = {shampoo_group, corrected_group};
  GroupedShampoo<float> host(shapes, groups);
  GroupedShampoo<float, exec::Cuda> device(shapes, groups);
  host.set_lr(1, 0.003);
  device.set_lr(1, 0.003);
  Problem problem;
  for (int t = 0; t < 8; ++t) problem.step(host, device);
  EXPECT_LT(problem.difference(), 1e-4);
  auto const hs = host.state_dict();
  auto const ds = device.state_dict();
  EXPECT_EQ(hs.size(), ds.size());
  for (auto const& [key, t] : hs) {
    EXPECT_TRUE(ds.contains(key)) << state_key_text(key);
    if (ds.contains(key)) EXPECT_EQ(ds.at(key).shape, t.shape) << state_key_text(key);
  }
  EXPECT_TRUE(ds.contains({"3", "block_0", "shampoo", "corrected_eigenvalues"}));
}

TEST(DeviceShampoo, ResumesFromAHostStateAndTheHostFromItsState) {
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  Options o;
  o.epsilon = 1e-6;
  o.momentum = 0.9;
  o.grafting = adam_grafting();
  o.factor_matrix_dtype = DType::f16;
  Shampoo<float> host(plan(), o);
  DeviceShampoo device(plan(), o);
  Problem problem;
  for (int t = 0; t < 3; ++t) problem.step(host, device);
  // Swap the states: each optimizer continues from the other's checkpoint.
  StateDict const from_host = host.state_dict();
  StateDict const from_device = device.state_dict();
  device.load_state_dict(from_host);
  host.load_state_dict(from_device);
  EXPECT_EQ(device.state_dict(), from_host) << "a loaded state reads back bit for bit";
  EXPECT_EQ(device.step_count(), 3);
  for (int t = 0; t < 2; ++t) problem.step(host, device);
  EXPECT_LT(problem.difference(), 1e-3);
}

TEST(DeviceShampoo, RefusesNonFiniteGradientsBeforeWriting) {
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  auto p =
      make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, std::vector<std::vector<index_t>>{{3}});
  DeviceShampoo device(p, Options{});
  std::vector<float> w{1, 2, 3}, g{0, NAN, 0};
  auto dw = device_vector(w);
  auto dg = device_vector(g);
  try {
    device.step({dw.data()}, {dg.data()});
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "the gradient of parameter 0 has the value nan at element 1; gradients must be "
                 "finite.");
  }
  EXPECT_EQ(host_vector(dw), w);
  EXPECT_EQ(device.step_count(), 0);
}

TEST(DeviceShampoo, RefusesGradientsThatWouldOverflowAFactor) {
  TESSEL_REQUIRE_GPU("the device Shampoo step", "tests/shampoo");
  auto p = make_plan(PlanOptions<index_t, index_t>{2, 1, 1, DType::f32},
                     std::vector<std::vector<index_t>>{{3}, {2, 4}});
  DeviceShampoo device(p, Options{});
  std::vector<float> w0(3, 1.0f), w1(8, 1.0f), g0(3, 0.5f), g1(8, 0.5f);
  g1[6] = 0x1p100f;
  auto dw0 = device_vector(w0), dw1 = device_vector(w1), dg0 = device_vector(g0),
       dg1 = device_vector(g1);
  try {
    device.step({dw0.data(), dw1.data()}, {dg0.data(), dg1.data()});
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "factor matrix 0 of parameter 1, block 1 would overflow at step 1: its largest "
                 "entry could reach 1.6069380442589903e+60 (1 times the old entry plus 1 times "
                 "the gradient's part, whose squared row norms along mode 0 reach "
                 "1.6069380442589903e+60), more than f32 holds (3.4028234663852886e+38); nothing "
                 "was changed.");
  }
  EXPECT_EQ(host_vector(dw1), w1);
  EXPECT_EQ(device.step_count(), 0);
}

}  // namespace
