// DeviceDistributedShampoo over NCCL (one GPU per rank) against the host DistributedShampoo<float>
// over MPI: the same plan, options and gradients give the same parameters to float tolerance (the
// device's cuBLAS / cuSOLVER arithmetic differs from Eigen's), and the same exchange layout: the
// same DistributedShampoo template, run by exec::Cuda on the NCCL communicator's stream.
// Skipped, with a message, where there is no CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <tessel/dist/mpi.hpp>
#include <tessel/dist/nccl.hpp>
#include <tessel/exec/cuda/error.hpp>
#include <tessel/shampoo/device_distributed.cuh>

#include "shampoo/distributed_support.hpp"
#include "support/cuda.hpp"

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
    std::vector<decltype(test::device_vector(params[0]))> dparams;
    for (auto const& p : params) dparams.push_back(test::device_vector(p));
    for (int t = 0; t < steps; ++t) {
      auto grads = values<float>(t, 1.0);
      std::vector<decltype(test::device_vector(grads[0]))> dgrads;
      std::vector<float*> dp;
      std::vector<float const*> dg;
      for (std::size_t i = 0; i < grads.size(); ++i) {
        dgrads.push_back(test::device_vector(grads[i]));
        dp.push_back(dparams[i].data());
        dg.push_back(dgrads.back().data());
      }
      device.step(dp, dg);
    }
    run_steps<float>(host, params, 0, steps);
    double largest = 0.0, diff = 0.0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto got = test::host_vector(dparams[i]);
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
  // Every mode: the device runs the host's step (quantized factors and the pseudo-inverse
  // included); 16-bit factors round differently along cuBLAS's and Eigen's summation orders.
  for (auto const& m : modes()) {
    SCOPED_TRACE(m.name);
    bool const narrow = dtype_size(m.options.factor_matrix_dtype) == 2;
    EXPECT_LT(compare(m.options, {}, 4), narrow ? 1e-2 : 1e-3);
  }
}

TEST(NcclShampoo, Bf16CommunicationMatchesTheHostStep) {
  REQUIRE_DEVICE();
  EXPECT_LT(compare(modes()[4].options, {-1, DType::bf16}, 4), 1e-2);
}

}  // namespace
