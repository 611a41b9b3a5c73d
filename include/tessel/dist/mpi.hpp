// MPI backend (host memory): MpiSession initializes and finalizes MPI; MpiCommunicator wraps an
// MPI communicator whose errors return codes, turned into tessel::Error sentences.
// Include only where MPI is available (CMake: TESSEL_MPI, target MPI::MPI_CXX).
#pragma once

#include <mpi.h>

#include <climits>
#include <vector>

#include "communicator.hpp"

namespace tessel::dist {

namespace detail {
inline void check_mpi(int code, char const* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  tessel::detail::throw_error(tessel::detail::sentence(
      call, " failed: ", std::string(text, static_cast<std::size_t>(length)), "."));
}

// MPI counts are int; larger buffers go in pieces elsewhere, so refuse them clearly here. unit:
// what the count counts ("bytes", or "elements" for typed calls such as all-reduce).
inline int mpi_count(std::size_t count, char const* what, char const* unit = "bytes") {
  if (count > static_cast<std::size_t>(INT_MAX))
    tessel::detail::throw_error(tessel::detail::sentence(what, " of ", count, " ", unit,
                                                         " exceeds MPI's limit of ", INT_MAX, " ",
                                                         unit, " per call."));
  return static_cast<int>(count);
}
}  // namespace detail

// MPI_Init_thread / MPI_Finalize for the lifetime of the object (one per process).
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      detail::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided),
                        "MPI_Init_thread");
      owns_ = true;
    }
  }
  ~MpiSession() {
    if (owns_) MPI_Finalize();
  }
  MpiSession(MpiSession const&) = delete;
  MpiSession& operator=(MpiSession const&) = delete;

 private:
  bool owns_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  // A duplicate of comm (MPI_COMM_WORLD by default), so tessel's traffic never mixes with the
  // caller's. @pre MPI is initialized (an MpiSession exists)
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD) {
    detail::check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  MpiCommunicator(MpiCommunicator const&) = delete;
  MpiCommunicator& operator=(MpiCommunicator const&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  MPI_Comm native() const { return comm_; }

  void all_gather(std::span<std::byte const> send, std::span<std::byte> recv) override {
    check_all_gather(send, recv);
    int n = detail::mpi_count(send.size(), "an all_gather contribution");
    detail::check_mpi(MPI_Allgather(send.data(), n, MPI_BYTE, recv.data(), n, MPI_BYTE, comm_),
                      "MPI_Allgather");
  }

  void all_gather_v(std::span<std::byte const> send, std::span<std::byte> recv,
                    std::span<std::size_t const> counts) override {
    auto offsets = check_all_gather_v(send, recv, counts);
    std::vector<int> c(counts.size()), d(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) {
      c[r] = detail::mpi_count(counts[r], "an all_gather_v contribution");
      d[r] = detail::mpi_count(offsets[r], "an all_gather_v displacement");
    }
    detail::check_mpi(MPI_Allgatherv(send.data(), c[static_cast<std::size_t>(rank_)], MPI_BYTE,
                                     recv.data(), c.data(), d.data(), MPI_BYTE, comm_),
                      "MPI_Allgatherv");
  }

  void broadcast(std::span<std::byte> data, int root) override {
    check_root(root);
    detail::check_mpi(MPI_Bcast(data.data(), detail::mpi_count(data.size(), "a broadcast"),
                                MPI_BYTE, root, comm_),
                      "MPI_Bcast");
  }

  void all_reduce_sum(std::span<float> data) override {
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data(),
                                    detail::mpi_count(data.size(), "an all-reduce", "elements"),
                                    MPI_FLOAT, MPI_SUM, comm_),
                      "MPI_Allreduce");
  }
  void all_reduce_sum(std::span<double> data) override {
    detail::check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data(),
                                    detail::mpi_count(data.size(), "an all-reduce", "elements"),
                                    MPI_DOUBLE, MPI_SUM, comm_),
                      "MPI_Allreduce");
  }

  void barrier() override { detail::check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

  std::unique_ptr<Communicator> split(int color) override {
    MPI_Comm sub = MPI_COMM_NULL;
    detail::check_mpi(MPI_Comm_split(comm_, color, rank_, &sub), "MPI_Comm_split");
    auto out = std::make_unique<MpiCommunicator>(sub);
    MPI_Comm_free(&sub);
    return out;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace tessel::dist
