// The one-rank communicator: every collective is a local copy. The single-process optimizer is
// the distributed one run with this backend.
#pragma once

#include <algorithm>
#include <cstring>

#include "communicator.hpp"

namespace tessel::dist {

class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single-process"; }

  void all_gather(std::span<std::byte const> send, std::span<std::byte> recv) override {
    check_all_gather(send, recv);
    if (!send.empty()) std::memmove(recv.data(), send.data(), send.size());
  }
  void all_gather_v(std::span<std::byte const> send, std::span<std::byte> recv,
                    std::span<std::size_t const> counts) override {
    check_all_gather_v(send, recv, counts);
    if (!send.empty()) std::memmove(recv.data(), send.data(), send.size());
  }
  void broadcast(std::span<std::byte>, int root) override { check_root(root); }
  void all_reduce_sum(std::span<float>) override {}
  void all_reduce_sum(std::span<double>) override {}
  void barrier() override {}
  std::unique_ptr<Communicator> split(int) override {
    return std::make_unique<SingleProcessCommunicator>();
  }
};

}  // namespace tessel::dist
