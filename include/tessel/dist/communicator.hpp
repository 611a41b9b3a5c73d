// Communicator: the collective operations distributed Shampoo needs (all-gather of a flat update
// buffer, broadcast, sum all-reduce, sub-groups), behind one interface with real backends: a
// single process, MPI (host memory) and NCCL (device memory). Collectives are not on a per-element
// hot path, so a virtual interface keeps the optimizer independent of the backend.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "../core/error.hpp"

namespace tessel::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single-process", "mpi" or "nccl".
  virtual std::string backend() const = 0;

  // recv = concatenation over ranks (in rank order) of every rank's send; every rank sends the
  // same number of bytes. @pre recv.size() == size() * send.size() (tessel::Error otherwise)
  virtual void all_gather(std::span<std::byte const> send, std::span<std::byte> recv) = 0;

  // Like all_gather with per-rank byte counts: rank r's send lands at sum(counts[0..r)).
  // @pre counts.size() == size(), send.size() == counts[rank()], recv.size() == sum(counts)
  virtual void all_gather_v(std::span<std::byte const> send, std::span<std::byte> recv,
                            std::span<std::size_t const> counts) = 0;

  // Root's bytes to every rank.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;

  // Element-wise sum over ranks, in place.
  virtual void all_reduce_sum(std::span<float> data) = 0;
  virtual void all_reduce_sum(std::span<double> data) = 0;

  virtual void barrier() = 0;

  // The ranks with the same color, ordered by their rank here (MPI_Comm_split semantics).
  virtual std::unique_ptr<Communicator> split(int color) = 0;

 protected:
  // The shared argument checks, run before any communication.
  void check_all_gather(std::span<std::byte const> send, std::span<std::byte> recv) const {
    std::size_t expect = send.size() * static_cast<std::size_t>(size());
    if (recv.size() != expect)
      detail::throw_error(detail::sentence("all_gather on ", size(), " ranks of ", send.size(),
                                           " bytes each needs a receive buffer of ", expect,
                                           " bytes, not ", recv.size(), "."));
  }
  std::vector<std::size_t> check_all_gather_v(std::span<std::byte const> send,
                                              std::span<std::byte> recv,
                                              std::span<std::size_t const> counts) const {
    if (counts.size() != static_cast<std::size_t>(size()))
      detail::throw_error(
          detail::sentence("all_gather_v on ", size(), " ranks got ", counts.size(), " counts."));
    if (send.size() != counts[static_cast<std::size_t>(rank())])
      detail::throw_error(detail::sentence("all_gather_v: rank ", rank(), " sends ", send.size(),
                                           " bytes but its count says ",
                                           counts[static_cast<std::size_t>(rank())], "."));
    std::vector<std::size_t> offsets(counts.size() + 1, 0);
    for (std::size_t r = 0; r < counts.size(); ++r) offsets[r + 1] = offsets[r] + counts[r];
    if (recv.size() != offsets.back())
      detail::throw_error(detail::sentence("all_gather_v needs a receive buffer of ",
                                           offsets.back(), " bytes (the sum of the counts), not ",
                                           recv.size(), "."));
    return offsets;
  }
  void check_root(int root) const {
    if (root < 0 || root >= size())
      detail::throw_error(detail::sentence("broadcast root ", root, " is not a rank of this ",
                                           size(), "-rank communicator."));
  }
};

}  // namespace tessel::dist
