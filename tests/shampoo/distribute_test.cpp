// distribute_buffer_sizes: the contract's example, alignment, tie rules, constexpr evaluation, a
// comparison against a plain re-statement of the greedy rule, and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include <tessel/shampoo/distribute.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using Assignment = std::vector<std::pair<index_t, index_t>>;

constexpr auto contract = distribute_buffer_sizes(std::array<index_t, 4>{128, 64, 500, 256}, 2);
static_assert(contract[0] == std::pair<index_t, index_t>{128, 1});
static_assert(contract[1] == std::pair<index_t, index_t>{64, 1});
static_assert(contract[2] == std::pair<index_t, index_t>{512, 0});
static_assert(contract[3] == std::pair<index_t, index_t>{256, 1});
static_assert(distribute_buffer_sizes(std::array<index_t, 0>{}, 3).empty());

TEST(DistributeBufferSizes, ContractExample) {
  EXPECT_EQ(distribute_buffer_sizes(std::vector<index_t>{128, 64, 500, 256}, 2),
            (Assignment{{128, 1}, {64, 1}, {512, 0}, {256, 1}}));
}

TEST(DistributeBufferSizes, RoundsUpToMultiplesOf64) {
  auto a = distribute_buffer_sizes(std::vector<index_t>{0, 1, 64, 65}, 1);
  EXPECT_EQ(a, (Assignment{{0, 0}, {64, 0}, {64, 0}, {128, 0}}));
}

TEST(DistributeBufferSizes, TiesKeepInputOrderAndGoToTheLowerRank) {
  // 100 and 120 both align to 128: visited in input order (100 first), so it takes rank 0.
  EXPECT_EQ(distribute_buffer_sizes(std::vector<index_t>{100, 120, 128}, 3),
            (Assignment{{128, 0}, {128, 1}, {128, 2}}));
}

// The rule restated without sorting tricks: repeatedly take the largest unvisited block (first
// in input order on ties) and give it to the least-loaded rank (lowest on ties).
Assignment reference(std::vector<index_t> const& bytes, index_t ranks) {
  std::size_t n = bytes.size();
  std::vector<index_t> aligned(n);
  for (std::size_t i = 0; i < n; ++i) aligned[i] = (bytes[i] + 63) / 64 * 64;
  std::vector<bool> done(n, false);
  std::vector<index_t> load(static_cast<std::size_t>(ranks), 0);
  Assignment out(n);
  for (std::size_t step = 0; step < n; ++step) {
    std::size_t pick = n;
    for (std::size_t i = 0; i < n; ++i)
      if (!done[i] && (pick == n || aligned[i] > aligned[pick])) pick = i;
    std::size_t r =
        static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[r] += aligned[pick];
    out[pick] = {aligned[pick], static_cast<index_t>(r)};
    done[pick] = true;
  }
  return out;
}

TEST(DistributeBufferSizes, AgreesWithTheGreedyRuleOnRandomInputs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::size_t n = rng() % 40;
    std::vector<index_t> bytes(n);
    for (auto& b : bytes) b = static_cast<index_t>(rng() % 1000);
    index_t ranks = 1 + static_cast<index_t>(rng() % 6);
    ASSERT_EQ(distribute_buffer_sizes(bytes, ranks), reference(bytes, ranks)) << "trial " << trial;
  }
}

TEST(DistributeBufferSizes, Errors) {
  auto message = [](auto f) {
    try {
      f();
    } catch (Error const& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { distribute_buffer_sizes(std::vector<index_t>{64}, 0); }),
            "distribute_buffer_sizes needs a group size >= 1, got 0.");
  EXPECT_EQ(message([] {
              distribute_buffer_sizes(std::vector<index_t>{64, -3}, 2);
            }),
            "distribute_buffer_sizes got the negative size -3 at position 1.");
  EXPECT_EQ(message([] { distribute_buffer_sizes(std::array<index_t, 1>{64}, -1); }),
            "distribute_buffer_sizes needs a group size >= 1, got -1.");
}

}  // namespace
