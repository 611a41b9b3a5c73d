// The NCCL backend: with a GPU per rank, its collectives on device memory give what the MPI
// backend gives on host memory. Skipped (with a message) where there is no CUDA device.
#include <gtest/gtest.h>

#include <vector>

#include <tessel/dist/mpi.hpp>
#include <tessel/dist/nccl.hpp>
#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/tensor/host_tensor.hpp>

namespace {

using namespace tessel;
using namespace tessel::dist;

TEST(Nccl, CollectivesMatchTheMpiBackend) {
  if (gpu::device_count() == 0)
    GTEST_SKIP() << "no CUDA device on this machine: NCCL backend not run";
  MpiCommunicator mpi;
  gpu::Stream stream;
  NcclCommunicator nccl(mpi, stream);
  // all_gather_v of uneven float contributions, on both backends.
  std::vector<std::size_t> counts;
  for (int r = 0; r < mpi.size(); ++r)
    counts.push_back(static_cast<std::size_t>(r + 2) * sizeof(float));
  std::size_t total = 0;
  for (auto c : counts) total += c / sizeof(float);
  auto host_send = make_host_tensor<float>(make_shape(mpi.rank() + 2));
  for (index_t i = 0; i < size(host_send); ++i)
    host_send[i] = 0.5f * static_cast<float>(mpi.rank() * 10 + i);
  std::vector<float> expect(total);
  mpi.all_gather_v(
      std::as_bytes(std::span(host_send.data(), static_cast<std::size_t>(size(host_send)))),
      std::as_writable_bytes(std::span(expect)), counts);

  auto dev_send = make_device_tensor<float>(make_shape(mpi.rank() + 2));
  auto dev_recv = make_device_tensor<float>(make_shape(static_cast<index_t>(total)));
  gpu::copy_to_device(dev_send, host_send, stream);
  nccl.all_gather_v(
      std::as_bytes(std::span(dev_send.data(), static_cast<std::size_t>(size(dev_send)))),
      std::as_writable_bytes(std::span(dev_recv.data(), total)), counts);
  auto got = make_host_tensor<float>(make_shape(static_cast<index_t>(total)));
  gpu::copy_to_host(got, dev_recv, stream);
  stream.synchronize();
  for (std::size_t i = 0; i < total; ++i) EXPECT_EQ(got[static_cast<index_t>(i)], expect[i]);
}

}  // namespace
