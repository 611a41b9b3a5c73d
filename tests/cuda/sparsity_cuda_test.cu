// The sparsity layer on device tensors with exec::Cuda against its host twin (the same functions
// with a host executor, tested on the host in tests/sparsity): N:M masks (static and run-time
// patterns, small and large groups, other modes through views, coupled tensors, groups of
// blocks), top-k per scope, block scores, in-place masks and multipliers, the checker and the
// nonzero count. Masks must match bit for bit; scores to rounding. The weights are made on the
// device from host copies and only the results come back. Those tests skip, with a message,
// without a GPU; the validation tests (a sentence thrown before any CUDA call, with fake device
// pointers) run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/sparsity/cuda.cuh>
#include <tessel/tessel.hpp>

#include "support/cuda.hpp"
#include "support/error_of.hpp"

using namespace tessel;

namespace {

using tessel::test::error_of;

constexpr NMPattern<Int<2>, Int<4>> p24{};

// Normal values, a few exact ties and zeros, so that the tie rule is exercised too.
template <class Shape>
auto random_host(Shape const& s, unsigned seed) {
  auto t = make_host_tensor<float>(s);
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  index_t const n = to_index(size(t.layout()));
  for (index_t i = 0; i < n; ++i)
    t.data()[i] = i % 17 == 0 ? 0.5f : (i % 23 == 0 ? 0.0f : normal(gen));
  return t;
}

using test::to_device;
using test::to_host;
using test::expect_same;
using test::expect_close;



TEST(CudaSparsity, NMMasksMatchTheHostTwin) {
  TESSEL_REQUIRE_GPU("device sparsity", "tests/sparsity");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto hw = random_host(make_shape(index_t{96}, index_t{256}), 1);
  auto w = to_device(hw, s);
  expect_same(to_host(nm_mask(w, p24, gpu), s), nm_mask(hw, p24, exec::Serial{}));
  expect_same(to_host(nm_mask(w, NMPattern{2, 4}, gpu), s), nm_mask(hw, NMPattern{2, 4}));
  // Large groups: one group per block of 256 threads, selected through block reductions.
  expect_same(to_host(nm_mask(w, NMPattern{16, 64}, gpu), s), nm_mask(hw, NMPattern{16, 64}));
  expect_same(to_host(nm_mask(w, NMPattern{100, 128}, gpu), s), nm_mask(hw, NMPattern{100, 128}));
  // Down the columns, through the mode argument and through a transposed view.
  expect_same(to_host(nm_mask<0>(w, p24, gpu), s), nm_mask<0>(hw, p24));
  expect_same(to_host(nm_mask(transpose(w.view()), p24, gpu), s), nm_mask(transpose(hw), p24));
  // Groups of blocks, scored on the device.
  expect_same(to_host(nm_mask(w, p24, make_shape(2, 4), gpu), s),
              nm_mask(hw, p24, make_shape(2, 4)));
  expect_same(to_host(nm_mask(w, p24, make_shape(1, 2), L1Norm{}, gpu), s),
              nm_mask(hw, p24, make_shape(1, 2), L1Norm{}));
}

TEST(CudaSparsity, CoupledMasksAndPruningInPlaceMatchTheHostTwin) {
  TESSEL_REQUIRE_GPU("device sparsity", "tests/sparsity");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto ha = random_host(make_shape(index_t{64}, index_t{128}), 2);
  auto hb = random_host(make_shape(index_t{128}, index_t{64}), 3);
  auto a = to_device(ha, s);
  auto b = to_device(hb, s);
  auto keep = apply_nm_coupled(p24, a, transpose(b.view()), gpu);
  auto host_keep = apply_nm_coupled(p24, ha, transpose(hb));
  expect_same(to_host(keep, s), host_keep);
  expect_same(to_host(a, s), ha);
  expect_same(to_host(b, s), hb);
  EXPECT_TRUE(satisfies(a, p24, gpu));
  EXPECT_TRUE(satisfies<0>(b, p24, gpu));
  EXPECT_EQ(count_nonzero(a, gpu), count_nonzero(ha));
  EXPECT_DOUBLE_EQ(density(b, gpu), density(hb));
  auto hw = random_host(make_shape(index_t{32}, index_t{64}), 4);
  auto w = to_device(hw, s);
  expect_same(to_host(apply_nm(w, p24, gpu), s), apply_nm(hw, p24));
  expect_same(to_host(w, s), hw);
}

TEST(CudaSparsity, TheCheckerFindsTheSameFirstViolation) {
  TESSEL_REQUIRE_GPU("device sparsity", "tests/sparsity");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto hw = random_host(make_shape(index_t{40}, index_t{512}), 5);
  (void)apply_nm(hw, p24);
  hw(17, 9) = 1.0f;  // group (17, 8) now has 3 nonzeros, unless 9 was kept already
  hw(17, 10) = 1.0f;
  hw(17, 11) = 1.0f;
  hw(30, 0) = 2.0f;
  auto w = to_device(hw, s);
  auto want = first_violation(hw, p24);
  auto got = first_violation(w, p24, gpu);
  ASSERT_TRUE(want.has_value());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(to_string(*got), to_string(*want));
  EXPECT_EQ(error_of([&] { check_nm(w, p24, gpu); }), to_string(*want));
  // Groups of blocks, and a large group (lanes counting together).
  EXPECT_EQ(satisfies(w, NMPattern{2, 4}, make_shape(1, 2), gpu),
            satisfies(hw, NMPattern{2, 4}, make_shape(1, 2)));
  auto wide_want = first_violation(hw, NMPattern{200, 512});
  auto wide_got = first_violation(w, NMPattern{200, 512}, gpu);
  ASSERT_EQ(wide_got.has_value(), wide_want.has_value());
  if (wide_want) EXPECT_EQ(to_string(*wide_got), to_string(*wide_want));
}

TEST(CudaSparsity, TopkAndBlockScoresMatchTheHostTwin) {
  TESSEL_REQUIRE_GPU("device sparsity", "tests/sparsity");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto hw = random_host(make_shape(index_t{256}, index_t{384}), 6);
  auto w = to_device(hw, s);
  auto block = make_shape(16, 32);
  expect_close(to_host(block_scores(w, block, gpu), s), block_scores(hw, block), 1e-6);
  expect_close(to_host(block_scores(w, block, L1Norm{}, gpu), s), block_scores(hw, block, L1Norm{}),
               1e-6);
  expect_close(to_host(block_scores(w, block, SumOfSquares{}, gpu), s),
               block_scores(hw, block, SumOfSquares{}), 1e-6);
  // Top-k over the element grid itself: small scopes (2x3) and large ones (a row of 384).
  expect_same(to_host(topk_mask(w, make_shape(2, 3), 2, gpu), s),
              topk_mask(hw, make_shape(2, 3), 2));
  expect_same(to_host(topk_mask(w, make_shape(1, 384), 100, gpu), s),
              topk_mask(hw, make_shape(1, 384), 100));
  expect_same(to_host(topk_mask(w, make_shape(256, 384), 5000, gpu), s),
              topk_mask(hw, make_shape(256, 384), 5000));
  expect_same(to_host(nm_mask_from_scores(w, NMPattern{3, 8}, gpu), s),
              nm_mask_from_scores(hw, NMPattern{3, 8}));
}

TEST(CudaSparsity, MasksAndMultipliersInPlaceMatchTheHostTwin) {
  TESSEL_REQUIRE_GPU("device sparsity", "tests/sparsity");
  gpu::Stream s;
  exec::Cuda const gpu{s.get()};
  auto hw = random_host(make_shape(index_t{64}, index_t{96}), 7);
  auto hgrid = random_host(make_shape(index_t{8}, index_t{6}), 8);
  auto hmask = make_host_tensor<bool>(make_shape(index_t{8}, index_t{6}));
  for (index_t i = 0; i < 48; ++i) hmask.data()[i] = i % 3 == 1;
  auto w = to_device(hw, s);
  auto grid = to_device(hgrid, s);
  auto mask = to_device(hmask, s);
  apply_multiplier(w, grid, make_shape(8, 16), gpu);
  apply_multiplier(hw, hgrid, make_shape(8, 16));
  apply_mask(transpose(w.view()), transpose(mask.view()), make_shape(16, 8), gpu);
  apply_mask(transpose(hw), transpose(hmask), make_shape(16, 8));
  apply_keep_mask(w, mask, make_shape(8, 16), gpu);
  apply_keep_mask(hw, hmask, make_shape(8, 16));
  expect_same(to_host(w, s), hw);
}

// Validation runs on the host before any CUDA call, so fake device pointers are enough here, and
// the sentences are the host twin's.
TEST(CudaSparsity, BadArgumentsThrowBeforeAnyLaunch) {
  float* fake = reinterpret_cast<float*>(std::uintptr_t{256});
  bool* fake_mask = reinterpret_cast<bool*>(std::uintptr_t{4096});
  auto w = make_device_tensor(fake, make_shape(4, 10));
  exec::Cuda const gpu{};
  EXPECT_EQ(error_of([&] {
              (void)nm_mask(w, NMPattern{2, 4}, gpu);
            }),
            "a 2:4 pattern along mode 1 needs a multiple of 4 elements along that mode, but the "
            "tensor has shape (4,10).");
  EXPECT_EQ(error_of([&] {
              (void)apply_nm(w, NMPattern{5, 4}, gpu);
            }),
            "N:M pattern 5:4 is invalid; it needs 0 <= N <= M and M > 0.");
  EXPECT_EQ(error_of([&] { (void)topk_mask(w, make_shape(1, 5), 6, gpu); }),
            "k = 6 exceeds the 5 blocks of a scope of shape (1,5).");
  EXPECT_EQ(error_of([&] { (void)block_scores(w, make_shape(3, 5), gpu); }),
            "block shape (3,5) does not divide shape (4,10): mode 0 has extent 4, which is not a "
            "multiple of 3.");
  auto mask = make_device_tensor(fake_mask, make_shape(3, 2));
  EXPECT_EQ(error_of([&] { apply_mask(w, mask, make_shape(2, 5), gpu); }),
            "mask grid has shape (3,2) but tensor (4,10) with blocks (2,5) needs (2,2).");
  auto other = make_device_tensor(fake + 64, make_shape(4, 8));
  EXPECT_EQ(error_of([&] { (void)nm_mask_coupled(p24, other, w, gpu); }),
            "coupled tensors have shapes (4,8) and (4,10); every coupled tensor needs the same "
            "shape.");
  EXPECT_EQ(error_of([&] {
              (void)satisfies(w, NMPattern{2, 4}, gpu);
            }),
            "a 2:4 pattern along mode 1 needs a multiple of 4 elements along that mode, but the "
            "tensor has shape (4,10).");
}

}  // namespace
