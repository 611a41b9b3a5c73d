// Tiled views (tensor/tiling.hpp): divides of tensors, local_tile and local_partition write into
// the elements of the original that explicit index arithmetic names; identity tensors give the
// coordinates that mask a ragged edge; static tiles keep static extents; run-time equals static.
#include <gtest/gtest.h>

#include <type_traits>

#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/tiling.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::literals;
using tessel::test::error_of;

// A (12, 16) tensor of -1s, row-major.
auto minus_ones(index_t rows, index_t cols) {
  auto t = make_host_tensor<int>(make_shape(rows, cols));
  for (auto& x : t) x = -1;
  return t;
}

TEST(Tiling, DividedTensorsWriteThroughInRowMajorTileOrder) {
  auto t = minus_ones(12, 16);
  auto z = zipped_divide(t, make_shape(4_c, 8_c));  // ((3, 2), (4, 8))
  EXPECT_EQ(size(get<0>(z.layout())), 6);
  EXPECT_EQ(size(get<1>(z.layout())), 32);
  for (index_t j = 0; j < 6; ++j)
    for (index_t i = 0; i < 32; ++i) z(j, i) = static_cast<int>(j * 100 + i);
  for (index_t r = 0; r < 12; ++r)
    for (index_t c = 0; c < 16; ++c)
      ASSERT_EQ(t(r, c), (r / 4 * 2 + c / 8) * 100 + (r % 4) * 8 + c % 8) << r << ", " << c;

  auto td = tiled_divide(t, make_shape(4_c, 8_c));  // (3, 2, (4, 8))
  td(2, 1, 31) = 7000;
  EXPECT_EQ(t(11, 15), 7000);
  auto fd = flat_divide(t, make_shape(4_c, 8_c));  // (3, 2, 4, 8)
  fd(1, 0, 2, 5) = 8000;
  EXPECT_EQ(t(6, 5), 8000);
}

TEST(Tiling, LocalTileIsTheTileAtItsCoordinate) {
  auto t = minus_ones(12, 16);
  for (index_t b0 = 0; b0 < 3; ++b0)
    for (index_t b1 = 0; b1 < 2; ++b1) {
      auto tile = local_tile(t, make_shape(4_c, 8_c), make_tuple(b0, b1));
      for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 8; ++j)
          tile(i, j) = static_cast<int>(1000 * (b0 * 2 + b1) + i * 8 + j);
    }
  for (index_t r = 0; r < 12; ++r)
    for (index_t c = 0; c < 16; ++c)
      ASSERT_EQ(t(r, c), 1000 * (r / 4 * 2 + c / 8) + (r % 4) * 8 + c % 8) << r << ", " << c;
  // A 1-D tile coordinate is a row-major index into the (3, 2) grid: 3 is (1, 1).
  auto third = local_tile(t, make_shape(4_c, 8_c), 3);
  EXPECT_EQ(&third(2, 5), &t(6, 13));
}

TEST(Tiling, LocalPartitionGivesEachThreadItsElementInEveryTile) {
  auto t = minus_ones(12, 16);
  auto threads = make_shape(2_c, 4_c);  // 8 threads, row-major: thread k at (k / 4, k % 4)
  for (index_t k = 0; k < 8; ++k) {
    auto mine = local_partition(t, threads, k);  // (6, 4)
    EXPECT_EQ(size(mine), 24);
    for (index_t j0 = 0; j0 < 6; ++j0)
      for (index_t j1 = 0; j1 < 4; ++j1) mine(j0, j1) = static_cast<int>(k * 100 + j0 * 4 + j1);
  }
  for (index_t r = 0; r < 12; ++r)
    for (index_t c = 0; c < 16; ++c)
      ASSERT_EQ(t(r, c), ((r % 2) * 4 + c % 4) * 100 + (r / 2) * 4 + c / 4) << r << ", " << c;

  // A column-major thread layout numbers thread k at (k % 2, k / 2), as CuTe's default does.
  auto cm = make_layout(make_shape(2_c, 4_c), make_stride(1_c, 2_c));
  for (index_t k = 0; k < 8; ++k) {
    auto mine = local_partition(t, cm, k);
    for (index_t j0 = 0; j0 < 6; ++j0)
      for (index_t j1 = 0; j1 < 4; ++j1) mine(j0, j1) = static_cast<int>(k);
  }
  for (index_t r = 0; r < 12; ++r)
    for (index_t c = 0; c < 16; ++c) ASSERT_EQ(t(r, c), r % 2 + (c % 4) * 2) << r << ", " << c;
}

TEST(Tiling, StaticTilesKeepStaticExtentsAndRunTimeEqualsStatic) {
  auto s = make_host_tensor<int>(make_shape(12_c, 16_c));
  auto d = make_host_tensor<int>(make_shape(12, 16));
  auto st = local_tile(s, make_shape(4_c, 8_c), make_tuple(2, 1));
  auto dt = local_tile(d, make_shape(4_c, 8_c), make_tuple(2, 1));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(st.shape())>, tuple<Int<4>, Int<8>>>);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(dt.shape())>, tuple<Int<4>, Int<8>>>);
  static_assert(detail::is_static_layout_v<
                std::remove_cvref_t<decltype(st.layout())>>);  // static tensor: static strides too
  auto sp = local_partition(s, make_shape(2_c, 4_c), 5);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(sp.shape())>, tuple<Int<6>, Int<4>>>);
  auto dp = local_partition(d, make_shape(2, 4), 5);
  auto rt = local_tile(d, make_shape(4, 8), make_tuple(2, 1));
  EXPECT_EQ(st.data() - s.data(), dt.data() - d.data());
  EXPECT_EQ(rt.data(), dt.data());
  EXPECT_EQ(sp.data() - s.data(), dp.data() - d.data());
  for (index_t i = 0; i < 32; ++i) {
    EXPECT_EQ(to_index(st.layout()(i)), to_index(rt.layout()(i)));
    EXPECT_EQ(&dt[i], &rt[i]);
  }
  for (index_t i = 0; i < 24; ++i) EXPECT_EQ(to_index(sp.layout()(i)), to_index(dp.layout()(i)));
}

TEST(Tiling, IdentityTensorsGiveCoordinatesThroughEveryView) {
  auto id = make_identity_tensor(make_shape(12_c, 16_c));
  EXPECT_EQ(id(7, 3), make_tuple(index_t{7}, index_t{3}));
  auto tile = local_tile(id, make_shape(4_c, 8_c), make_tuple(2, 1));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(tile.shape())>, tuple<Int<4>, Int<8>>>);
  EXPECT_EQ(tile(3, 5), make_tuple(index_t{11}, index_t{13}));
  auto mine = local_partition(id, make_shape(2_c, 4_c), 6);  // thread 6 at (1, 2)
  EXPECT_EQ(mine(4, 3), make_tuple(index_t{9}, index_t{14}));
  auto z = zipped_divide(id, make_shape(4_c, 8_c));
  EXPECT_EQ(z(5, 31), make_tuple(index_t{11}, index_t{15}));
  EXPECT_EQ(id[17], make_tuple(index_t{1}, index_t{1}));
}

TEST(Tiling, ElemLessComparesEveryMode) {
  static_assert(elem_less(make_tuple(3, 4), make_shape(4_c, 5_c)));
  static_assert(!elem_less(make_tuple(3, 5), make_shape(4_c, 5_c)));
  static_assert(!elem_less(make_tuple(4, 0), make_shape(4, 5)));
  static_assert(elem_less(make_tuple(0, make_tuple(1, 2)), make_tuple(1, make_tuple(2, 3))));
}

TEST(Tiling, TheIdentityTensorMasksARaggedEdge) {
  index_t const rows = 10, cols = 14;  // tiles of (4, 8) do not divide it: pad to (12, 16)
  auto padded = minus_ones(12, 16);
  auto id = make_identity_tensor(make_shape(12, 16));
  index_t written = 0;
  for (index_t b0 = 0; b0 < 3; ++b0)
    for (index_t b1 = 0; b1 < 2; ++b1) {
      auto tile = local_tile(padded, make_shape(4_c, 8_c), make_tuple(b0, b1));
      auto where = local_tile(id, make_shape(4_c, 8_c), make_tuple(b0, b1));
      for (index_t i = 0; i < 4; ++i)
        for (index_t j = 0; j < 8; ++j) {
          auto c = where(i, j);
          if (!elem_less(c, make_shape(rows, cols))) continue;
          tile(i, j) = static_cast<int>(get<0>(c) * 100 + get<1>(c));
          ++written;
        }
    }
  EXPECT_EQ(written, rows * cols);
  for (index_t r = 0; r < 12; ++r)
    for (index_t c = 0; c < 16; ++c)
      ASSERT_EQ(padded(r, c), r < rows && c < cols ? r * 100 + c : -1) << r << ", " << c;
}

TEST(Tiling, ErrorsNameTheTilesAndTheThreads) {
  auto t = minus_ones(12, 16);
  EXPECT_EQ(error_of([&] { (void)local_tile(t, make_shape(4_c, 8_c), make_tuple(3, 0)); }),
            "tile coordinate (3,0) is out of range: shape (12,16) in tiles of (4,8) has a tile "
            "grid of (3,2).");
  EXPECT_EQ(error_of([&] { (void)local_tile(t, make_shape(4, 8), 6); }),
            "tile coordinate 6 is out of range: shape (12,16) in tiles of (4,8) has a tile grid of "
            "(3,2).");
  EXPECT_EQ(error_of([&] { (void)local_partition(t, make_shape(2, 4), 8); }),
            "thread index 8 is out of range for thread layout (2,4):(4,1) of 8 threads.");
  EXPECT_EQ(error_of([&] {
              (void)local_partition(t, make_layout(make_shape(2, 4), make_stride(8, 2)), 0);
            }),
            "thread layout (2,4):(8,2) does not number its 8 threads one to one: its mode 1 has "
            "stride 2 where 1 was due (modes by increasing stride must have strides 1, then the "
            "product of the extents before them).");
  // Tiles that do not divide the tensor: the divide's own sentence.
  EXPECT_THROW((void)local_tile(t, make_shape(5, 8), make_tuple(0, 0)), Error);
}

}  // namespace
