// Swizzles: an involution and a bijection of its blocks; composed with layouts it gives
// swizzle(layout(x)) for static and run-time layouts alike; SmemSwizzle removes the bank
// conflicts of a transposing copy through shared memory (the arithmetic, checked on the host).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <tessel/core/swizzle.hpp>

#include "small_layouts.hpp"

namespace {

using namespace tessel;

// ---- static facts ----

// Swizzle<3,3,3>: bits 6..8 (the row of a 64-wide tile) flip bits 3..5 (the 8-element vector).
static_assert(Swizzle<3, 3, 3>::source_mask == 0x1c0);
static_assert(Swizzle<3, 3, 3>::target_mask == 0x38);
static_assert(Swizzle<3, 3, 3>::block == 64);
static_assert(std::is_same_v<decltype(size(Swizzle<3, 3, 3>{})), Int<512>>);
static_assert(std::is_same_v<decltype(cosize(Swizzle<3, 3, 3>{})), Int<512>>);
// Row 1, element 8 (vector 1) moves to vector 0; a static offset stays static.
static_assert(std::is_same_v<decltype(Swizzle<3, 3, 3>{}(Int<72>{})), Int<64>>);
static_assert(Swizzle<3, 3, 3>{}(index_t{72}) == 64);
static_assert(Swizzle<3, 3, 3>{}(index_t{7}) == 7);  // the M = 3 low bits never move
// A negative shift reads the low bits and flips the high ones: 0b00011 -> 0b11011.
static_assert(Swizzle<2, 0, -3>::source_mask == 0x3);
static_assert(Swizzle<2, 0, -3>::target_mask == 0x18);
static_assert(Swizzle<2, 0, -3>{}(index_t{3}) == 27);
static_assert(Swizzle<2, 0, -3>::block == 32);
// B = 0 is the identity, its block a single offset.
static_assert(Swizzle<0, 4, 0>{}(index_t{37}) == 37);
static_assert(Swizzle<0, 4, 0>::block == 1);
// Its own inverse.
static_assert(std::is_same_v<decltype(left_inverse(Swizzle<2, 1, 3>{})), Swizzle<2, 1, 3>>);
static_assert(std::is_same_v<decltype(right_inverse(Swizzle<2, 1, -2>{})), Swizzle<2, 1, -2>>);

// A static swizzled layout: static offsets, shape, size and cosize.
constexpr auto tile8 = composition(Swizzle<3, 0, 3>{}, make_layout(make_shape(Int<8>{}, Int<8>{})));
static_assert(std::is_same_v<decltype(tile8(Int<1>{}, Int<0>{})), Int<9>>);
static_assert(std::is_same_v<decltype(tile8(Int<63>{})), Int<56>>);
static_assert(std::is_same_v<decltype(size(tile8)), Int<64>>);
static_assert(std::is_same_v<decltype(cosize(tile8)), Int<64>>);
static_assert(std::is_same_v<decltype(rank(tile8)), Int<2>>);
static_assert(equal(shape(tile8), make_shape(Int<8>{}, Int<8>{})));
// A layout that does not fill the swizzle's last block: cosize rounds up to it.
static_assert(std::is_same_v<decltype(cosize(composition(Swizzle<2, 0, 2>{}, Int<5>{}))), Int<8>>);
// Run-time coordinates give run-time offsets from the same code.
static_assert(tile8(index_t{2}, index_t{3}) == 17);
static_assert(composition(Swizzle<3, 0, 3>{}, make_layout(make_shape(8, 8)))(2, 3) == 17);
// A swizzled layout after another layout keeps the swizzle outermost.
static_assert(
    std::is_same_v<decltype(composition(tile8,
                                        make_layout(make_shape(Int<8>{}), make_stride(Int<8>{})))),
                   SwizzledLayout<Swizzle<3, 0, 3>, Layout<tuple<Int<8>>, tuple<Int<8>>>>>);

// The shared-memory rule: B = min(r, 3), M = log2(16 / sizeof(T)), S = max(r, 3) for rows of 2^r
// 16-byte vectors.
static_assert(std::is_same_v<SmemSwizzle<std::uint16_t, 64>, Swizzle<3, 3, 3>>);  // 128 B rows
static_assert(std::is_same_v<SmemSwizzle<float, 32>, Swizzle<3, 2, 3>>);          // 128 B rows
static_assert(std::is_same_v<SmemSwizzle<float, 16>, Swizzle<2, 2, 3>>);          // 64 B rows
static_assert(std::is_same_v<SmemSwizzle<double, 128>, Swizzle<3, 1, 6>>);        // 1 KiB rows
static_assert(std::is_same_v<SmemSwizzle<std::uint8_t, 16>, Swizzle<0, 4, 3>>);   // one vector
static_assert(
    std::is_same_v<decltype(cosize(smem_swizzled_layout<float>(Int<8>{}, Int<16>{}))), Int<128>>);

// ---- run-time checks ----

template <int B, int M, int S>
void check_swizzle_bijection() {
  constexpr Swizzle<B, M, S> sw{};
  constexpr index_t n = decltype(size(sw))::value;
  constexpr index_t block = Swizzle<B, M, S>::block;
  std::string name = to_string(sw);
  std::vector<int> hits(static_cast<std::size_t>(n), 0);
  std::size_t moved = 0;
  for (index_t x = 0; x < n; ++x) {
    index_t y = sw(x);
    ASSERT_TRUE(y >= 0 && y < n) << name << ": " << x << " -> " << y;
    ++hits[static_cast<std::size_t>(y)];
    ASSERT_EQ(sw(y), x) << name << " is not an involution at " << x;
    ASSERT_EQ(y / block, x / block) << name << " leaves its block at " << x;
    ASSERT_EQ(x & ((index_t{1} << M) - 1), y & ((index_t{1} << M) - 1)) << name << " at " << x;
    ASSERT_EQ(sw(x + 3 * n), y + 3 * n) << name << " is not periodic at " << x;
    moved += x != y ? 1 : 0;
  }
  for (index_t y = 0; y < n; ++y)
    ASSERT_EQ(hits[static_cast<std::size_t>(y)], 1) << name << " is not a bijection at " << y;
  // Every offset whose source bits are non-zero moves: 1 - 2^-B of them.
  EXPECT_EQ(moved, static_cast<std::size_t>(n - (n >> B))) << name;
}

TEST(Swizzle, IsAnInvolutionAndABijectionOfItsBlocks) {
  check_swizzle_bijection<0, 0, 0>();
  check_swizzle_bijection<1, 0, 1>();
  check_swizzle_bijection<1, 2, 3>();
  check_swizzle_bijection<2, 0, 2>();
  check_swizzle_bijection<2, 1, 3>();
  check_swizzle_bijection<2, 2, -2>();
  check_swizzle_bijection<2, 0, -4>();
  check_swizzle_bijection<3, 0, 3>();
  check_swizzle_bijection<3, 3, 3>();
  check_swizzle_bijection<3, 4, 3>();
  check_swizzle_bijection<3, 1, 5>();
  check_swizzle_bijection<3, 2, -3>();
}

// The swizzled offsets of an injective layout are distinct and below cosize; for a compact
// layout whose cosize is a multiple of the block they are exactly [0, cosize).
template <int B, int M, int S>
void check_small_layouts() {
  constexpr Swizzle<B, M, S> sw{};
  std::size_t exact = 0;
  for (auto const& small : test_support::small_layouts(false)) {
    auto l = small.layout();
    auto sl = composition(sw, l);
    std::set<index_t> plain;
    std::set<index_t> swizzled;
    index_t largest = -1;
    for (index_t i = 0; i < size(l); ++i) {
      plain.insert(l(i));
      index_t o = sl(i);
      ASSERT_EQ(o, sw(l(i))) << to_string(sl);
      ASSERT_LT(o, cosize(sl)) << to_string(sl) << " at " << i;
      swizzled.insert(o);
      largest = std::max(largest, o);
    }
    // A bijection of the codomain: as many distinct offsets after the swizzle as before.
    ASSERT_EQ(swizzled.size(), plain.size()) << to_string(sl);
    // A layout reaching every offset of [0, cosize(l)) with cosize(l) a multiple of the block is
    // permuted onto itself, and cosize is exact.
    index_t c = cosize(l);
    if (static_cast<index_t>(plain.size()) == c && c % Swizzle<B, M, S>::block == 0) {
      ASSERT_EQ(cosize(sl), c) << to_string(sl);
      ASSERT_EQ(largest + 1, c) << to_string(sl);
      ASSERT_EQ(static_cast<index_t>(swizzled.size()), c) << to_string(sl);
      ++exact;
    }
  }
  EXPECT_GT(exact, 10u) << to_string(sw);
}

TEST(SwizzledLayout, IsABijectionOfTheLayoutsCodomain) {
  check_small_layouts<1, 0, 1>();
  check_small_layouts<1, 1, 2>();
  check_small_layouts<2, 0, 2>();
  check_small_layouts<1, 0, -2>();
}

TEST(SwizzledLayout, StaticAndRunTimeLayoutsGiveTheSameOffsets) {
  constexpr Swizzle<3, 3, 3> sw{};
  // A static, a mixed and a run-time (8, 64) tile; a hierarchical (8, (2, 32)) view of it.
  auto s = composition(sw, make_layout(make_shape(Int<8>{}, Int<64>{})));
  auto m = composition(sw, make_layout(make_shape(index_t{8}, Int<64>{})));
  auto d = composition(sw, make_layout(make_shape(index_t{8}, index_t{64})));
  auto h = composition(sw, make_layout(make_shape(Int<8>{}, make_shape(Int<2>{}, Int<32>{}))));
  std::set<index_t> seen;
  for (index_t i = 0; i < 8; ++i)
    for (index_t j = 0; j < 64; ++j) {
      index_t expected = sw(i * 64 + j);
      ASSERT_EQ(s(i, j), expected) << i << "," << j;
      ASSERT_EQ(m(i, j), expected) << i << "," << j;
      ASSERT_EQ(d(i, j), expected) << i << "," << j;
      ASSERT_EQ(h(i, j), expected) << i << "," << j;
      ASSERT_EQ(d(i * 64 + j), expected) << "1-D index " << i * 64 + j;
      ASSERT_EQ((swizzled_offset(sw, make_layout(make_shape(8, 64)), i, j)), expected);
      seen.insert(expected);
    }
  EXPECT_EQ(seen.size(), 512u);
  EXPECT_EQ(cosize(d), 512);
  EXPECT_EQ(size(d), 512);
  // A column-major layout underneath: the swizzle still acts on its offsets.
  constexpr Swizzle<2, 0, 2> sw2{};
  auto cm = composition(sw2, make_layout(make_shape(4, 4), make_stride(1, 4)));
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 4; ++j) ASSERT_EQ(cm(i, j), sw2(i + 4 * j));
}

TEST(SwizzledLayout, ComposesWithALayoutAfterIt) {
  auto tile = composition(Swizzle<3, 0, 3>{}, make_layout(make_shape(8, 8)));
  // Column 0 of the tile, every second row, and the transposed tile.
  auto column = composition(tile, make_layout(make_shape(8), make_stride(8)));
  auto even_rows = composition(tile, make_layout(make_shape(4, 8), make_stride(16, 1)));
  auto transposed = composition(tile, make_layout(make_shape(8, 8), make_stride(1, 8)));
  for (index_t i = 0; i < 8; ++i) {
    ASSERT_EQ(column(i), tile(i, 0));
    for (index_t j = 0; j < 8; ++j) {
      if (i < 4) {
        ASSERT_EQ(even_rows(i, j), tile(2 * i, j));
      }
      ASSERT_EQ(transposed(i, j), tile(j, i));
    }
  }
  EXPECT_NE(transposed(1, 2), transposed(2, 1));
}

// Writes a (rows, cols) tile row-wise through a swizzled layout and reads it back column-wise:
// the transposing copy a kernel does through shared memory.
TEST(SwizzledLayout, TransposingCopyThroughSwizzledMemory) {
  auto tile = smem_swizzled_layout<float>(index_t{32}, Int<32>{});
  std::vector<float> smem(static_cast<std::size_t>(cosize(tile)), -1.0f);
  for (index_t i = 0; i < 32; ++i)
    for (index_t j = 0; j < 32; ++j)
      smem[static_cast<std::size_t>(tile(i, j))] = static_cast<float>(i * 32 + j);
  for (index_t j = 0; j < 32; ++j)
    for (index_t i = 0; i < 32; ++i)
      ASSERT_EQ(smem[static_cast<std::size_t>(tile(i, j))], static_cast<float>(i * 32 + j));
  EXPECT_EQ(std::count(smem.begin(), smem.end(), -1.0f), 0);
  // The storage really is permuted: row 1 does not start at offset 32.
  EXPECT_NE(smem[32], 32.0f);
}

// ---- bank conflicts ----

// The most distinct 4-byte words that one of the 32 banks serves for these 16-byte accesses (byte
// addresses): 1 for 8 conflict-free accesses, 4 at best for 32 (512 bytes).
index_t wavefronts(std::vector<index_t> const& byte_addresses) {
  std::map<index_t, std::set<index_t>> words_per_bank;
  for (index_t a : byte_addresses)
    for (index_t w = a / 4; w < a / 4 + 4; ++w) words_per_bank[w % 32].insert(w);
  std::size_t most = 0;
  for (auto const& [bank, words] : words_per_bank) most = std::max(most, words.size());
  return static_cast<index_t>(most);
}

struct Conflicts {
  index_t row_wise = 0;     // the worst quarter warp reading 8 consecutive vectors of a row
  index_t column_wise = 0;  // the worst quarter warp reading one vector column of 8 rows
  index_t warp_column = 0;  // the worst warp reading one vector column of 32 rows
};

// Each thread accesses one 16-byte vector (V elements) of a row-major (rows, cols) tile of T.
// Shared memory serves 16-byte accesses a quarter warp (8 threads, 128 bytes) at a time.
template <class T, class Tile>
Conflicts conflicts(Tile const& tile, index_t rows, index_t cols) {
  index_t v = 16 / static_cast<index_t>(sizeof(T));
  index_t r = cols / v;  // vectors per row
  auto address = [&](index_t row, index_t vec) {
    index_t offset = tile(row, vec * v);
    EXPECT_EQ(offset % v, 0) << "a vector is split at " << row << "," << vec;
    return offset * static_cast<index_t>(sizeof(T));
  };
  Conflicts c;
  for (index_t first = 0; first < rows * r; first += 8) {
    std::vector<index_t> q;
    for (index_t t = 0; t < 8; ++t) q.push_back(address((first + t) / r, (first + t) % r));
    c.row_wise = std::max(c.row_wise, wavefronts(q));
  }
  for (index_t vec = 0; vec < r; ++vec)
    for (index_t row0 = 0; row0 < rows; row0 += 8) {
      std::vector<index_t> q;
      for (index_t t = 0; t < 8; ++t) q.push_back(address((row0 + t) % rows, vec));
      c.column_wise = std::max(c.column_wise, wavefronts(q));
    }
  for (index_t vec = 0; vec < r; ++vec)
    for (index_t row0 = 0; row0 < rows; row0 += 32) {
      std::vector<index_t> warp;
      for (index_t t = 0; t < 32; ++t) warp.push_back(address((row0 + t) % rows, vec));
      c.warp_column = std::max(c.warp_column, wavefronts(warp));
    }
  return c;
}

template <class T, index_t Cols>
void check_smem_swizzle(index_t rows) {
  auto swizzled = smem_swizzled_layout<T>(rows, Int<Cols>{});
  auto plain = make_layout(make_shape(rows, Int<Cols>{}));
  Conflicts s = conflicts<T>(swizzled, rows, Cols);
  Conflicts p = conflicts<T>(plain, rows, Cols);
  std::string name = to_string(swizzled);
  index_t r = Cols * static_cast<index_t>(sizeof(T)) / 16;
  EXPECT_EQ(s.row_wise, 1) << name;
  EXPECT_EQ(s.column_wise, 1) << name;
  EXPECT_EQ(s.warp_column, 4) << name;  // 512 bytes: 4 quarter warps, no more
  EXPECT_EQ(p.row_wise, 1) << name;
  // Unswizzled, 8 rows of r vectors land in min(r, 8)-way conflicts.
  EXPECT_EQ(p.column_wise, std::min<index_t>(r, 8)) << name;
  EXPECT_EQ(p.warp_column, 4 * std::min<index_t>(r, 8)) << name;
  // The swizzled tile uses exactly the tile's memory.
  EXPECT_EQ(cosize(swizzled), rows * Cols) << name;
}

TEST(SmemSwizzle, RemovesTheBankConflictsOfAColumnWiseAccess) {
  for (index_t rows : {32, 64}) {
    check_smem_swizzle<std::uint16_t, 64>(rows);   // 128-byte rows of halves: Swizzle<3,3,3>
    check_smem_swizzle<std::uint16_t, 32>(rows);   // 64-byte rows
    check_smem_swizzle<std::uint16_t, 16>(rows);   // 32-byte rows
    check_smem_swizzle<std::uint16_t, 8>(rows);    // one vector per row: nothing to fix
    check_smem_swizzle<std::uint16_t, 128>(rows);  // 256-byte rows
    check_smem_swizzle<float, 32>(rows);
    check_smem_swizzle<float, 16>(rows);
    check_smem_swizzle<float, 256>(rows);  // 1 KiB rows
    check_smem_swizzle<double, 16>(rows);
    check_smem_swizzle<std::uint8_t, 128>(rows);
  }
}

// ---- text ----

TEST(SwizzledLayout, Text) {
  EXPECT_EQ(to_string(Swizzle<3, 3, 3>{}), "Swizzle<3,3,3>");
  EXPECT_EQ(to_string(Swizzle<2, 0, -3>{}), "Swizzle<2,0,-3>");
  std::ostringstream os;
  os << smem_swizzled_layout<float>(index_t{4}, Int<16>{}) << " " << Swizzle<1, 2, 3>{};
  EXPECT_EQ(os.str(), "Swizzle<2,2,3> o (4,_16):(_16,_1) Swizzle<1,2,3>");
}

TEST(SwizzledLayout, PrintLayoutShowsTheSwizzledOffsets) {
  std::ostringstream os;
  print_layout(os, composition(Swizzle<2, 0, 2>{}, make_layout(make_shape(Int<4>{}, Int<4>{}))));
  EXPECT_EQ(os.str(),
            "Swizzle<2,0,2> o (_4,_4):(_4,_1)\n"
            "      0    1    2    3  \n"
            "   +----+----+----+----+\n"
            " 0 |  0 |  1 |  2 |  3 |\n"
            "   +----+----+----+----+\n"
            " 1 |  5 |  4 |  7 |  6 |\n"
            "   +----+----+----+----+\n"
            " 2 | 10 | 11 |  8 |  9 |\n"
            "   +----+----+----+----+\n"
            " 3 | 15 | 14 | 13 | 12 |\n"
            "   +----+----+----+----+\n");
}

}  // namespace
