// The chunk GEMMs as column-major calls (what the CUDA path hands cuBLAS), run through a naive
// column-major GEMM on padded row-major buffers: they must compute the row-major products.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include <tessel/flce/gemm_calls.hpp>

namespace {

using namespace tessel;
using namespace tessel::flce;

// BLAS semantics: C (m, n) = op(A) op(B) + beta C, all column-major.
void column_major_gemm(GemmCall const& g, std::vector<double> const& a,
                       std::vector<double> const& b, std::vector<double>& c) {
  for (index_t i = 0; i < g.m; ++i)
    for (index_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (index_t l = 0; l < g.k; ++l) {
        double const ail = g.transpose_a ? a[l + i * g.lda] : a[i + l * g.lda];
        double const blj = g.transpose_b ? b[j + l * g.ldb] : b[l + j * g.ldb];
        s += ail * blj;
      }
      c[i + j * g.ldc] = s + g.beta * c[i + j * g.ldc];
    }
}

struct Padded {
  index_t rows, cols, ld;
  std::vector<double> data;
  Padded(index_t r, index_t c, index_t pad, std::mt19937& rng) : rows(r), cols(c), ld(c + pad) {
    std::uniform_real_distribution<double> u(-1, 1);
    data.resize(static_cast<std::size_t>(r * ld));
    for (auto& e : data) e = u(rng);
  }
  double operator()(index_t i, index_t j) const { return data[i * ld + j]; }
};

TEST(GemmCalls, ComputeTheRowMajorChunkProducts) {
  std::mt19937 rng(3);
  index_t const rows = 5, h = 7, v = 11;
  Padded x(rows, h, 2, rng), w(v, h, 3, rng), g(rows, v, 1, rng);
  Padded logits(rows, v, 4, rng), dw(v, h, 2, rng), dx(rows, h, 5, rng);
  Padded const dw_before = dw, dx_before = dx;

  column_major_gemm(logits_gemm(rows, h, v, w.ld, x.ld, logits.ld), w.data, x.data, logits.data);
  column_major_gemm(grad_weight_gemm(rows, h, v, x.ld, g.ld, dw.ld, true), x.data, g.data, dw.data);
  column_major_gemm(grad_input_gemm(rows, h, v, w.ld, g.ld, dx.ld), w.data, g.data, dx.data);

  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < v; ++j) {
      double s = 0;
      for (index_t k = 0; k < h; ++k) s += x(i, k) * w(j, k);
      EXPECT_NEAR(logits(i, j), s, 1e-12);
    }
  for (index_t j = 0; j < v; ++j)
    for (index_t k = 0; k < h; ++k) {
      double s = dw_before(j, k);  // accumulate: beta = 1
      for (index_t i = 0; i < rows; ++i) s += g(i, j) * x(i, k);
      EXPECT_NEAR(dw(j, k), s, 1e-12);
    }
  for (index_t i = 0; i < rows; ++i)
    for (index_t k = 0; k < h; ++k) {
      double s = 0;
      for (index_t j = 0; j < v; ++j) s += g(i, j) * w(j, k);
      EXPECT_NEAR(dx(i, k), s, 1e-12);
    }
  // The padding between rows is never written.
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = h; j < dx.ld; ++j)
      EXPECT_EQ(dx.data[i * dx.ld + j], dx_before.data[i * dx.ld + j]);
}

TEST(GemmCalls, TheFirstChunkOverwritesGradWeight) {
  EXPECT_EQ(grad_weight_gemm(4, 3, 2, 3, 2, 3, false).beta, 0.0);
  EXPECT_EQ(grad_weight_gemm(4, 3, 2, 3, 2, 3, true).beta, 1.0);
}

}  // namespace
