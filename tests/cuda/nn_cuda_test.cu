// tessel::nn on device tensors with exec::Cuda against its host twin (the same functions with a
// host executor, tested on the host in tests/nn): LayerNorm, RMSNorm, GELU, SwiGLU and the
// embedding, forward and backward, float32. The norms' row reductions run one block per row (a
// CUB block reduction), so they agree with the host's one lane to rounding; the embedding's
// backward sums each table row's tokens in the same order on both (a stable sort of the
// positions), so it agrees bit for bit. Skips without a GPU; the validation test (a sentence
// thrown before any CUDA call, on fake device pointers) runs everywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/nn/cuda.cuh>

#include "support/cuda.hpp"
#include "support/error_of.hpp"

using namespace tessel;

namespace {

template <class T = float, class Shape>
auto random_host(Shape const& s, unsigned seed, float mean = 0.0f) {
  auto t = make_host_tensor<T>(s);
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(mean, 1.0f);
  for (auto& x : t) x = normal(gen);
  return t;
}

template <class A, class B>
void expect_near(A const& got, B const& want, float tol) {
  auto w = want.begin();
  index_t i = 0;
  for (float g : got) {
    float const v = *w++;
    EXPECT_NEAR(g, v, tol * (1.0f + std::abs(v))) << "element " << i++;
  }
}

TEST(CudaNn, EveryKernelMatchesTheHostTwin) {
  TESSEL_REQUIRE_GPU("the device nn kernels", "tests/nn");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  index_t const n = 37, d = 300, v = 50;  // d > 256: lanes loop over a row more than once
  auto const hx = random_host(make_shape(n, d), 1, 1.0f);
  auto const hdy = random_host(make_shape(n, d), 2);
  auto const hw = random_host(make_shape(d), 3, 1.0f);
  auto const hb = random_host(make_shape(d), 4);
  auto const x = test::to_device(hx, s);
  auto const dy = test::to_device(hdy, s);
  auto const w = test::to_device(hw, s);
  auto const b = test::to_device(hb, s);
  auto y = make_device_tensor<float>(make_shape(n, d));
  auto dx = make_device_tensor<float>(make_shape(n, d));
  auto mean = make_device_tensor<float>(make_shape(n));
  auto rstd = make_device_tensor<float>(make_shape(n));
  auto dw = make_device_tensor<float>(make_shape(d));
  auto db = make_device_tensor<float>(make_shape(d));
  auto hy = make_host_tensor<float>(make_shape(n, d));
  auto hdx = make_host_tensor<float>(make_shape(n, d));
  auto hmean = make_host_tensor<float>(make_shape(n));
  auto hrstd = make_host_tensor<float>(make_shape(n));
  auto hdw = make_host_tensor<float>(make_shape(d));
  auto hdb = make_host_tensor<float>(make_shape(d));

  nn::layer_norm(y, mean, rstd, x, w, b, {}, gpu);
  nn::layer_norm_backward(dx, dw, db, dy, x, w, mean, rstd, gpu);
  nn::layer_norm(hy, hmean, hrstd, hx, hw, hb);
  nn::layer_norm_backward(hdx, hdw, hdb, hdy, hx, hw, hmean, hrstd);
  expect_near(test::to_host(y, s), hy, 1e-5f);
  expect_near(test::to_host(mean, s), hmean, 1e-5f);
  expect_near(test::to_host(rstd, s), hrstd, 1e-5f);
  expect_near(test::to_host(dx, s), hdx, 1e-4f);
  expect_near(test::to_host(dw, s), hdw, 1e-4f);
  expect_near(test::to_host(db, s), hdb, 1e-4f);

  nn::rms_norm(y, rstd, x, w, {}, gpu);
  nn::rms_norm_backward(dx, dw, dy, x, w, rstd, gpu);
  nn::rms_norm(hy, hrstd, hx, hw);
  nn::rms_norm_backward(hdx, hdw, hdy, hx, hw, hrstd);
  expect_near(test::to_host(y, s), hy, 1e-5f);
  expect_near(test::to_host(rstd, s), hrstd, 1e-5f);
  expect_near(test::to_host(dx, s), hdx, 1e-4f);
  expect_near(test::to_host(dw, s), hdw, 1e-4f);

  assign(y, nn::gelu_backward(dy, x) + nn::gelu(x), gpu);
  hy = nn::gelu_backward(hdy, hx) + nn::gelu(hx);
  expect_near(test::to_host(y, s), hy, 1e-5f);
  nn::swiglu_backward(dx, y, dy, x, b, gpu);
  nn::swiglu_backward(hdx, hy, hdy, hx, hb);
  expect_near(test::to_host(dx, s), hdx, 1e-5f);
  expect_near(test::to_host(y, s), hy, 1e-5f);

  auto hids = make_host_tensor<std::int64_t>(make_shape(n));
  for (index_t i = 0; i < n; ++i) hids[i] = (i * 7) % 5 == 0 ? 3 : (i * 13) % v;
  auto const ids = test::to_device(hids, s);
  auto const htable = random_host(make_shape(v, d), 5);
  auto const table = test::to_device(htable, s);
  nn::embedding(y, ids, table, gpu);
  nn::embedding(hy, hids, htable);
  test::expect_same(test::to_host(y, s), hy);
  auto grad = make_device_tensor<float>(make_shape(v, d));
  auto hgrad = make_host_tensor<float>(make_shape(v, d));
  nn::embedding_backward(grad, ids, dy, gpu);
  nn::embedding_backward(hgrad, hids, hdy);
  test::expect_same(test::to_host(grad, s), hgrad);
}

TEST(CudaNn, BadArgumentsThrowBeforeAnyLaunch) {
  // Fake device pointers: any launch or copy would fault.
  auto* p = reinterpret_cast<float*>(std::uintptr_t{256});
  auto const x = make_device_tensor(p, make_shape(4, 8));
  auto const y = make_device_tensor(p, make_shape(4, 7));
  auto const w = make_device_tensor(p, make_shape(8));
  auto const r = make_device_tensor(p, make_shape(4));
  exec::Cuda const gpu{};
  EXPECT_EQ(test::error_of([&] { nn::layer_norm(y, r, r, x, w, w, {}, gpu); }),
            "layer_norm: y has shape (4,7) but x has shape (4,8); they need the same shape.");
  EXPECT_EQ(test::error_of([&] { nn::rms_norm_backward(x, w, y, x, w, r, gpu); }),
            "rms_norm_backward: dy has shape (4,7) but x has shape (4,8); they need the same "
            "shape.");
}

}  // namespace
