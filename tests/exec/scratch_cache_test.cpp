// The host scratch cache (exec/host/scratch_cache.hpp): a freed block serves the calling thread's
// next request of about its size, within the per-thread bound, and goes back to the system on
// release; small blocks are left to malloc. Each test sets the bound itself (the default is 0 under
// AddressSanitizer).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <thread>

#include <tessel/exec/memory.hpp>

namespace {

using namespace tessel;

using Host = exec::Memory<exec::Serial>;

// Sets the bound for one test, empties this thread's cache before and after.
class ScratchCache : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = exec::set_scratch_cache_bytes(index_t{64} << 20);
    exec::release_scratch_cache();
  }
  void TearDown() override {
    exec::release_scratch_cache();
    exec::set_scratch_cache_bytes(previous_);
  }

 private:
  index_t previous_ = 0;
};

std::uintptr_t address(void const* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

TEST_F(ScratchCache, AFreedBlockServesTheNextRequestOfAboutItsSize) {
  float* first = nullptr;
  {
    auto s = Host::scratch<float>({}, 1 << 20);
    first = s.data();
    s.data()[0] = 1.0f;
  }
  EXPECT_EQ(exec::cached_scratch_bytes(), index_t{4} << 20);
  {
    // Three quarters of the size: the same block, aligned as every scratch is.
    auto s = Host::scratch<float>({}, 3 << 18);
    EXPECT_EQ(s.data(), first);
    EXPECT_EQ(address(s.data()) % exec::scratch_alignment, 0u);
    EXPECT_EQ(exec::cached_scratch_bytes(), 0);
  }
  {
    // Less than half the block's size: a new block, the cached one stays.
    auto s = Host::scratch<float>({}, 1 << 18);
    EXPECT_NE(s.data(), first);
    EXPECT_EQ(exec::cached_scratch_bytes(), index_t{4} << 20);
  }
  EXPECT_EQ(exec::cached_scratch_bytes(), (index_t{4} << 20) + (index_t{1} << 20));
  {
    // Larger than every cached block: none is taken.
    auto s = Host::scratch<float>({}, (1 << 20) + 1);
    EXPECT_EQ(exec::cached_scratch_bytes(), (index_t{4} << 20) + (index_t{1} << 20));
  }
}

TEST_F(ScratchCache, TheSmallestFittingBlockIsTaken) {
  std::byte* small = nullptr;
  std::byte* large = nullptr;
  {
    auto a = Host::scratch<std::byte>({}, 3000 << 10);
    auto b = Host::scratch<std::byte>({}, 2000 << 10);
    large = a.data();
    small = b.data();
  }
  auto s = Host::scratch<std::byte>({}, 1800 << 10);
  EXPECT_EQ(s.data(), small);
  auto t = Host::scratch<std::byte>({}, 1800 << 10);
  EXPECT_EQ(t.data(), large);
}

TEST_F(ScratchCache, TheBoundEvictsTheLeastRecentlyFreedBlocks) {
  exec::set_scratch_cache_bytes(index_t{10} << 20);
  {
    auto a = Host::scratch<std::byte>({}, 4 << 20);
    auto b = Host::scratch<std::byte>({}, 4 << 20);
    auto c = Host::scratch<std::byte>({}, 4 << 20);
  }  // freed c, b, a
  // c and b were freed first; c went when a came (8 + 4 MiB would pass 10 MiB).
  EXPECT_EQ(exec::cached_scratch_bytes(), index_t{8} << 20);
  auto s = Host::scratch<std::byte>({}, 4 << 20);
  EXPECT_EQ(exec::cached_scratch_bytes(), index_t{4} << 20);
  // A block larger than the bound is never kept.
  { auto big = Host::scratch<std::byte>({}, 11 << 20); }
  EXPECT_EQ(exec::cached_scratch_bytes(), index_t{4} << 20);
}

TEST_F(ScratchCache, AtMostEightBlocksAreKept) {
  {
    auto a = Host::scratch<float>({}, 1 << 15);
    auto b = Host::scratch<float>({}, 1 << 15);
    auto c = Host::scratch<float>({}, 1 << 15);
    auto d = Host::scratch<float>({}, 1 << 15);
    auto e = Host::scratch<float>({}, 1 << 15);
    auto f = Host::scratch<float>({}, 1 << 15);
    auto g = Host::scratch<float>({}, 1 << 15);
    auto h = Host::scratch<float>({}, 1 << 15);
    auto i = Host::scratch<float>({}, 1 << 15);
    auto j = Host::scratch<float>({}, 1 << 15);
  }
  EXPECT_EQ(exec::cached_scratch_bytes(), 8 * (index_t{1} << 17));
}

TEST_F(ScratchCache, BlocksUnder64KiBAreLeftToMalloc) {
  { auto s = Host::scratch<std::byte>({}, (64 << 10) - 256); }
  EXPECT_EQ(exec::cached_scratch_bytes(), 0);
  { auto s = Host::scratch<std::byte>({}, (64 << 10) - 255); }  // rounds up to 64 KiB
  EXPECT_EQ(exec::cached_scratch_bytes(), index_t{64} << 10);
}

TEST_F(ScratchCache, ZeroKeepsNothingAndReleaseEmptiesTheCache) {
  { auto s = Host::scratch<double>({}, 1 << 14); }
  EXPECT_GT(exec::cached_scratch_bytes(), 0);
  exec::release_scratch_cache();
  EXPECT_EQ(exec::cached_scratch_bytes(), 0);
  exec::set_scratch_cache_bytes(0);
  { auto s = Host::scratch<double>({}, 1 << 14); }
  EXPECT_EQ(exec::cached_scratch_bytes(), 0);
}

TEST_F(ScratchCache, EachThreadKeepsItsOwnBlocks) {
  { auto s = Host::scratch<float>({}, 1 << 16); }
  index_t other_before = -1, other_after = -1;
  std::thread([&] {
    other_before = exec::cached_scratch_bytes();
    { auto s = Host::scratch<float>({}, 1 << 16); }
    other_after = exec::cached_scratch_bytes();
  }).join();
  EXPECT_EQ(other_before, 0);
  EXPECT_EQ(other_after, index_t{1} << 18);
  EXPECT_EQ(exec::cached_scratch_bytes(), index_t{1} << 18);  // this thread's, untouched
}

}  // namespace
