// Causal attention on device tensors with exec::Cuda against its host twin (the same functions
// with a host executor, tested in tests/nn): forward and backward at an odd sequence length with
// several query and key/value tiles, to float32 rounding. Skips, with a message, without a GPU;
// the shape checks (a sentence before any CUDA call, with fake device pointers) run everywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/nn/attention_cuda.cuh>
#include <tessel/tensor/fill.hpp>

#include "support/cuda.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;

TEST(CudaAttention, ForwardAndBackwardMatchTheHostTwin) {
  TESSEL_REQUIRE_GPU("device attention", "tests/nn");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto const shape = make_shape(index_t{2}, index_t{45}, index_t{3}, index_t{16});
  auto const plan = nn::make_attention_plan<float>(2, 3, 45, 16, 8192);
  std::mt19937_64 rng(1);
  auto q = make_host_tensor<float>(shape), k = make_host_tensor<float>(shape),
       v = make_host_tensor<float>(shape), go = make_host_tensor<float>(shape),
       out = make_host_tensor<float>(shape), dq = make_host_tensor<float>(shape),
       dk = make_host_tensor<float>(shape), dv = make_host_tensor<float>(shape);
  auto lse = make_host_tensor<float>(make_shape(index_t{2}, index_t{3}, index_t{45}));
  for (auto* t : {&q, &k, &v, &go}) fill_normal(*t, rng);
  nn::attention_forward(plan, q, k, v, out, lse, exec::Serial{});
  nn::attention_backward(plan, nn::AttentionSaved{q, k, v, out, lse}, go,
                         nn::AttentionGrads{dq, dk, dv}, exec::Serial{});
  auto dq_ = test::to_device(q, s), dk_ = test::to_device(k, s), dv_ = test::to_device(v, s),
       dgo = test::to_device(go, s), dout = test::to_device(out, s), ddq = test::to_device(dq, s),
       ddk = test::to_device(dk, s), ddv = test::to_device(dv, s);
  auto dlse = test::to_device(lse, s);
  nn::attention_forward(plan, dq_, dk_, dv_, dout, dlse, gpu);
  nn::attention_backward(plan, nn::AttentionSaved{dq_, dk_, dv_, dout, dlse}, dgo,
                         nn::AttentionGrads{ddq, ddk, ddv}, gpu);
  test::expect_close(test::to_host(dout, s), out, 1e-5);
  test::expect_close(test::to_host(dlse, s), lse, 1e-5);
  test::expect_close(test::to_host(ddq, s), dq, 1e-4);
  test::expect_close(test::to_host(ddk, s), dk, 1e-4);
  test::expect_close(test::to_host(ddv, s), dv, 1e-4);
}

TEST(CudaAttention, ShapesAreCheckedBeforeAnyCudaCall) {
  // Fake device pointers: any launch or copy would fault.
  auto* fake = reinterpret_cast<float*>(std::uintptr_t{256});
  auto const t =
      make_device_tensor(fake, make_shape(index_t{2}, index_t{5}, index_t{3}, index_t{4}));
  auto const lse = make_device_tensor(fake, make_shape(index_t{2}, index_t{3}, index_t{5}));
  auto const plan = nn::make_attention_plan<float>(2, 3, 6, 4);
  EXPECT_EQ(test::error_of([&] { nn::attention_forward(plan, t, t, t, t, lse, exec::Cuda{}); }),
            "q has shape (2,5,3,4) but the attention plan's (B, T, heads, head_dim) is "
            "(2,6,3,4).");
}

}  // namespace
