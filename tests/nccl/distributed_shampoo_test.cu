// DeviceDistributedShampoo over NCCL (one GPU per rank) against the host DistributedShampoo<float>
// over MPI: the same plan, options and gradients give the same parameters to float tolerance (the
// device's cuBLAS / cuSOLVER arithmetic differs from Eigen's), and the same exchange layout.
// Skipped, with a message, where there is no CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <tessel/dist/mpi.hpp>
#include <tessel/dist/nccl.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/shampoo/device_distributed.cuh>

#include "shampoo/distributed_support.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using namespace distributed_support;

// Largest |device - host| over all parameters after `steps` steps, relative to the largest |host|.
double compare(Options const& o, DistributedOptions const& d, int steps) {
  dist::MpiCommunicator mpi;
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  double result = 0.0;
  {
    dist::NcclCommunicator nccl(mpi, stream);
    index_t const g = resolved_group_size(d, mpi.size());
    DistributedShampoo<float> host(mpi, plan_for(g), o, d);
    DeviceDistributedShampoo device(nccl, plan_for(g), o, d);
    EXPECT_EQ(device.exchanged_bytes(), host.exchanged_bytes());
    auto params = initial_params<float>();
    std::vector<DeviceBuffer<float>> dparams, dgrads;
    for (auto const& p : params) {
      dparams.emplace_back(p.size());
      dparams.back().upload(p.data(), p.size());
      dgrads.emplace_back(p.size());
    }
    for (int t = 0; t < steps; ++t) {
      auto grads = values<float>(t, 1.0);
      std::vector<float*> dp;
      std::vector<float const*> dg;
      for (std::size_t i = 0; i < grads.size(); ++i) {
        dgrads[i].upload(grads[i].data(), grads[i].size());
        dp.push_back(dparams[i].data());
        dg.push_back(dgrads[i].data());
      }
      device.step(dp, dg);
    }
    run_steps<float>(host, params, 0, steps);
    double largest = 0.0, diff = 0.0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto got = dparams[i].download();
      for (std::size_t k = 0; k < got.size(); ++k) {
        largest = std::max(largest, std::abs(static_cast<double>(params[i][k])));
        diff = std::max(diff, std::abs(static_cast<double>(got[k]) - params[i][k]));
      }
    }
    result = diff / largest;
  }
  cudaStreamDestroy(stream);
  return result;
}

#define REQUIRE_DEVICE()                 \
  if (tessel::gpu::device_count() == 0) \
  GTEST_SKIP() << "no CUDA device on this machine: the NCCL Shampoo step is not run"

TEST(NcclShampoo, MatchesTheHostStepWithinFloatTolerance) {
  REQUIRE_DEVICE();
  for (auto const& m : modes()) {
    if (m.options.factor_matrix_dtype != DType::f32 || m.options.root.eigen.pseudo_inverse)
      continue;  // host-only factor dtypes; the device has no pseudo-inverse
    SCOPED_TRACE(m.name);
    EXPECT_LT(compare(m.options, {}, 4), 1e-3);
  }
}

TEST(NcclShampoo, Bf16CommunicationMatchesTheHostStep) {
  REQUIRE_DEVICE();
  EXPECT_LT(compare(modes()[4].options, {-1, DType::bf16}, 4), 1e-2);
}

}  // namespace
