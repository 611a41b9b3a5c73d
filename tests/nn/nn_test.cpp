// tessel::nn on the host: every kernel against a naive float64 loop written here, every backward
// against central finite differences of that loop, float32 within rounding of float64, static
// shapes giving the same bits as run-time shapes, any thread count the same bits, the cooperative
// row bodies on real host lanes (test::ThreadBlock, the GPU's story without a GPU), and every
// error sentence with nothing written. PyTorch agreement is tests/python/test_nn_layers.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <tessel/nn.hpp>
#include <tessel/tensor/fill.hpp>
#include <tessel/tensor/host_tensor.hpp>

#include "support/error_of.hpp"
#include "support/thread_block.hpp"

namespace {

using namespace tessel;
using test::error_of;

constexpr index_t N = 5, D = 7, V = 6;  // rows (tokens), features, vocabulary
using SN = Int<N>;
using SD = Int<D>;
using SV = Int<V>;

// A float64 host tensor of shape s with N(0, 1) elements (scaled, shifted) from seed.
template <class T = double, class S>
auto random_tensor(S const& s, unsigned seed, double mean = 0.0, double stddev = 1.0) {
  auto t = make_host_tensor<T>(s);
  std::mt19937 rng(seed);
  fill_normal(t, rng, mean, stddev);
  return t;
}

template <class T>
std::vector<double> values(T const& t) {
  std::vector<double> v;
  for (auto const& x : t) v.push_back(static_cast<double>(x));
  return v;
}

template <class T, class U>
bool same_bits(T const& a, U const& b) {
  auto const va = values(a), vb = values(b);
  return va.size() == vb.size() &&
         std::memcmp(va.data(), vb.data(), va.size() * sizeof(double)) == 0;
}

// |got - want| <= rel (|want| + max |want|): relative, with an absolute floor at the scale of the
// result (float32's cancellation near zero, finite differences' noise).
void expect_near(std::vector<double> const& got, std::vector<double> const& want, double rel,
                 char const* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * (std::abs(want[i]) + scale)) << what << " element " << i;
}

// d loss / d p[i] by central differences, loss a float64 function of the tensors' current values.
template <class P>
std::vector<double> finite_difference(P& p, std::function<double()> const& loss) {
  double const h = 1e-6;
  std::vector<double> g;
  for (index_t i = 0; i < to_index(size(p.shape())); ++i) {
    double const keep = p[i];
    p[i] = keep + h;
    double const up = loss();
    p[i] = keep - h;
    double const down = loss();
    p[i] = keep;
    g.push_back((up - down) / (2 * h));
  }
  return g;
}

// ---- naive float64 references ----

// LayerNorm (centered) or RMSNorm of x (N, D) rows; returns y, fills mean and rstd.
template <class X, class W, class B>
std::vector<double> norm_reference(bool centered, X const& x, W const& w, B const* b, double eps,
                                   std::vector<double>* mean = nullptr,
                                   std::vector<double>* rstd = nullptr) {
  std::vector<double> y;
  for (index_t r = 0; r < N; ++r) {
    double mu = 0;
    if (centered) {
      for (index_t i = 0; i < D; ++i) mu += static_cast<double>(x(r, i));
      mu /= D;
    }
    double var = 0;
    for (index_t i = 0; i < D; ++i) var += (x(r, i) - mu) * (x(r, i) - mu);
    double const rs = 1 / std::sqrt(var / D + eps);
    if (mean) mean->push_back(mu);
    if (rstd) rstd->push_back(rs);
    for (index_t i = 0; i < D; ++i) y.push_back((x(r, i) - mu) * rs * w(i) + (b ? (*b)(i) : 0.0));
  }
  return y;
}

double dot(std::vector<double> const& a, std::vector<double> const& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double gelu_reference(double x) {
  double const k = std::sqrt(2 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double silu_reference(double a) {
  return a / (1 + std::exp(-a));
}

// ---- LayerNorm and RMSNorm ----

TEST(LayerNorm, ForwardMatchesTheFloat64LoopAndSavesMeanAndRstd) {
  auto x = random_tensor(make_shape(N, D), 1, 3.0, 2.0);  // far from zero: the centring matters
  auto w = random_tensor(make_shape(D), 2, 1.0, 0.5);
  auto b = random_tensor(make_shape(D), 3);
  auto y = make_host_tensor<double>(make_shape(N, D));
  auto mean = make_host_tensor<double>(make_shape(N));
  auto rstd = make_host_tensor<double>(make_shape(N));
  nn::layer_norm(y, mean, rstd, x, w, b);
  std::vector<double> want_mean, want_rstd;
  auto const want = norm_reference(true, x, w, &b, 1e-5, &want_mean, &want_rstd);
  expect_near(values(y), want, 1e-14, "y");
  expect_near(values(mean), want_mean, 1e-15, "mean");
  expect_near(values(rstd), want_rstd, 1e-14, "rstd");
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  auto x = random_tensor(make_shape(N, D), 4, 1.0, 2.0);
  auto w = random_tensor(make_shape(D), 5, 1.0, 0.5);
  auto b = random_tensor(make_shape(D), 6);
  auto dy = random_tensor(make_shape(N, D), 7);  // loss = sum(dy * y)
  auto y = make_host_tensor<double>(make_shape(N, D));
  auto mean = make_host_tensor<double>(make_shape(N));
  auto rstd = make_host_tensor<double>(make_shape(N));
  auto dx = make_host_tensor<double>(make_shape(N, D));
  auto dw = make_host_tensor<double>(make_shape(D));
  auto db = make_host_tensor<double>(make_shape(D));
  nn::layer_norm(y, mean, rstd, x, w, b, {.eps = 1e-3});
  nn::layer_norm_backward(dx, dw, db, dy, x, w, mean, rstd);
  auto const loss = [&] { return dot(norm_reference(true, x, w, &b, 1e-3), values(dy)); };
  expect_near(values(dx), finite_difference(x, loss), 1e-7, "dx");
  expect_near(values(dw), finite_difference(w, loss), 1e-7, "dweight");
  expect_near(values(db), finite_difference(b, loss), 1e-7, "dbias");
}

TEST(RmsNorm, ForwardMatchesTheFloat64LoopWithTorchsDefaultEps) {
  auto x = random_tensor(make_shape(N, D), 8);
  auto w = random_tensor(make_shape(D), 9, 1.0, 0.5);
  auto y = make_host_tensor<double>(make_shape(N, D));
  auto rstd = make_host_tensor<double>(make_shape(N));
  nn::rms_norm(y, rstd, x, w);
  std::vector<double> want_rstd;
  auto const want = norm_reference<decltype(x), decltype(w), decltype(w)>(
      false, x, w, nullptr, 0x1p-52, nullptr, &want_rstd);
  expect_near(values(y), want, 1e-14, "y");
  expect_near(values(rstd), want_rstd, 1e-14, "rstd");
  static_assert(nn::machine_epsilon<float>() == 0x1p-23 && nn::machine_epsilon<half>() == 0x1p-10 &&
                nn::machine_epsilon<bfloat16>() == 0x1p-7);
}

TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  auto x = random_tensor(make_shape(N, D), 10, 0.5);
  auto w = random_tensor(make_shape(D), 11, 1.0, 0.5);
  auto dy = random_tensor(make_shape(N, D), 12);
  auto y = make_host_tensor<double>(make_shape(N, D));
  auto rstd = make_host_tensor<double>(make_shape(N));
  auto dx = make_host_tensor<double>(make_shape(N, D));
  auto dw = make_host_tensor<double>(make_shape(D));
  nn::rms_norm(y, rstd, x, w, {.eps = 1e-4});
  nn::rms_norm_backward(dx, dw, dy, x, w, rstd);
  auto const loss = [&] {
    return dot(norm_reference<decltype(x), decltype(w), decltype(w)>(false, x, w, nullptr, 1e-4),
               values(dy));
  };
  expect_near(values(dx), finite_difference(x, loss), 1e-7, "dx");
  expect_near(values(dw), finite_difference(w, loss), 1e-7, "dweight");
}

// float32 agrees with float64 to float32 rounding; static shapes give the run-time shapes' bits;
// so does every thread count.
template <class S2, class SR, class SC>
auto layer_norm_f32(S2 const& shape, SR const& rows, SC const& cols, exec::Executor auto ex) {
  auto x = random_tensor<float>(shape, 13, 1.0, 2.0);
  auto w = random_tensor<float>(cols, 14, 1.0, 0.5);
  auto b = random_tensor<float>(cols, 15);
  auto dy = random_tensor<float>(shape, 16);
  auto y = make_host_tensor<float>(shape);
  auto mean = make_host_tensor<float>(rows);
  auto rstd = make_host_tensor<float>(rows);
  auto dx = make_host_tensor<float>(shape);
  auto dw = make_host_tensor<float>(cols);
  auto db = make_host_tensor<float>(cols);
  nn::layer_norm(y, mean, rstd, x, w, b, {}, ex);
  nn::layer_norm_backward(dx, dw, db, dy, x, w, mean, rstd, ex);
  auto ry = make_host_tensor<float>(shape);
  auto rr = make_host_tensor<float>(rows);
  auto rdx = make_host_tensor<float>(shape);
  auto rdw = make_host_tensor<float>(cols);
  nn::rms_norm(ry, rr, x, w, {}, ex);
  nn::rms_norm_backward(rdx, rdw, dy, x, w, rr, ex);
  return std::vector{values(y),  values(mean), values(rstd), values(dx),  values(dw),
                     values(db), values(ry),   values(rr),   values(rdx), values(rdw)};
}

TEST(Norms, Float32StaticShapesAndThreadCountsGiveTheSameBits) {
  auto const dynamic = layer_norm_f32(make_shape(N, D), make_shape(N), make_shape(D), exec::Auto{});
  auto const fixed =
      layer_norm_f32(make_shape(SN{}, SD{}), make_shape(SN{}), make_shape(SD{}), exec::Auto{});
  auto const threads = layer_norm_f32(make_shape(N, D), make_shape(N), make_shape(D),
                                      exec::Auto{.parallel_threshold = 0, .threads = 2});
  for (std::size_t k = 0; k < dynamic.size(); ++k) {
    EXPECT_EQ(0, std::memcmp(dynamic[k].data(), fixed[k].data(), dynamic[k].size() * 8)) << k;
    EXPECT_EQ(0, std::memcmp(dynamic[k].data(), threads[k].data(), dynamic[k].size() * 8)) << k;
  }
  // Against float64 from the same (float-rounded) inputs.
  auto x = random_tensor<float>(make_shape(N, D), 13, 1.0, 2.0);
  auto w = random_tensor<float>(make_shape(D), 14, 1.0, 0.5);
  auto b = random_tensor<float>(make_shape(D), 15);
  expect_near(dynamic[0], norm_reference(true, x, w, &b, 1e-5), 1e-5, "f32 layer_norm");
  expect_near(dynamic[6],
              norm_reference<decltype(x), decltype(w), decltype(w)>(false, x, w, nullptr, 0x1p-23),
              1e-5, "f32 rms_norm");
}

// The cooperative bodies: several lanes per row (strided loops, the reduction every lane gets)
// compute what one lane does, to rounding.
TEST(Norms, RowBodiesOnSeveralLanesMatchOneLane) {
  auto x = random_tensor(make_shape(N, D), 17, 1.0, 2.0);
  auto w = random_tensor(make_shape(D), 18);
  auto b = random_tensor(make_shape(D), 19);
  auto dy = random_tensor(make_shape(N, D), 20);
  auto y1 = make_host_tensor<double>(make_shape(N, D));
  auto mean = make_host_tensor<double>(make_shape(N));
  auto rstd = make_host_tensor<double>(make_shape(N));
  auto dx1 = make_host_tensor<double>(make_shape(N, D));
  auto dw = make_host_tensor<double>(make_shape(D));
  auto db = make_host_tensor<double>(make_shape(D));
  nn::layer_norm(y1, mean, rstd, x, w, b);
  nn::layer_norm_backward(dx1, dw, db, dy, x, w, mean, rstd);
  for (int lanes : {2, 3, 8}) {
    SCOPED_TRACE(lanes);
    auto y = make_host_tensor<double>(make_shape(N, D));
    auto m = make_host_tensor<double>(make_shape(N));
    auto r = make_host_tensor<double>(make_shape(N));
    auto dx = make_host_tensor<double>(make_shape(N, D));
    nn::detail::NormForwardRows<true, double, decltype(x.view()), decltype(y.view()),
                                decltype(w.view()), decltype(b.view()), decltype(m.view()),
                                decltype(r.view())> const fwd{
        x.view(), y.view(), w.view(), b.view(), m.view(), r.view(), 1e-5};
    nn::detail::NormBackwardRows<true, double, decltype(dx.view()), decltype(dy.view()),
                                 decltype(x.view()), decltype(w.view()), decltype(m.view()),
                                 decltype(r.view())> const bwd{dx.view(), dy.view(), x.view(),
                                                               w.view(),  m.view(),  r.view()};
    for (index_t row = 0; row < N; ++row) {
      test::ThreadBlock(lanes).run([&](test::ThreadBlock::Context& ctx) {
        fwd(ctx, row);
        return 0;
      });
      test::ThreadBlock(lanes).run([&](test::ThreadBlock::Context& ctx) {
        bwd(ctx, row);
        return 0;
      });
    }
    expect_near(values(y), values(y1), 1e-14, "y");
    expect_near(values(m), values(mean), 1e-14, "mean");
    expect_near(values(r), values(rstd), 1e-14, "rstd");
    expect_near(values(dx), values(dx1), 1e-13, "dx");
  }
}

// ---- activations ----

TEST(Activations, GeluAndSwigluMatchTheFloat64Loops) {
  auto x = random_tensor(make_shape(N, D), 21, 0.0, 3.0);
  auto a = random_tensor(make_shape(N, D), 22, 0.0, 3.0);
  auto y = make_host_tensor<double>(make_shape(N, D));
  assign(y, nn::gelu(x), exec::Auto{});
  std::vector<double> want;
  for (double v : x) want.push_back(gelu_reference(v));
  expect_near(values(y), want, 1e-15, "gelu");
  y = nn::swiglu(a, x);
  want.clear();
  for (index_t i = 0; i < N * D; ++i) want.push_back(silu_reference(a[i]) * x[i]);
  expect_near(values(y), want, 1e-15, "swiglu");
  // Extreme inputs: no NaN where PyTorch has none.
  auto e = make_host_tensor<double>(make_shape(4));
  e[0] = -1000, e[1] = 1000, e[2] = -40, e[3] = 0;
  auto ye = make_host_tensor<double>(make_shape(4));
  ye = nn::gelu(e);
  EXPECT_EQ(values(ye), (std::vector<double>{-0.0, 1000, -0.0, 0}));
  ye = nn::silu(e);
  EXPECT_EQ(ye[0], -0.0);
  EXPECT_EQ(ye[1], 1000);
}

TEST(Activations, BackwardsMatchFiniteDifferences) {
  auto x = random_tensor(make_shape(N, D), 23, 0.0, 2.0);
  auto b = random_tensor(make_shape(N, D), 24, 0.0, 2.0);
  auto dy = random_tensor(make_shape(N, D), 25);
  auto dx = make_host_tensor<double>(make_shape(N, D));
  assign(dx, nn::gelu_backward(dy, x), exec::Auto{});
  auto const gelu_loss = [&] {
    double s = 0;
    for (index_t i = 0; i < N * D; ++i) s += dy[i] * gelu_reference(x[i]);
    return s;
  };
  expect_near(values(dx), finite_difference(x, gelu_loss), 1e-8, "gelu dx");
  auto da = make_host_tensor<double>(make_shape(N, D));
  auto db = make_host_tensor<double>(make_shape(N, D));
  nn::swiglu_backward(da, db, dy, x, b, exec::Auto{});
  auto const swiglu_loss = [&] {
    double s = 0;
    for (index_t i = 0; i < N * D; ++i) s += dy[i] * silu_reference(x[i]) * b[i];
    return s;
  };
  expect_near(values(da), finite_difference(x, swiglu_loss), 1e-8, "swiglu da");
  expect_near(values(db), finite_difference(b, swiglu_loss), 1e-8, "swiglu db");
}

TEST(Activations, Float32StaticShapesGiveTheRunTimeShapesBits) {
  auto x = random_tensor<float>(make_shape(N, D), 26, 0.0, 3.0);
  auto fixed = make_host_tensor<float>(make_shape(SN{}, SD{}));
  fixed = x;
  auto y1 = make_host_tensor<float>(make_shape(N, D));
  auto y2 = make_host_tensor<float>(make_shape(SN{}, SD{}));
  y1 = nn::gelu_backward(x, x) + nn::swiglu(x, x);
  y2 = nn::gelu_backward(fixed, fixed) + nn::swiglu(fixed, fixed);
  EXPECT_TRUE(same_bits(y1, y2));
  std::vector<double> want;
  for (float v : x) want.push_back(gelu_reference(v));
  auto g = make_host_tensor<float>(make_shape(N, D));
  g = nn::gelu(x);
  expect_near(values(g), want, 1e-6, "f32 gelu");
}

// ---- embedding ----

TEST(Embedding, GathersRowsAndScatterAddsInTokenOrder) {
  auto table = random_tensor(make_shape(V, D), 27);
  auto ids = make_host_tensor<int>(make_shape(N));
  int const id_values[N] = {3, 0, 3, 5, 3};
  for (index_t n = 0; n < N; ++n) ids[n] = id_values[n];
  auto out = make_host_tensor<double>(make_shape(N, D));
  nn::embedding(out, ids, table);
  for (index_t n = 0; n < N; ++n)
    for (index_t j = 0; j < D; ++j) EXPECT_EQ(out(n, j), table(id_values[n], j));

  auto dy = random_tensor(make_shape(N, D), 28);
  auto grad = random_tensor(make_shape(V, D), 29);  // accumulated into, as weight.grad
  std::vector<double> want = values(grad);
  for (index_t v = 0; v < V; ++v)
    for (index_t j = 0; j < D; ++j) {
      double s = 0;
      for (index_t n = 0; n < N; ++n)
        if (id_values[n] == v) s += dy(n, j);
      want[static_cast<std::size_t>(v * D + j)] += s;
    }
  nn::embedding_backward(grad, ids, dy, exec::Auto{.parallel_threshold = 0, .threads = 2});
  EXPECT_EQ(values(grad), want);  // the same order of additions: the same bits

  // Static shapes and int64 ids: the same bits.
  auto table_s = make_host_tensor<double>(make_shape(SV{}, SD{}));
  table_s = table;
  auto ids_s = make_host_tensor<index_t>(make_shape(SN{}));
  ids_s = ids;
  auto out_s = make_host_tensor<double>(make_shape(SN{}, SD{}));
  nn::embedding(out_s, ids_s, table_s);
  EXPECT_TRUE(same_bits(out, out_s));
  auto grad_s = make_host_tensor<double>(make_shape(SV{}, SD{}));
  nn::embedding_backward(grad_s, ids_s, dy);
  auto grad_d = make_host_tensor<double>(make_shape(V, D));
  nn::embedding_backward(grad_d, ids, dy);
  EXPECT_TRUE(same_bits(grad_s, grad_d));
}

TEST(Embedding, GradRowBodyOnSeveralLanesGivesTheSameBits) {
  auto dy = random_tensor(make_shape(N, D), 30);
  index_t const sorted[N] = {0, 3, 3, 3, 5}, positions[N] = {1, 0, 2, 4, 3};
  auto one = make_host_tensor<double>(make_shape(V, D));
  auto many = make_host_tensor<double>(make_shape(V, D));
  nn::detail::EmbeddingGradRows<double, decltype(one.view()), decltype(dy.view())> const a{
      one.view(), dy.view(), sorted, positions, N};
  auto const b = nn::detail::EmbeddingGradRows<double, decltype(many.view()), decltype(dy.view())>{
      many.view(), dy.view(), sorted, positions, N};
  for (index_t r = 0; r < N; ++r) {
    a(exec::SequentialContext{}, r);
    test::ThreadBlock(3).run([&](test::ThreadBlock::Context& ctx) {
      b(ctx, r);
      return 0;
    });
  }
  EXPECT_TRUE(same_bits(one, many));
}

// ---- errors: one sentence, nothing written ----

TEST(NnErrors, ShapeAndIdErrorsNameTheValuesAndWriteNothing) {
  auto x = random_tensor(make_shape(4, 8), 31);
  auto w = make_host_tensor<double>(make_shape(8));
  auto w7 = make_host_tensor<double>(make_shape(7));
  auto y = make_host_tensor<double>(make_shape(4, 8));
  auto y7 = make_host_tensor<double>(make_shape(4, 7));
  auto m = make_host_tensor<double>(make_shape(4));
  auto r = make_host_tensor<double>(make_shape(4));
  auto r3 = make_host_tensor<double>(make_shape(3));
  for (index_t i = 0; i < 32; ++i) y[i] = -7;
  EXPECT_EQ(error_of([&] { nn::layer_norm(y7, m, r, x, w, w); }),
            "layer_norm: y has shape (4,7) but x has shape (4,8); they need the same shape.");
  EXPECT_EQ(error_of([&] { nn::layer_norm(y, m, r, x, w7, w); }),
            "layer_norm: weight has shape (7) but x has shape (4,8); weight needs shape (8).");
  EXPECT_EQ(error_of([&] { nn::layer_norm(y, m, r, x, w, w7); }),
            "layer_norm: bias has shape (7) but x has shape (4,8); bias needs shape (8).");
  EXPECT_EQ(error_of([&] { nn::layer_norm(y, r3, r, x, w, w); }),
            "layer_norm: mean has shape (3) but x has shape (4,8); mean needs shape (4).");
  EXPECT_EQ(error_of([&] { nn::rms_norm(y, r3, x, w); }),
            "rms_norm: rstd has shape (3) but x has shape (4,8); rstd needs shape (4).");
  EXPECT_EQ(error_of([&] { nn::layer_norm_backward(y, w, w7, x, x, w, m, r); }),
            "layer_norm_backward: dbias has shape (7) but x has shape (4,8); dbias needs shape "
            "(8).");
  EXPECT_EQ(error_of([&] { nn::rms_norm_backward(y, w, y7, x, w, r); }),
            "rms_norm_backward: dy has shape (4,7) but x has shape (4,8); they need the same "
            "shape.");
  EXPECT_EQ(error_of([&] { nn::swiglu_backward(y, y7, x, x, x); }),
            "swiglu_backward: db has shape (4,7) but a has shape (4,8); they need the same shape.");
  for (double v : y) ASSERT_EQ(v, -7);
  for (double v : w) ASSERT_EQ(v, 0);

  auto table = random_tensor(make_shape(3, 8), 32);
  auto ids = make_host_tensor<int>(make_shape(4));
  ids[2] = 3;
  EXPECT_EQ(error_of([&] { nn::embedding(y, ids, table); }),
            "embedding: token ids range over [0, 3] but the table has 3 rows; every id needs 0 "
            "<= id < 3.");
  ids[2] = -1;
  auto grad = make_host_tensor<double>(make_shape(3, 8));
  EXPECT_EQ(error_of([&] { nn::embedding_backward(grad, ids, y); }),
            "embedding_backward: token ids range over [-1, 0] but the table has 3 rows; every id "
            "needs 0 <= id < 3.");
  ids[2] = 0;
  EXPECT_EQ(error_of([&] { nn::embedding(y7, ids, table); }),
            "embedding: out has shape (4,7) but table has shape (3,8); out needs shape (4,8).");
  EXPECT_EQ(error_of([&] { nn::embedding_backward(grad, ids, y7); }),
            "embedding_backward: grad_out has shape (4,7) but grad_table has shape (3,8); "
            "grad_out needs shape (4,8).");
  for (double v : y) ASSERT_EQ(v, -7);
  for (double v : grad) ASSERT_EQ(v, 0);
}

}  // namespace
