// The host executor's flat path (exec/host/flat.hpp) against its general loop nest: the same
// assignment with (n):(_1) layouts, which the compiler sends down the flat path, and with (n):(1)
// (the unit stride a run-time value), which it cannot, must give the same bits: elementwise
// expressions in every storage type, broadcast leaves, in-place and overlapping destinations, and
// reductions over a vector and over rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <tessel/tessel.hpp>

namespace {

using namespace tessel;
using exec::detail::flat_elementwise_v;
using exec::detail::flat_reduction;

// A vector the compiler knows is contiguous, and the same memory seen through a run-time stride.
template <class T>
auto known(T* p, index_t n) {
  return make_tensor(p, make_layout(make_shape(n)));
}
template <class T>
auto unknown(T* p, index_t n) {
  return make_tensor(p, make_layout(make_shape(n), make_stride(index_t{1})));
}
template <class T>
auto known_rows(T* p, index_t r, index_t n) {
  return make_tensor(p, make_layout(make_shape(r, n)));
}
template <class T>
auto unknown_rows(T* p, index_t r, index_t n) {
  return make_tensor(p, make_layout(make_shape(r, n), make_stride(n, index_t{1})));
}

using KnownF = decltype(known(static_cast<float*>(nullptr), 1));
using UnknownF = decltype(unknown(static_cast<float*>(nullptr), 1));
using Leaf = tessel::detail::TensorLeaf<KnownF>;
using Strided = tessel::detail::TensorLeaf<UnknownF>;
using Sum = tessel::detail::Map<ops::Add, Leaf, Leaf>;
static_assert(flat_elementwise_v<KnownF, Sum>);
static_assert(!flat_elementwise_v<UnknownF, Sum>);
static_assert(!flat_elementwise_v<KnownF, tessel::detail::Map<ops::Add, Leaf, Strided>>);
static_assert(flat_reduction<KnownF, tessel::detail::Reduce<reduction::Sum, Leaf,
                                                            tessel::detail::all_modes, true>>());

std::vector<float> values(index_t n, unsigned seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  unsigned x = seed;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>(static_cast<int>(x >> 9) % 2001 - 1000) / 97.0f;
  }
  return v;
}

template <class T>
bool same_bits(std::vector<T> const& a, std::vector<T> const& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Sizes around the packet widths, the thread split and the streaming threshold.
constexpr index_t sizes[] = {1, 3, 17, 64, 1000, 70001};

TEST(FlatPath, ElementwiseMatchesTheLoopNest) {
  for (index_t n : sizes) {
    auto const a = values(n, 1), b = values(n, 2);
    std::vector<float> flat(a.size()), nest(a.size());
    assign(known(flat.data(), n),
           exp(known(a.data(), n) * 0.25f) - known(b.data(), n) / (abs(known(a.data(), n)) + 1.0f),
           exec::Auto{});
    assign(unknown(nest.data(), n),
           exp(unknown(a.data(), n) * 0.25f) -
               unknown(b.data(), n) / (abs(unknown(a.data(), n)) + 1.0f),
           exec::Auto{});
    EXPECT_TRUE(same_bits(flat, nest)) << n;
  }
}

TEST(FlatPath, StorageTypesAndCasts) {
  for (index_t n : sizes) {
    auto const a = values(n, 3);
    std::vector<bfloat16> flat(a.size()), nest(a.size());
    assign(known(flat.data(), n), known(a.data(), n) * 3.0f, exec::Auto{});
    assign(unknown(nest.data(), n), unknown(a.data(), n) * 3.0f, exec::Auto{});
    EXPECT_TRUE(same_bits(flat, nest)) << n;
    std::vector<double> wide_flat(a.size()), wide_nest(a.size());
    assign(known(wide_flat.data(), n), sqrt(cast<double>(known(a.data(), n)) + 2000.0),
           exec::Auto{});
    assign(unknown(wide_nest.data(), n), sqrt(cast<double>(unknown(a.data(), n)) + 2000.0),
           exec::Auto{});
    EXPECT_TRUE(same_bits(wide_flat, wide_nest)) << n;
  }
}

TEST(FlatPath, BroadcastLeafOfOneElement) {
  for (index_t n : sizes) {
    auto const a = values(n, 4);
    float const one = 1.5f;
    std::vector<float> flat(a.size()), nest(a.size());
    assign(known(flat.data(), n), known(a.data(), n) * known(&one, 1), exec::Auto{});
    assign(unknown(nest.data(), n), unknown(a.data(), n) * unknown(&one, 1), exec::Auto{});
    EXPECT_TRUE(same_bits(flat, nest)) << n;
  }
}

TEST(FlatPath, InPlaceAndOverlappingDestinations) {
  index_t const n = 1000;
  auto flat = values(n + 1, 5), nest = flat;
  // In place, element for element: no temporary.
  assign(known(flat.data(), n), known(flat.data(), n) * 2.0f + 1.0f, exec::Auto{});
  assign(unknown(nest.data(), n), unknown(nest.data(), n) * 2.0f + 1.0f, exec::Auto{});
  EXPECT_TRUE(same_bits(flat, nest));
  // Shifted by one element: every source element is read before it is written.
  auto const before = flat;
  assign(known(flat.data() + 1, n), known(flat.data(), n) - 3.0f, exec::Auto{});
  assign(unknown(nest.data() + 1, n), unknown(nest.data(), n) - 3.0f, exec::Auto{});
  EXPECT_TRUE(same_bits(flat, nest));
  for (index_t i = 0; i < n; ++i)
    ASSERT_EQ(flat[static_cast<std::size_t>(i + 1)], before[static_cast<std::size_t>(i)] - 3.0f);
}

TEST(FlatPath, ElementwiseOverRows) {
  using KnownRows = decltype(known_rows(static_cast<float*>(nullptr), 1, 1));
  static_assert(flat_elementwise_v<KnownRows, tessel::detail::Map<ops::Add, Leaf, Leaf>>);
  for (index_t rows : {1, 3, 40})
    for (index_t n : {1, 7, 1000}) {
      auto const a = values(rows * (n + 2), 10), v = values(n, 11), c = values(rows, 12);
      // The rows of a are n + 2 apart (a column range of a wider matrix); v is read by every row,
      // c (rows, 1) is broadcast along each row.
      auto strided = [&](auto const* p) {
        return make_tensor(p, make_layout(make_shape(rows, n), make_stride(n + 2, Int<1>{})));
      };
      auto strided_unknown = [&](auto const* p) {
        return make_tensor(p, make_layout(make_shape(rows, n), make_stride(n + 2, index_t{1})));
      };
      std::vector<float> flat(static_cast<std::size_t>(rows * n)), nest(flat.size());
      assign(known_rows(flat.data(), rows, n),
             strided(a.data()) * known(v.data(), n) - known_rows(c.data(), rows, 1), exec::Auto{});
      assign(unknown_rows(nest.data(), rows, n),
             strided_unknown(a.data()) * unknown(v.data(), n) - unknown_rows(c.data(), rows, 1),
             exec::Auto{});
      EXPECT_TRUE(same_bits(flat, nest)) << rows << " x " << n;
    }
}

TEST(FlatPath, RowsInPlaceAndOverlapping) {
  index_t const rows = 6, n = 5;
  auto flat = values(rows * n + n, 13), nest = flat;
  assign(known_rows(flat.data(), rows, n), known_rows(flat.data(), rows, n) * 3.0f, exec::Auto{});
  assign(unknown_rows(nest.data(), rows, n), unknown_rows(nest.data(), rows, n) * 3.0f,
         exec::Auto{});
  EXPECT_TRUE(same_bits(flat, nest));
  // One row down: row r reads what row r - 1 is about to be written with.
  auto const before = flat;
  assign(known_rows(flat.data() + n, rows, n), known_rows(flat.data(), rows, n) + 1.0f,
         exec::Auto{});
  for (index_t i = 0; i < rows * n; ++i)
    ASSERT_EQ(flat[static_cast<std::size_t>(i + n)], before[static_cast<std::size_t>(i)] + 1.0f);
}

TEST(FlatPath, ReductionsOverAVector) {
  for (index_t n : sizes) {
    auto const a = values(n, 6);
    float flat[3] = {}, nest[3] = {};
    assign(known(flat, 1), sum(known(a.data(), n) * 0.5f, keep), exec::Auto{});
    assign(known(flat + 1, 1), max(known(a.data(), n), keep), exec::Auto{});
    assign(known(flat + 2, 1), sum(known(a.data(), n) * known(a.data(), n), keep), exec::Auto{});
    assign(unknown(nest, 1), sum(unknown(a.data(), n) * 0.5f, keep), exec::Auto{});
    assign(unknown(nest + 1, 1), max(unknown(a.data(), n), keep), exec::Auto{});
    assign(unknown(nest + 2, 1), sum(unknown(a.data(), n) * unknown(a.data(), n), keep),
           exec::Auto{});
    EXPECT_EQ(std::memcmp(flat, nest, sizeof flat), 0) << n;
  }
}

TEST(FlatPath, ReductionsOverRows) {
  for (index_t rows : {1, 5, 40})
    for (index_t n : {1, 9, 1000}) {
      auto const a = values(rows * n, 7);
      auto const w = values(n, 8);
      std::vector<double> flat(static_cast<std::size_t>(rows)), nest(flat.size());
      assign(known(flat.data(), rows),
             sum(cast<double>(known_rows(a.data(), rows, n)) * cast<double>(known(w.data(), n)),
                 mode<1>),
             exec::Auto{});
      assign(unknown(nest.data(), rows),
             sum(cast<double>(unknown_rows(a.data(), rows, n)) * cast<double>(unknown(w.data(), n)),
                 mode<1>),
             exec::Auto{});
      EXPECT_TRUE(same_bits(flat, nest)) << rows << " x " << n;
      std::vector<float> low(static_cast<std::size_t>(rows)), low_nest(low.size());
      assign(known(low.data(), rows), min(known_rows(a.data(), rows, n), mode<1>), exec::Auto{});
      assign(unknown(low_nest.data(), rows), min(unknown_rows(a.data(), rows, n), mode<1>),
             exec::Auto{});
      EXPECT_TRUE(same_bits(low, low_nest)) << rows << " x " << n;
    }
}

TEST(FlatPath, RowReductionIntoItsOwnInput) {
  // The destination overlaps the rows it reduces: each row is read whole before any is written.
  index_t const rows = 6, n = 4;
  auto a = values(rows * n, 9);
  auto const before = a;
  assign(known(a.data(), rows), sum(known_rows(a.data(), rows, n), mode<1>), exec::Auto{});
  for (index_t r = 0; r < rows; ++r) {
    float s = 0;
    for (index_t j = 0; j < n; ++j) s += before[static_cast<std::size_t>(r * n + j)];
    EXPECT_FLOAT_EQ(a[static_cast<std::size_t>(r)], s) << r;
  }
}

TEST(FlatPath, EmptyReductions) {
  float s = 7.0f;
  assign(known(&s, 1), sum(known(static_cast<float const*>(nullptr), 0), keep), exec::Auto{});
  EXPECT_EQ(s, 0.0f);
  EXPECT_THROW(
      assign(known(&s, 1), max(known(static_cast<float const*>(nullptr), 0), keep), exec::Auto{}),
      Error);
}

}  // namespace
