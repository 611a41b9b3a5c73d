// Causal attention (nn/attention*.hpp): the plan's numbers at compile time and at run time from the
// same code; forward and backward against a naive float64 reference (the full (T, T) softmax with
// the causal mask) and against central finite differences; odd sequence lengths, tiles shorter than
// T, T = 1, several heads and batches; static and run-time shapes giving the same bits; strided
// views into a (B, T, 3 C) qkv tensor; several threads giving the same bits and several lanes per
// work item (tests/support/thread_block.hpp) the same values; and the errors, each a sentence,
// nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include <tessel/exec/host.hpp>
#include <tessel/nn/attention.hpp>
#include <tessel/tensor/fill.hpp>
#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/views.hpp>

#include "support/error_of.hpp"
#include "support/thread_block.hpp"

namespace {

using namespace tessel;
using nn::AttentionPlan;
using nn::make_attention_plan;

// ---- the plan, at compile time ----

// GPT-2 small's attention (B 4, T 64, 12 heads, head_dim 64, f32): one 64 x 64 tile each way, its
// numbers types.
constexpr auto gpt2_plan = make_attention_plan<float>(Int<4>{}, Int<12>{}, Int<64>{}, Int<64>{});
static_assert(decltype(gpt2_plan)::q_tile == 64 && decltype(gpt2_plan)::kv_tile == 64);
static_assert(std::is_same_v<decltype(gpt2_plan.q_tile_extent()), Int<64>>);
static_assert(std::is_same_v<decltype(gpt2_plan.kv_tile_count()), Int<1>>);
static_assert(std::is_empty_v<std::remove_cv_t<decltype(gpt2_plan)>>);
static_assert(nn::AnyAttentionPlan<decltype(gpt2_plan)> && nn::AnyAttentionPlan<AttentionPlan>);
// The same numbers from run-time integers, in a constant expression too.
static_assert(make_attention_plan<float>(4, 12, 64, 64) == AttentionPlan(gpt2_plan));
// T 256: 128-row tiles need 160 KiB; the key/value tile halves, then the query tile: 64 x 64.
constexpr auto t256 = make_attention_plan<float>(Int<4>{}, Int<12>{}, Int<256>{}, Int<64>{});
static_assert(t256.q_tile == 64 && t256.kv_tile == 64 && t256.num_q_tiles == 4);
static_assert(t256.tile_bytes == 65536 && t256.scratch_bytes == 4 * 12 * 256 * 4);
static_assert(make_attention_plan<float>(4, 12, 256, 64) == AttentionPlan(t256));
// f64 doubles the bytes: 32 x 32.
static_assert(make_attention_plan<double>(Int<1>{}, Int<1>{}, Int<256>{}, Int<64>{}).q_tile == 32);
// Short sequences get one tile of their length rounded up to a power of two; T = 0 none.
static_assert(make_attention_plan<float>(Int<2>{}, Int<3>{}, Int<5>{}, Int<8>{}).q_tile == 8);
static_assert(make_attention_plan<float>(Int<2>{}, Int<3>{}, Int<1>{}, Int<8>{}).q_tile == 1);
static_assert(make_attention_plan<float>(Int<2>{}, Int<3>{}, Int<0>{}, Int<8>{}).num_q_tiles == 0);
// A tight budget: a key/value tile shorter than the query tile, tiles shorter than T.
constexpr auto tight =
    make_attention_plan<double>(Int<1>{}, Int<1>{}, Int<37>{}, Int<8>{}, Int<8192>{});
static_assert(tight.q_tile == 32 && tight.kv_tile == 16 && tight.num_kv_tiles == 3);
static_assert(make_attention_plan<double>(1, 1, 37, 8, 8192) == AttentionPlan(tight));
// Mixed static and run-time extents: a run-time plan with the same numbers.
static_assert(
    std::is_same_v<decltype(make_attention_plan<float>(Int<4>{}, 12, Int<64>{}, Int<64>{})),
                   AttentionPlan>);

// The rule stated directly, over a grid of shapes: tiles halve in turn, key/value first, while
// over budget, never below min(16, first); the counts cover T.
TEST(AttentionPlan, FollowsItsRuleOverAGridOfShapes) {
  for (index_t t : {0, 1, 2, 3, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 4096})
    for (index_t d : {1, 7, 32, 64, 80, 128, 256})
      for (index_t budget : {index_t{1} << 14, index_t{1} << 16, index_t{1} << 18})
        for (index_t bytes : {4, 8}) {
          index_t const first = std::min<index_t>(
              128,
              std::bit_ceil<std::uint64_t>(static_cast<std::uint64_t>(std::max<index_t>(t, 1))));
          auto fits = [&](index_t q, index_t kv) {
            return (q + 2 * kv) * d * bytes + q * kv * bytes <= budget;
          };
          index_t q = first, kv = first;
          while (!fits(q, kv) && q > std::min<index_t>(first, 16)) (kv == q ? kv : q) /= 2;
          if (!fits(q, kv)) {
            EXPECT_NE(test::error_of([&] {
                        (void)(bytes == 4 ? make_attention_plan<float>(2, 3, t, d, budget)
                                          : make_attention_plan<double>(2, 3, t, d, budget));
                      }),
                      "no error");
            continue;
          }
          AttentionPlan const p = bytes == 4 ? make_attention_plan<float>(2, 3, t, d, budget)
                                             : make_attention_plan<double>(2, 3, t, d, budget);
          ASSERT_EQ(p.q_tile, q) << t << " " << d << " " << budget << " " << bytes;
          ASSERT_EQ(p.kv_tile, kv);
          ASSERT_GE(p.q_tile, p.kv_tile);
          ASSERT_EQ(p.num_q_tiles, (t + q - 1) / q);
          ASSERT_EQ(p.num_kv_tiles, (t + kv - 1) / kv);
          ASSERT_EQ(p.scratch_bytes, (2 * 3 * t * bytes + 255) / 256 * 256);
        }
}

TEST(AttentionPlan, RejectsImpossibleShapesWithASentence) {
  using test::error_of;
  EXPECT_EQ(error_of([] { (void)make_attention_plan<float>(-1, 12, 64, 64); }),
            "an attention plan needs a batch size >= 0, got -1.");
  EXPECT_EQ(error_of([] { (void)make_attention_plan<float>(4, 0, 64, 64); }),
            "an attention plan needs a head count >= 1, got 0.");
  EXPECT_EQ(error_of([] { (void)make_attention_plan<float>(4, 12, -5, 64); }),
            "an attention plan needs a sequence length >= 0, got -5.");
  EXPECT_EQ(error_of([] { (void)make_attention_plan<float>(4, 12, 64, 0); }),
            "an attention plan needs a head_dim >= 1, got 0.");
  EXPECT_EQ(error_of([] { (void)make_attention_plan<float>(4, 12, 64, 64, -1); }),
            "an attention plan needs a tile budget >= 0 bytes, got -1.");
  EXPECT_EQ(error_of([] { (void)make_attention_plan<float>(4, 12, 64, index_t{1} << 41); }),
            "an attention plan needs a head_dim <= 2^40, got 2199023255552.");
  EXPECT_EQ(error_of([] { (void)make_attention_plan<float>(4, 12, 64, 64, 1000); }),
            "an attention tile of 16 x 16 rows at head_dim 64 needs 13312 bytes, more than the "
            "tile budget of 1000 bytes.");
  EXPECT_EQ(
      error_of([] { (void)make_attention_plan<float>(index_t{1} << 40, 1 << 20, 1 << 20, 1); }),
      "an attention plan of batch 1099511627776, 1048576 heads and 1048576 positions has "
      "more rows than a 64-bit size can count.");
}

TEST(AttentionPlan, PrintsOneLine) {
  std::ostringstream os;
  os << t256;
  EXPECT_EQ(os.str(),
            "attention plan: B 4, 12 heads, T 256, head_dim 64, f32; 4 query tiles of 64 rows, 4 "
            "key/value tiles of 64 rows; 65536 bytes a tile, backward scratch 49152 bytes "
            "(static)");
}

// ---- the naive float64 reference: the full (T, T) scores per batch and head ----

struct Shape4 {
  index_t b, t, h, d;
  index_t at(index_t bi, index_t i, index_t hi, index_t c) const {
    return ((bi * t + i) * h + hi) * d + c;
  }
  index_t size() const { return b * t * h * d; }
};

struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

// Forward (and with go, backward) of causal attention, computed the textbook way.
Reference naive_attention(Shape4 s, std::vector<double> const& q, std::vector<double> const& k,
                          std::vector<double> const& v, std::vector<double> const* go) {
  Reference r;
  r.out.assign(s.size(), 0);
  r.lse.assign(s.b * s.h * s.t, 0);
  r.dq.assign(s.size(), 0);
  r.dk.assign(s.size(), 0);
  r.dv.assign(s.size(), 0);
  double const scale = 1 / std::sqrt(static_cast<double>(s.d));
  for (index_t b = 0; b < s.b; ++b)
    for (index_t h = 0; h < s.h; ++h) {
      std::vector<double> p(s.t * s.t, 0), dp(s.t * s.t, 0);
      for (index_t i = 0; i < s.t; ++i) {
        double m = -INFINITY;
        for (index_t j = 0; j <= i; ++j) {
          double x = 0;
          for (index_t c = 0; c < s.d; ++c) x += q[s.at(b, i, h, c)] * k[s.at(b, j, h, c)];
          p[i * s.t + j] = x * scale;
          m = std::max(m, x * scale);
        }
        double sum = 0;
        for (index_t j = 0; j <= i; ++j) sum += std::exp(p[i * s.t + j] - m);
        r.lse[(b * s.h + h) * s.t + i] = m + std::log(sum);
        for (index_t j = 0; j <= i; ++j) {
          p[i * s.t + j] = std::exp(p[i * s.t + j] - m) / sum;
          for (index_t c = 0; c < s.d; ++c)
            r.out[s.at(b, i, h, c)] += p[i * s.t + j] * v[s.at(b, j, h, c)];
        }
      }
      if (go == nullptr) continue;
      for (index_t i = 0; i < s.t; ++i) {
        double rowsum = 0;
        for (index_t j = 0; j <= i; ++j) {
          double x = 0;
          for (index_t c = 0; c < s.d; ++c) x += (*go)[s.at(b, i, h, c)] * v[s.at(b, j, h, c)];
          dp[i * s.t + j] = x;
          rowsum += p[i * s.t + j] * x;
        }
        for (index_t j = 0; j <= i; ++j) {
          double const ds = p[i * s.t + j] * (dp[i * s.t + j] - rowsum) * scale;
          for (index_t c = 0; c < s.d; ++c) {
            r.dv[s.at(b, j, h, c)] += p[i * s.t + j] * (*go)[s.at(b, i, h, c)];
            r.dq[s.at(b, i, h, c)] += ds * k[s.at(b, j, h, c)];
            r.dk[s.at(b, j, h, c)] += ds * q[s.at(b, i, h, c)];
          }
        }
      }
    }
  return r;
}

template <class T>
std::vector<double> as_doubles(T const& t) {
  std::vector<double> out;
  for (auto x : t) out.push_back(static_cast<double>(x));
  return out;
}

// q, k, v, out, lse, grad_out and the gradients of one call, as owning tensors of C with
// run-time shapes, the inputs drawn from one seed.
template <class C>
struct Problem {
  Shape4 s;
  decltype(make_host_tensor<C>(make_shape(index_t{}, index_t{}, index_t{}, index_t{}))) q, k, v,
      out, go, dq, dk, dv;
  decltype(make_host_tensor<C>(make_shape(index_t{}, index_t{}, index_t{}))) lse;

  explicit Problem(Shape4 shape, unsigned seed = 1)
      : s(shape),
        q(make_host_tensor<C>(make_shape(s.b, s.t, s.h, s.d))),
        k(make_host_tensor<C>(make_shape(s.b, s.t, s.h, s.d))),
        v(make_host_tensor<C>(make_shape(s.b, s.t, s.h, s.d))),
        out(make_host_tensor<C>(make_shape(s.b, s.t, s.h, s.d))),
        go(make_host_tensor<C>(make_shape(s.b, s.t, s.h, s.d))),
        dq(make_host_tensor<C>(make_shape(s.b, s.t, s.h, s.d))),
        dk(make_host_tensor<C>(make_shape(s.b, s.t, s.h, s.d))),
        dv(make_host_tensor<C>(make_shape(s.b, s.t, s.h, s.d))),
        lse(make_host_tensor<C>(make_shape(s.b, s.h, s.t))) {
    std::mt19937_64 rng(seed);
    fill_normal(q, rng, 0, 1.5);  // sharp enough that the running maximum moves between tiles
    fill_normal(k, rng, 0, 1.5);
    fill_normal(v, rng);
    fill_normal(go, rng);
  }
  template <class Plan, class X = exec::Serial>
  void run(Plan const& plan, X const& x = {}) {
    nn::attention_forward(plan, q, k, v, out, lse, x);
    nn::attention_backward(plan, nn::AttentionSaved{q, k, v, out, lse}, go,
                           nn::AttentionGrads{dq, dk, dv}, x);
  }
  Reference reference() const {
    auto const g = as_doubles(go);
    return naive_attention(s, as_doubles(q), as_doubles(k), as_doubles(v), &g);
  }
};

double max_abs_diff(std::vector<double> const& a, std::vector<double> const& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

void expect_matches(Problem<double> const& p, Reference const& r, double tol) {
  EXPECT_LE(max_abs_diff(as_doubles(p.out), r.out), tol);
  EXPECT_LE(max_abs_diff(as_doubles(p.lse), r.lse), tol);
  EXPECT_LE(max_abs_diff(as_doubles(p.dq), r.dq), tol);
  EXPECT_LE(max_abs_diff(as_doubles(p.dk), r.dk), tol);
  EXPECT_LE(max_abs_diff(as_doubles(p.dv), r.dv), tol);
}

// ---- forward and backward against the reference ----

TEST(Attention, MatchesTheNaiveReferenceInFloat64) {
  // (B, T, heads, head_dim): odd T, T = 1, T shorter than a tile, several heads and batches,
  // head_dim not a multiple of 8.
  for (Shape4 s : {Shape4{1, 1, 1, 1}, Shape4{2, 7, 3, 5}, Shape4{1, 37, 2, 16},
                   Shape4{3, 20, 1, 9}, Shape4{1, 130, 2, 8}}) {
    Problem<double> p(s);
    p.run(make_attention_plan<double>(s.b, s.h, s.t, s.d));
    expect_matches(p, p.reference(), 1e-12);
  }
}

TEST(Attention, TilesShorterThanTheSequenceGiveTheSameAnswer) {
  // An 8 KiB budget: 32-row query tiles, 16-row key/value tiles over T = 37 (neither divides it).
  Shape4 const s{2, 37, 2, 8};
  auto const plan = make_attention_plan<double>(s.b, s.h, s.t, s.d, 8192);
  ASSERT_EQ(plan.q_tile, 32);
  ASSERT_EQ(plan.kv_tile, 16);
  Problem<double> p(s);
  p.run(plan);
  expect_matches(p, p.reference(), 1e-12);
}

TEST(Attention, Float32IsWithinItsRoundingOfTheReference) {
  Shape4 const s{2, 67, 3, 64};
  Problem<float> p(s);
  p.run(make_attention_plan<float>(s.b, s.h, s.t, s.d));
  Reference const r = p.reference();
  EXPECT_LE(max_abs_diff(as_doubles(p.out), r.out), 2e-5);
  EXPECT_LE(max_abs_diff(as_doubles(p.lse), r.lse), 2e-5);
  EXPECT_LE(max_abs_diff(as_doubles(p.dq), r.dq), 1e-4);
  EXPECT_LE(max_abs_diff(as_doubles(p.dk), r.dk), 1e-4);
  EXPECT_LE(max_abs_diff(as_doubles(p.dv), r.dv), 1e-4);
}

// d/dx sum(out * go) by central differences, for a few elements of q, k and v.
TEST(Attention, BackwardMatchesCentralFiniteDifferences) {
  Shape4 const s{2, 37, 2, 6};
  auto const plan = make_attention_plan<double>(s.b, s.h, s.t, s.d, 6144);
  ASSERT_GT(plan.num_kv_tiles, 1);
  Problem<double> p(s, 7);
  p.run(plan);
  auto out = make_host_tensor<double>(make_shape(s.b, s.t, s.h, s.d));
  auto lse = make_host_tensor<double>(make_shape(s.b, s.h, s.t));
  auto loss = [&] {
    nn::attention_forward(plan, p.q, p.k, p.v, out, lse, exec::Serial{});
    double l = 0;
    for (index_t i = 0; i < s.size(); ++i) l += out[i] * p.go[i];
    return l;
  };
  double const eps = 1e-6;
  for (auto [input, grad] :
       {std::pair{&p.q, &p.dq}, std::pair{&p.k, &p.dk}, std::pair{&p.v, &p.dv}})
    for (index_t e : {index_t{0}, s.size() / 3, s.size() / 2 + 1, s.size() - 1}) {
      double const x = (*input)[e];
      (*input)[e] = x + eps;
      double const up = loss();
      (*input)[e] = x - eps;
      double const down = loss();
      (*input)[e] = x;
      EXPECT_NEAR((*grad)[e], (up - down) / (2 * eps), 1e-8) << "element " << e;
    }
}

// ---- the same bits whatever the shapes' kind, the views, the lanes and the threads ----

TEST(Attention, StaticAndRunTimeShapesGiveTheSameBits) {
  constexpr index_t B = 2, T = 45, H = 3, D = 16;
  Problem<float> dynamic({B, T, H, D}, 3);
  dynamic.run(make_attention_plan<float>(B, H, T, D, 8192));
  auto const shape = make_shape(Int<B>{}, Int<T>{}, Int<H>{}, Int<D>{});
  auto const lse_shape = make_shape(Int<B>{}, Int<H>{}, Int<T>{});
  auto q = make_host_tensor<float>(shape), k = make_host_tensor<float>(shape),
       v = make_host_tensor<float>(shape), out = make_host_tensor<float>(shape),
       go = make_host_tensor<float>(shape), dq = make_host_tensor<float>(shape),
       dk = make_host_tensor<float>(shape), dv = make_host_tensor<float>(shape);
  auto lse = make_host_tensor<float>(lse_shape);
  for (index_t i = 0; i < B * T * H * D; ++i) {
    q[i] = dynamic.q[i];
    k[i] = dynamic.k[i];
    v[i] = dynamic.v[i];
    go[i] = dynamic.go[i];
  }
  constexpr auto plan =
      make_attention_plan<float>(Int<B>{}, Int<H>{}, Int<T>{}, Int<D>{}, Int<8192>{});
  static_assert(plan.q_tile == 32 && plan.kv_tile == 16);
  nn::attention_forward(plan, q, k, v, out, lse, exec::Serial{});
  nn::attention_backward(plan, nn::AttentionSaved{q, k, v, out, lse}, go,
                         nn::AttentionGrads{dq, dk, dv}, exec::Serial{});
  for (index_t i = 0; i < B * T * H * D; ++i) {
    ASSERT_EQ(out[i], dynamic.out[i]) << i;
    ASSERT_EQ(dq[i], dynamic.dq[i]) << i;
    ASSERT_EQ(dk[i], dynamic.dk[i]) << i;
    ASSERT_EQ(dv[i], dynamic.dv[i]) << i;
  }
  for (index_t i = 0; i < B * H * T; ++i) ASSERT_EQ(lse[i], dynamic.lse[i]) << i;
}

TEST(Attention, ReadsStridedViewsOfAQkvTensor) {
  // GPT-2's layout: one (B, T, 3 C) projection, q, k and v its three (B, T, heads, head_dim)
  // slices; the plan without arguments comes from q's shape.
  constexpr index_t B = 2, T = 19, H = 3, D = 8, C = H * D;
  Problem<double> ref({B, T, H, D}, 5);
  auto qkv = make_host_tensor<double>(make_shape(B, T, 3 * C));
  auto split = reshape(qkv, make_shape(B, T, Int<3>{}, H, D));
  auto q = split(_, _, 0, _, _), k = split(_, _, 1, _, _), v = split(_, _, 2, _, _);
  for (index_t b = 0; b < B; ++b)
    for (index_t t = 0; t < T; ++t)
      for (index_t h = 0; h < H; ++h)
        for (index_t c = 0; c < D; ++c) {
          q(b, t, h, c) = ref.q(b, t, h, c);
          k(b, t, h, c) = ref.k(b, t, h, c);
          v(b, t, h, c) = ref.v(b, t, h, c);
        }
  auto out = make_host_tensor<double>(make_shape(B, T, H, D));
  auto lse = make_host_tensor<double>(make_shape(B, H, T));
  nn::attention_forward(q, k, v, out, lse);
  nn::attention_backward(nn::AttentionSaved{q, k, v, out, lse}, ref.go,
                         nn::AttentionGrads{ref.dq, ref.dk, ref.dv});
  ref.run(make_attention_plan<double>(B, H, T, D));
  for (index_t i = 0; i < B * T * H * D; ++i) ASSERT_EQ(out[i], ref.out[i]);
}

TEST(Attention, SeveralThreadsGiveTheSameBitsAndSeveralLanesTheSameValues) {
  Shape4 const s{2, 40, 2, 12};
  auto const plan = make_attention_plan<float>(s.b, s.h, s.t, s.d, 8192);
  Problem<float> serial(s, 9), threads(s, 9), lanes(s, 9);
  serial.run(plan);
  threads.run(plan, exec::OpenMP{.threads = 2});
  // Every body with three lanes per work item on host threads (a CUDA block's stand-in): a
  // lane's rows are every third row of a tile.
  test::ThreadBlock block(3);
  auto on_lanes = [&](auto const& body, index_t items) {
    for (index_t item = 0; item < items; ++item)
      block.run([&](auto const& ctx) {
        body(ctx, item);
        return 0;
      });
  };
  nn::detail::AttentionForwardRows const forward{plan,
                                                 lanes.q.view(),
                                                 lanes.k.view(),
                                                 lanes.v.view(),
                                                 lanes.out.view(),
                                                 lanes.lse.view(),
                                                 nn::detail::attention_scale<float>(s.d)};
  on_lanes(forward, plan.q_work_items());
  auto delta = make_host_tensor<float>(make_shape(s.b, s.h, s.t));
  auto const bodies = nn::detail::attention_backward_bodies(
      plan, nn::AttentionSaved{lanes.q, lanes.k, lanes.v, lanes.out, lanes.lse}, lanes.go.view(),
      nn::AttentionGrads{lanes.dq, lanes.dk, lanes.dv}, delta.view());
  on_lanes(bodies.grad_q, plan.q_work_items());
  on_lanes(bodies.grad_kv, plan.kv_work_items());
  // Threads: the same bits (a work item is computed the same way on any thread). Lanes: a lane's
  // rows are a smaller matrix, which a BLAS may block (and round) differently; Eigen's gemm does.
  for (index_t i = 0; i < s.size(); ++i) {
    ASSERT_EQ(threads.out[i], serial.out[i]);
    ASSERT_EQ(threads.dq[i], serial.dq[i]);
    ASSERT_EQ(threads.dk[i], serial.dk[i]);
    ASSERT_EQ(threads.dv[i], serial.dv[i]);
    ASSERT_NEAR(lanes.out[i], serial.out[i], 1e-6);
    ASSERT_NEAR(lanes.dq[i], serial.dq[i], 1e-6);
    ASSERT_NEAR(lanes.dk[i], serial.dk[i], 1e-6);
    ASSERT_NEAR(lanes.dv[i], serial.dv[i], 1e-6);
  }
}

TEST(Attention, EmptyBatchesAndSequencesWriteNothing) {
  Problem<float> p({0, 5, 2, 4});
  EXPECT_NO_THROW(p.run(make_attention_plan<float>(0, 2, 5, 4)));
  Problem<float> empty({2, 0, 2, 4});
  EXPECT_NO_THROW(empty.run(make_attention_plan<float>(2, 2, 0, 4)));
}

// ---- errors: a sentence, nothing written ----

TEST(AttentionErrors, ShapesAndStridesAreCheckedBeforeAnyWrite) {
  using test::error_of;
  Shape4 const s{2, 5, 3, 4};
  Problem<float> p(s);
  for (auto& x : p.out) x = -7;
  for (auto& x : p.dq) x = -7;
  auto const plan = make_attention_plan<float>(s.b, s.h, s.t, s.d);
  auto const other = make_attention_plan<float>(s.b, s.h, s.t + 1, s.d);
  EXPECT_EQ(error_of([&] { nn::attention_forward(other, p.q, p.k, p.v, p.out, p.lse); }),
            "q has shape (2,5,3,4) but the attention plan's (B, T, heads, head_dim) is "
            "(2,6,3,4).");
  auto wrong_lse = make_host_tensor<float>(make_shape(2, 5, 3));
  EXPECT_EQ(error_of([&] { nn::attention_forward(plan, p.q, p.k, p.v, p.out, wrong_lse); }),
            "lse has shape (2,5,3) but the attention plan's (B, heads, T) is (2,3,5).");
  auto wide = make_host_tensor<float>(make_shape(2, 5, 3, 8));
  auto every_other =
      make_tensor(wide.data(), make_layout(make_shape(2, 5, 3, 4), make_stride(120, 24, 8, 2)));
  EXPECT_EQ(error_of([&] { nn::attention_forward(plan, p.q, every_other, p.v, p.out, p.lse); }),
            "k must be contiguous along head_dim (stride 1), got stride 2.");
  auto const f64 = make_attention_plan<double>(s.b, s.h, s.t, s.d);
  EXPECT_EQ(error_of([&] { nn::attention_forward(f64, p.q, p.k, p.v, p.out, p.lse); }),
            "the attention plan was made for 8-byte elements but the tensors hold 4-byte ones.");
  EXPECT_EQ(error_of([&] {
              nn::attention_backward(plan, nn::AttentionSaved{p.q, p.k, p.v, p.out, p.lse}, p.go,
                                     nn::AttentionGrads{p.dq, p.dk, wide});
            }),
            "grad_v has shape (2,5,3,8) but the attention plan's (B, T, heads, head_dim) is "
            "(2,5,3,4).");
  for (auto x : p.out) ASSERT_EQ(x, -7);
  for (auto x : p.dq) ASSERT_EQ(x, -7);
}

}  // namespace
