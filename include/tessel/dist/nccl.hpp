// NCCL backend (device memory): every span passed to its collectives is device memory, and every
// collective is queued on the communicator's stream (synchronize the stream before reading the
// result on the host). Bootstrapped from an MPI communicator, which carries the NCCL unique id.
// Include only where CUDA and NCCL are available (CMake: TESSEL_NCCL).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <vector>

#include "../exec/cuda/error.hpp"
#include "communicator.hpp"
#include "mpi.hpp"

namespace tessel::dist {

namespace detail {
inline void check_nccl(ncclResult_t status, char const* call) {
  if (status == ncclSuccess) return;
  tessel::detail::throw_error(
      tessel::detail::sentence(call, " failed: ", ncclGetErrorString(status), "."));
}
}  // namespace detail

class NcclCommunicator final : public Communicator {
 public:
  // One NCCL rank per MPI rank, on the current CUDA device, queuing work on `stream`.
  NcclCommunicator(MpiCommunicator& bootstrap, cudaStream_t stream) : stream_(stream) {
    ncclUniqueId id{};
    if (bootstrap.rank() == 0) detail::check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    bootstrap.broadcast(std::as_writable_bytes(std::span(&id, 1)), 0);
    detail::check_nccl(ncclCommInitRank(&comm_, bootstrap.size(), id, bootstrap.rank()),
                       "ncclCommInitRank");
    rank_ = bootstrap.rank();
    size_ = bootstrap.size();
  }
  ~NcclCommunicator() override {
    if (comm_) ncclCommDestroy(comm_);
    if (barrier_buffer_) cudaFree(barrier_buffer_);
  }
  NcclCommunicator(NcclCommunicator const&) = delete;
  NcclCommunicator& operator=(NcclCommunicator const&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  cudaStream_t stream() const { return stream_; }

  void all_gather(std::span<std::byte const> send, std::span<std::byte> recv) override {
    check_all_gather(send, recv);
    detail::check_nccl(
        ncclAllGather(send.data(), recv.data(), send.size(), ncclChar, comm_, stream_),
        "ncclAllGather");
  }

  // NCCL has no all-gather-v: one broadcast per rank inside a group, which NCCL fuses.
  void all_gather_v(std::span<std::byte const> send, std::span<std::byte> recv,
                    std::span<std::size_t const> counts) override {
    auto offsets = check_all_gather_v(send, recv, counts);
    detail::check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      auto ru = static_cast<std::size_t>(r);
      void const* src =
          r == rank_ ? static_cast<void const*>(send.data()) : recv.data() + offsets[ru];
      detail::check_nccl(
          ncclBroadcast(src, recv.data() + offsets[ru], counts[ru], ncclChar, r, comm_, stream_),
          "ncclBroadcast");
    }
    detail::check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

  void broadcast(std::span<std::byte> data, int root) override {
    check_root(root);
    detail::check_nccl(
        ncclBroadcast(data.data(), data.data(), data.size(), ncclChar, root, comm_, stream_),
        "ncclBroadcast");
  }

  void all_reduce_sum(std::span<float> data) override {
    detail::check_nccl(
        ncclAllReduce(data.data(), data.data(), data.size(), ncclFloat, ncclSum, comm_, stream_),
        "ncclAllReduce");
  }
  void all_reduce_sum(std::span<double> data) override {
    detail::check_nccl(
        ncclAllReduce(data.data(), data.data(), data.size(), ncclDouble, ncclSum, comm_, stream_),
        "ncclAllReduce");
  }

  // Waits until every rank reached this point: a one-element all-reduce, then the stream.
  void barrier() override {
    if (!barrier_buffer_)
      TESSEL_CUDA_CHECK(cudaMalloc(&barrier_buffer_, sizeof(float)),
                        "allocating NCCL's barrier word");
    all_reduce_sum(std::span(barrier_buffer_, 1));
    TESSEL_CUDA_CHECK(cudaStreamSynchronize(stream_), "waiting for an NCCL barrier");
  }

  std::unique_ptr<Communicator> split(int color) override {
    ncclComm_t sub = nullptr;
    detail::check_nccl(ncclCommSplit(comm_, color, rank_, &sub, nullptr), "ncclCommSplit");
    return std::unique_ptr<Communicator>(new NcclCommunicator(sub, stream_));
  }

 private:
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {
    detail::check_nccl(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    detail::check_nccl(ncclCommCount(comm_, &size_), "ncclCommCount");
  }

  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  float* barrier_buffer_ = nullptr;  // device word for barrier(), allocated on first use
};

}  // namespace tessel::dist
