// exec::gemm and exec::syrk on the host: every storage order of every operand, batches (with an
// operand shared by the whole batch), alpha and beta (beta 0 never reads C), empty shapes, every
// executor, and the sentences for operands that do not fit.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <vector>

#include <tessel/exec/dense.hpp>
#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;
using test::error_of;
using test::random_tensor;

// Element (b, i, j) of a rank-2 or rank-3 tensor (rank 2: b ignored).
template <class Tn>
double at(Tn const& t, index_t b, index_t i, index_t j) {
  if constexpr (tuple_size_v<std::remove_cvref_t<decltype(t.shape())>> == 3)
    return static_cast<double>(t(b, i, j));
  else
    return static_cast<double>(t(i, j));
}

// alpha A B + beta C0 in double, batch `batch`, from the operands as tensors.
template <class A, class B, class C0>
std::vector<double> reference_gemm(index_t batch, index_t m, index_t n, index_t k, A const& a,
                                   B const& b, C0 const& c0, double alpha, double beta) {
  std::vector<double> out;
  auto const a_batched = tuple_size_v<std::remove_cvref_t<decltype(a.shape())>> == 3 &&
                         to_index(get<0>(a.shape())) > 1;
  auto const b_batched = tuple_size_v<std::remove_cvref_t<decltype(b.shape())>> == 3 &&
                         to_index(get<0>(b.shape())) > 1;
  for (index_t q = 0; q < batch; ++q)
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double s = 0;
        for (index_t p = 0; p < k; ++p)
          s += at(a, a_batched ? q : 0, i, p) * at(b, b_batched ? q : 0, p, j);
        out.push_back(alpha * s + (beta != 0 ? beta * at(c0, q, i, j) : 0.0));
      }
  return out;
}

template <class C>
std::vector<double> values(C const& c, index_t batch, index_t m, index_t n) {
  std::vector<double> out;
  for (index_t q = 0; q < batch; ++q)
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) out.push_back(at(c, q, i, j));
  return out;
}

void expect_close(std::vector<double> const& got, std::vector<double> const& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

// The same data as t, stored column-major (t's transpose, compact), seen through a transposed view
// so that it reads like t.
template <class T, class Tn>
auto column_major_copy(Tn const& t, index_t rows, index_t cols) {
  auto storage = make_host_tensor<T>(make_shape(cols, rows));
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) storage(j, i) = t(i, j);
  return storage;
}

TEST(DenseGemm, EveryStorageOrderOfEveryOperand) {
  index_t const m = 37, n = 70, k = 29;
  auto a = random_tensor<double>(make_shape(m, k), -1, 1, 1);
  auto b = random_tensor<double>(make_shape(k, n), -1, 1, 2);
  auto c0 = random_tensor<double>(make_shape(m, n), -1, 1, 3);
  auto a_col = column_major_copy<double>(a, m, k);
  auto b_col = column_major_copy<double>(b, k, n);
  auto const want = reference_gemm(1, m, n, k, a, b, c0, 0.5, -2.0);
  for (int orders = 0; orders < 8; ++orders) {
    auto c_row = make_host_tensor<double>(make_shape(m, n));
    auto c_col = make_host_tensor<double>(make_shape(n, m));
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) c_row(i, j) = c_col(j, i) = c0(i, j);
    auto run = [&](auto const& cv) {
      auto const opts = exec::DenseScale{.alpha = 0.5, .beta = -2.0};
      bool const ar = orders & 1, br = orders & 2;
      if (ar && br) exec::gemm(exec::Serial{}, cv, a.view(), b.view(), opts);
      if (ar && !br) exec::gemm(exec::Serial{}, cv, a.view(), transpose(b_col.view()), opts);
      if (!ar && br) exec::gemm(exec::Serial{}, cv, transpose(a_col.view()), b.view(), opts);
      if (!ar && !br)
        exec::gemm(exec::Serial{}, cv, transpose(a_col.view()), transpose(b_col.view()), opts);
    };
    if (orders & 4) {
      run(c_row.view());
      expect_close(values(c_row, 1, m, n), want, 1e-12);
    } else {
      run(transpose(c_col.view()));
      expect_close(values(transpose(c_col.view()), 1, m, n), want, 1e-12);
    }
  }
}

TEST(DenseGemm, BatchesShareAnOperandWithBatchOne) {
  index_t const batch = 5, m = 9, n = 11, k = 13;
  auto a = random_tensor<float>(make_shape(batch, m, k), -1, 1, 4);
  auto b = random_tensor<float>(make_shape(1, k, n), -1, 1, 5);
  auto c = make_host_tensor<float>(make_shape(batch, m, n));
  exec::gemm(exec::OpenMP{.threads = 2}, c.view(), a.view(), b.view());
  expect_close(values(c, batch, m, n), reference_gemm(batch, m, n, k, a, b, c, 1.0, 0.0), 1e-5);
}

TEST(DenseGemm, BetaZeroNeverReadsC) {
  auto a = random_tensor<float>(make_shape(4, 3), -1, 1, 6);
  auto b = random_tensor<float>(make_shape(3, 5), -1, 1, 7);
  auto c = make_host_tensor<float>(make_shape(4, 5));
  for (index_t i = 0; i < 20; ++i) c[i] = std::numeric_limits<float>::quiet_NaN();
  exec::gemm(exec::Serial{}, c.view(), a.view(), b.view());
  for (index_t i = 0; i < 20; ++i) EXPECT_FALSE(std::isnan(c[i])) << i;
}

TEST(DenseGemm, EmptyInnerDimensionScalesC) {
  auto a = make_host_tensor<double>(make_shape(3, 0));
  auto b = make_host_tensor<double>(make_shape(0, 2));
  auto c = make_host_tensor<double>(make_shape(3, 2));
  for (index_t i = 0; i < 6; ++i) c[i] = static_cast<double>(i);
  exec::gemm(exec::Serial{}, c.view(), a.view(), b.view(), {.alpha = 1, .beta = 3});
  for (index_t i = 0; i < 6; ++i) EXPECT_EQ(c[i], 3.0 * static_cast<double>(i));
}

// A single product large enough to be cut into tiles gives what one thread gives, whichever of
// its output modes is longer.
TEST(DenseGemm, EveryExecutorAgrees) {
  for (auto [m, n] : {std::pair<index_t, index_t>{300, 40}, {40, 300}}) {
    index_t const k = 50;
    auto a = random_tensor<float>(make_shape(m, k), -1, 1, 8);
    auto b = random_tensor<float>(make_shape(k, n), -1, 1, 9);
    auto serial = make_host_tensor<float>(make_shape(m, n));
    exec::gemm(exec::Serial{}, serial.view(), a.view(), b.view());
    auto const want = values(serial, 1, m, n);
    expect_close(want, reference_gemm(1, m, n, k, a, b, serial, 1.0, 0.0), 1e-5);
    for (int threads : {2, 3}) {
      auto c = make_host_tensor<float>(make_shape(m, n));
      exec::gemm(exec::OpenMP{.threads = threads}, c.view(), a.view(), b.view());
      expect_close(values(c, 1, m, n), want, 1e-6);
    }
    auto c = make_host_tensor<float>(make_shape(m, n));
    exec::gemm(exec::Auto{.parallel_threshold = 0}, c.view(), a.view(), b.view());
    expect_close(values(c, 1, m, n), want, 1e-6);
  }
}

// 256-wide tiles, 1024-wide ones on spans that still give 16 of them, and widths in between.
static_assert(exec::detail::dense_tile_span(37) == 256);
static_assert(exec::detail::dense_tile_span(4096) == 256);
static_assert(exec::detail::dense_tile_span(8000) == 500);
static_assert(exec::detail::dense_tile_span(16384) == 1024);
static_assert(exec::detail::dense_tile_span(32000) == 1024);

// The tiling depends on the shapes only, so the thread count changes no bit: each element is
// computed in the same tile by the same kernel (Eigen's or the BLAS's), k deep enough to be
// blocked. Spans of 1000, 37, 517 and 17000 give 3, 1, 2 and 16 tiles (the last 1024 wide).
template <class T>
void expect_same_bits_for_every_thread_count() {
  for (auto const& mn :
       {std::pair<index_t, index_t>{37, 1000}, {1000, 37}, {61, 517}, {5, 17000}}) {
    // Named copies: lambdas in OpenMP translation units cannot capture structured bindings in
    // clang 16 (the sanitizer build's compiler).
    index_t const m = mn.first, n = mn.second;
    index_t const k = 700;
    auto a = random_tensor<T>(make_shape(m, k), -1, 1, 10);
    auto b = random_tensor<T>(make_shape(n, k), -1, 1, 11);  // used as b^T, as FLCE's weight
    auto run = [&](auto executor) {
      auto c = make_host_tensor<T>(make_shape(m, n));
      exec::gemm(executor, c.view(), a.view(), transpose(b.view()));
      return values(c, 1, m, n);
    };
    auto const want = run(exec::Serial{});
    for (int threads : {2, 3, 5}) EXPECT_EQ(run(exec::OpenMP{.threads = threads}), want) << threads;
    EXPECT_EQ(run(exec::Auto{.parallel_threshold = 0}), want);
  }
}

TEST(DenseGemm, EveryThreadCountGivesTheSameBits) {
  expect_same_bits_for_every_thread_count<float>();
  expect_same_bits_for_every_thread_count<double>();
}

#if TESSEL_BLAS && defined(__x86_64__) && defined(__GNUC__)
// Debian's OpenBLAS falls back to SSE kernels on x86 CPUs newer than it knows (Sapphire and
// Emerald Rapids for 0.3.21); kernels/blas.cpp has it choose again while the program loads.
TEST(HostBlas, RunsKernelsOfTheCpusWidestVectors) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr)
    GTEST_SKIP() << "OPENBLAS_CORETYPE is set, so it chooses OpenBLAS's kernels";
  std::string_view const core = exec::detail::blas_kernels();
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_TRUE(core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids") << core;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_TRUE(core == "Haswell" || core == "Zen" || core == "Excavator") << core;
  } else {
    GTEST_SKIP() << "no AVX2 here: OpenBLAS's own choice (" << core << ") stands";
  }
}
#endif

TEST(DenseSyrk, SymmetricResultInEitherStorageOrder) {
  index_t const batch = 3, n = 70, k = 23;  // n ends inside a mirror tile
  auto a = random_tensor<double>(make_shape(batch, n, k), -1, 1, 10);
  auto c = make_host_tensor<double>(make_shape(batch, n, n));
  for (index_t q = 0; q < batch; ++q)  // a symmetric start, so beta may read either triangle
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j <= i; ++j) c(q, i, j) = c(q, j, i) = static_cast<double>(i + j + q);
  auto c0 = make_host_tensor<double>(make_shape(batch, n, n));
  c0 = c;
  auto c_col = make_host_tensor<double>(make_shape(batch, n, n));
  c_col = c;
  exec::syrk(exec::OpenMP{.threads = 2}, c.view(), a.view(), {.alpha = 2, .beta = 0.5});
  exec::syrk(exec::Serial{}, permute<0, 2, 1>(c_col.view()), a.view(), {.alpha = 2, .beta = 0.5});
  auto const want = reference_gemm(batch, n, n, k, a, permute<0, 2, 1>(a.view()), c0, 2.0, 0.5);
  expect_close(values(c, batch, n, n), want, 1e-12);
  expect_close(values(c_col, batch, n, n), want, 1e-12);
  for (index_t q = 0; q < batch; ++q)
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j) EXPECT_EQ(c(q, i, j), c(q, j, i));
}

// The tiled traversals behind the mirrored and transposed copies visit every pair they promise
// exactly once, for sizes below, at and between tile boundaries.
TEST(TransposedPairs, VisitEveryPairOnce) {
  constexpr index_t tile = exec::detail::transposed_pair_tile;
  for (index_t const n : {index_t{0}, index_t{1}, tile - 1, tile, tile + 1, 3 * tile + 5}) {
    std::vector<int> upper(static_cast<std::size_t>(n * n)), all(upper.size());
    exec::detail::for_each_upper_pair(n, [&](index_t i, index_t j) { ++upper[i * n + j]; });
    exec::detail::for_each_pair(n, [&](index_t i, index_t j) { ++all[i * n + j]; });
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j) {
        EXPECT_EQ(upper[i * n + j], i < j ? 1 : 0) << "n = " << n << ", (" << i << ", " << j << ")";
        EXPECT_EQ(all[i * n + j], 1) << "n = " << n << ", (" << i << ", " << j << ")";
      }
  }
}

TEST(DenseSyrk, TransposedOperand) {
  index_t const n = 6, k = 40;
  auto at_storage = random_tensor<float>(make_shape(k, n), -1, 1, 11);  // A^T, compact
  auto c = make_host_tensor<float>(make_shape(n, n));
  exec::syrk(exec::Serial{}, c.view(), transpose(at_storage.view()));
  auto const a = transpose(at_storage.view());
  expect_close(values(c, 1, n, n), reference_gemm(1, n, n, k, a, at_storage, c, 1.0, 0.0), 1e-5);
}

// The arguments exec::gemm and exec::syrk hand cuBLAS (exec/cuda/dense.hpp), checked without a
// GPU: the rules cublasGemmStridedBatchedEx enforces on them (each ld at least the rows of the
// matrix it strides, column-major), and the product a column-major BLAS computes from them, for
// every storage order of every operand, matrices with an extent of 1 included (the (k, 1)
// operand of a syrk, whose transpose once went out with ld 1 and was refused).
struct BlasArgs {
  static void expect_legal(exec::detail::ColumnMajorGemm<double, double const> const& g) {
    auto const at_least_1 = [](index_t x) { return x > 1 ? x : index_t{1}; };
    EXPECT_GE(g.lda, at_least_1(g.trans_a ? g.k : g.m)) << "lda";
    EXPECT_GE(g.ldb, at_least_1(g.trans_b ? g.n : g.k)) << "ldb";
    EXPECT_GE(g.ldc, at_least_1(g.m)) << "ldc";
  }
  // C' = alpha op(A') op(B') + beta C', column-major, as the library defines it.
  static void run(exec::detail::ColumnMajorGemm<double, double const> const& g, double alpha,
                  double beta) {
    auto const op = [](double const* p, bool trans, index_t ld, index_t i, index_t j) {
      return trans ? p[j + i * ld] : p[i + j * ld];
    };
    for (index_t q = 0; q < g.batch; ++q)
      for (index_t i = 0; i < g.m; ++i)
        for (index_t j = 0; j < g.n; ++j) {
          double s = 0;
          for (index_t p = 0; p < g.k; ++p)
            s += op(g.a + q * g.stride_a, g.trans_a, g.lda, i, p) *
                 op(g.b + q * g.stride_b, g.trans_b, g.ldb, p, j);
          double& c = g.c[q * g.stride_c + i + j * g.ldc];
          c = alpha * s + beta * c;
        }
  }
};

template <class Cv, class Av, class Bv>
void expect_blas_arguments_compute_the_product(Cv const& c, Av const& a, Bv const& b) {
  auto cm = exec::detail::matrix_batch(c, "C");
  auto const am = exec::detail::as_const(exec::detail::matrix_batch(a, "A"));
  auto const bm = exec::detail::as_const(exec::detail::matrix_batch(b, "B"));
  exec::detail::check_gemm(cm, am, bm);
  index_t const m = cm.rows, n = cm.cols, k = am.cols;
  auto const want = reference_gemm(1, m, n, k, a, b, c, 0.5, -1.0);
  auto const g = exec::detail::column_major_gemm(cm, am, bm);
  BlasArgs::expect_legal(g);
  BlasArgs::run(g, 0.5, -1.0);
  expect_close(values(c, 1, m, n), want, 1e-12);
}

TEST(DenseCublasArguments, AreLegalAndComputeTheProductForEveryStorageOrderAndVectorShape) {
  for (auto [m, n, k] : {std::array<index_t, 3>{3, 4, 5},
                         {1, 4, 5},
                         {3, 1, 5},
                         {3, 4, 1},
                         {1, 1, 5},
                         {6, 6, 1},
                         {1, 1, 1}}) {
    SCOPED_TRACE(::testing::Message() << "m " << m << " n " << n << " k " << k);
    auto a = random_tensor<double>(make_shape(m, k), -1, 1, 12);
    auto b = random_tensor<double>(make_shape(k, n), -1, 1, 13);
    auto const a_col = column_major_copy<double>(a, m, k);
    auto const b_col = column_major_copy<double>(b, k, n);
    for (int orders = 0; orders < 8; ++orders) {
      SCOPED_TRACE(orders);
      auto c_row = random_tensor<double>(make_shape(m, n), -1, 1, 14);
      auto c_col = random_tensor<double>(make_shape(n, m), -1, 1, 15);
      auto const with_b = [&](auto const& cv, auto const& av) {
        if (orders & 2)
          expect_blas_arguments_compute_the_product(cv, av, b.view());
        else
          expect_blas_arguments_compute_the_product(cv, av, transpose(b_col.view()));
      };
      auto const with_a = [&](auto const& cv) {
        if (orders & 1)
          with_b(cv, a.view());
        else
          with_b(cv, transpose(a_col.view()));
      };
      if (orders & 4)
        with_a(c_row.view());
      else
        with_a(transpose(c_col.view()));
    }
    // syrk's call: C = A A^T, B the relabeled descriptor of A (not normalized again).
    auto c = random_tensor<double>(make_shape(m, m), -1, 1, 16);
    auto const want = reference_gemm(1, m, m, k, a, transpose(a.view()), c, 0.5, -1.0);
    auto const am = exec::detail::as_const(exec::detail::matrix_batch(a.view(), "A"));
    auto const g = exec::detail::column_major_gemm(exec::detail::matrix_batch(c.view(), "C"), am,
                                                   am.transposed());
    BlasArgs::expect_legal(g);
    BlasArgs::run(g, 0.5, -1.0);
    expect_close(values(c, 1, m, m), want, 1e-12);
  }
}

TEST(DenseErrors, SentencesNameTheOperands) {
  auto a = make_host_tensor<float>(make_shape(4, 3));
  auto b = make_host_tensor<float>(make_shape(5, 2));
  auto c = make_host_tensor<float>(make_shape(4, 2));
  EXPECT_EQ(error_of([&] { exec::gemm(exec::Serial{}, c.view(), a.view(), b.view()); }),
            "gemm cannot multiply A (4,3) by B (5,2) into C (4,2): it needs A (m, k), B (k, n) "
            "and C (m, n).");
  auto big = make_host_tensor<float>(make_shape(4, 6));
  auto strided = make_tensor(big.data(), make_layout(make_shape(4, 3), make_stride(6, 2)));
  auto b3 = make_host_tensor<float>(make_shape(3, 2));
  EXPECT_EQ(error_of([&] { exec::gemm(exec::Serial{}, c.view(), strided, b3.view()); }),
            "the dense primitives need a row-major or column-major matrix (unit stride along one "
            "matrix mode, the other stride at least its extent), but A has shape (4,3) and "
            "strides (6,2); copy it into a compact tensor.");
  auto a3 = make_host_tensor<float>(make_shape(2, 4, 3));
  auto c3 = make_host_tensor<float>(make_shape(3, 4, 2));
  EXPECT_EQ(error_of([&] { exec::gemm(exec::Serial{}, c3.view(), a3.view(), b3.view()); }),
            "gemm needs every operand to have the batch of its result (3) or a batch of 1, got 2 "
            "and 1.");
  auto one = make_host_tensor<float>(make_shape(4, 2));
  auto shared_c = make_tensor(one.data(), make_layout(make_shape(3, 4, 2), make_stride(0, 2, 1)));
  auto a33 = make_host_tensor<float>(make_shape(3, 4, 3));
  EXPECT_EQ(error_of([&] { exec::gemm(exec::Serial{}, shared_c, a33.view(), b3.view()); }),
            "gemm cannot write a batch of 3 results into one matrix (C's batch stride is 0).");
  EXPECT_EQ(error_of([&] { exec::syrk(exec::Serial{}, c.view(), a.view()); }),
            "syrk cannot write A (4,3) times its transpose into C (4,2): it needs A (n, k) and a "
            "square C (n, n).");
}

}  // namespace
