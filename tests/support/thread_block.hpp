// ThreadBlock: a CUDA-like thread block on the host, to run kernel bodies with several lanes
// (strided loops, a barrier reduction, concurrent writes) without a GPU. Its Context has the
// execution-context interface of exec::SequentialContext and exec::BlockContext (lane(),
// lanes(), reduce(partial, combine)), so any row body runs on it.
#pragma once

#include <array>
#include <barrier>
#include <cstddef>
#include <cstring>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <tessel/core/config.hpp>

namespace tessel::test {

// A CUDA-like block on the host: `lanes` threads run the body; reduce() publishes each lane's
// partial, waits for all, combines them in lane order and waits again before the slots are reused.
class ThreadBlock {
 public:
  explicit ThreadBlock(int lanes) : lanes_(lanes), barrier_(lanes), slots_(lanes) {}

  class Context {
   public:
    Context(ThreadBlock& block, int lane) : block_(block), lane_(lane) {}
    index_t lane() const { return lane_; }
    index_t lanes() const { return block_.lanes_; }
    template <class T, class Combine>
    T reduce(T partial, Combine const& combine) const {
      static_assert(sizeof(T) <= sizeof(Slot) && std::is_trivially_copyable_v<T>);
      std::memcpy(block_.slots_[lane_].data(), &partial, sizeof(T));
      block_.barrier_.arrive_and_wait();
      T total;
      std::memcpy(&total, block_.slots_[0].data(), sizeof(T));
      for (int k = 1; k < block_.lanes_; ++k) {
        T other;
        std::memcpy(&other, block_.slots_[k].data(), sizeof(T));
        total = combine(total, other);
      }
      block_.barrier_.arrive_and_wait();
      return total;
    }

   private:
    ThreadBlock& block_;
    int lane_;
  };

  // Runs body(ctx) on every lane; returns lane 0's result.
  template <class Body>
  auto run(Body body) {
    std::vector<decltype(body(std::declval<Context&>()))> results(lanes_);
    std::vector<std::thread> threads;
    for (int k = 0; k < lanes_; ++k)
      threads.emplace_back([&, k] {
        Context ctx(*this, k);
        results[k] = body(ctx);
      });
    for (auto& t : threads) t.join();
    return results[0];
  }

 private:
  using Slot = std::array<std::byte, 64>;
  int lanes_;
  std::barrier<> barrier_;
  std::vector<Slot> slots_;
};

}  // namespace tessel::test
