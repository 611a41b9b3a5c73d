// Host twins of the CUDA executor's kernels: the nest bodies (exec/body/nest.hpp) run here with
// SequentialContext over nests lowered exactly as the CUDA executor lowers them, and must agree
// with the host executor. FastDivmod is checked against / and %.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <tessel/exec/body/nest.hpp>
#include <tessel/exec/fast_divmod.hpp>
#include <tessel/tessel.hpp>

namespace tessel {
namespace {

using exec::FastDivmod;
using exec::NestIndexer;
using exec::SequentialContext;

template <class U>
void check_divisor(U d, std::vector<U> const& dividends) {
  FastDivmod<U> const f(d);
  for (U n : dividends) {
    U r = 0;
    U const q = f.divmod(n, r);
    ASSERT_EQ(q, n / d) << n << " / " << d;
    ASSERT_EQ(r, n % d) << n << " % " << d;
  }
}

template <class U>
void check_fast_divmod() {
  U const top = (U{1} << (sizeof(U) * 8 - 1)) - 1;  // the largest dividend allowed
  std::mt19937_64 gen(42);
  std::vector<U> dividends = {0, 1, 2, 3, 7, 8, 255, 256, 65535, 65536, top, top - 1, top / 3};
  for (int i = 0; i < 200; ++i) dividends.push_back(static_cast<U>(gen()) & top);
  std::vector<U> divisors = {1, 2, 3, 5, 7, 10, 31, 32, 33, 1000, 4096, 65537, top, top - 1};
  for (int i = 0; i < 100; ++i)
    divisors.push_back(std::max<U>(1, static_cast<U>(gen() >> (i % 60)) & top));
  for (U d : divisors) check_divisor(d, dividends);
}

TEST(FastDivmod, AgreesWithDivisionFor32BitIndices) {
  check_fast_divmod<std::uint32_t>();
}
TEST(FastDivmod, AgreesWithDivisionFor64BitIndices) {
  check_fast_divmod<std::uint64_t>();
}

// ---- lowering as the CUDA executor does it, run with the host twin's context ----

template <class H>
void fill(H& t, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  index_t const n = to_index(size(t.layout()));
  for (index_t i = 0; i < n; ++i) t.data()[i] = dist(gen);
}

template <class A, class B>
void expect_close(A const& a, B const& b, double tol) {
  index_t const n = to_index(size(a.layout()));
  for (index_t i = 0; i < n; ++i) {
    double const x = static_cast<double>(a.data()[i]), y = static_cast<double>(b.data()[i]);
    ASSERT_NEAR(x, y, tol * (1.0 + std::abs(y))) << "at flat index " << i;
  }
}

// dst = node through the elementwise nest body (the CUDA executor's indexed kernel), Index-bit
// flat indices, one lane.
template <class Index, class D, class Node>
void nest_elementwise(D& dst, Node const& node) {
  using namespace exec::detail;
  auto dv = tessel::detail::view_of(dst);
  constexpr std::size_t R = tessel::detail::tensor_rank<decltype(dv)>();
  auto const shape = tessel::detail::logical_shape(dv);
  constexpr std::size_t K = R + max_leaves_v<decltype(dv.shape())> + mode_capacity_v<Node> + 2;
  Binder<R, K, 1 + leaf_count_v<Node>> b(shape, {});
  b.set_destination(dv, identity_map<R>());
  auto ev = bind<K>(node, b, [](auto const&) { return 0; });
  auto nest = b.lower();
  b.apply(nest, ev);
  auto const d = b.destination(dv.data(), nest);
  exec::nest_elementwise_body(SequentialContext{}, exec::make_indexer<Index, K>(nest), d, ev,
                              static_cast<Index>(tessel::detail::shape_size(shape)));
}

TEST(NestElementwiseBody, MatchesTheHostExecutorOnTransposedAndBroadcastOperands) {
  auto x = make_host_tensor<float>(make_shape(index_t{13}, index_t{7}));
  auto b = make_host_tensor<float>(make_shape(index_t{13}));
  fill(x, 1);
  fill(b, 2);
  auto expected = make_host_tensor<float>(make_shape(index_t{7}, index_t{13}));
  assign(expected, transpose(x) * 2.0f + b, exec::Serial{});
  auto got32 = make_host_tensor<float>(make_shape(index_t{7}, index_t{13}));
  auto got64 = make_host_tensor<float>(make_shape(index_t{7}, index_t{13}));
  nest_elementwise<std::uint32_t>(got32, as_expr(transpose(x)) * 2.0f + b);
  nest_elementwise<std::uint64_t>(got64, as_expr(transpose(x)) * 2.0f + b);
  expect_close(got32, expected, 0.0);
  expect_close(got64, expected, 0.0);
}

TEST(PacketElementwiseBody, MatchesTheScalarBodyIncludingTheTail) {
  for (index_t n : {index_t{64}, index_t{67}, index_t{3}}) {
    std::vector<float> xs(static_cast<std::size_t>(n)), got(xs.size()), want(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = 0.25f * static_cast<float>(i) - 3.0f;
    exec::LeafEval<float, 1> leaf{};
    leaf.ptr = xs.data();
    leaf.inner = 1;
    using Exp = exec::MapEval<ops::Exp, exec::LeafEval<float, 1>>;
    exec::MapEval<ops::Mul, Exp, exec::ScalarEval<float>> const e{
        {}, {Exp{{}, {leaf}}, exec::ScalarEval<float>{3.0f}}};
    exec::DstEval<float, 1> d{};
    d.ptr = got.data();
    d.inner = 1;
    exec::packet_elementwise_body<4>(SequentialContext{}, d, e, n);
    for (std::size_t i = 0; i < xs.size(); ++i) want[i] = std::exp(xs[i]) * 3.0f;
    EXPECT_EQ(got, want) << "n = " << n;
  }
}

// dst = Kind over mode Axis of x through the row body, one row at a time (the CUDA row kernel's
// host twin); Flat tells whether the reduced modes coalesce into one.
// Op void: softmax (Log false) or log_softmax (Log true) instead of a reduction.
template <bool Flat, class Op, bool Log = false, class D, class In>
void nest_rows(D& dst, In const& input, std::size_t axis) {
  using namespace exec::detail;
  auto dv = tessel::detail::view_of(dst);
  constexpr std::size_t R = In::rank;
  auto const shape = input.shape();
  std::array<bool, R> reduced{};
  reduced[axis] = true;
  std::array<std::size_t, tessel::detail::tensor_rank<decltype(dv)>()> map{};
  for (std::size_t k = 0, t = 0; k != R; ++k)
    if (k != axis || map.size() == R) map[t++] = k;
  constexpr std::size_t K = R + max_leaves_v<decltype(dv.shape())> + mode_capacity_v<In> + 2;
  Binder<R, K, 1 + leaf_count_v<In>> b(shape, reduced);
  b.set_destination(dv, map);
  auto ev = bind<K>(input, b, [](auto const&) { return 0; });
  auto nest = b.lower();
  ASSERT_EQ(nest.rank - nest.outer == 1, Flat);
  b.apply(nest, ev);
  auto const d = b.destination(dv.data(), nest);
  auto const idx = exec::make_indexer<std::uint32_t, K>(nest);
  index_t const rows = nest.size(0, nest.outer), n = nest.size(nest.outer, nest.rank);
  for (std::uint32_t r = 0; r < rows; ++r) {
    if constexpr (std::is_void_v<Op>)
      exec::nest_softmax_row_body<Log, Flat>(SequentialContext{}, idx, d, ev, r, n);
    else
      exec::nest_reduce_row_body<Flat>(SequentialContext{}, Op{}, idx, d, ev, r, n);
  }
}

TEST(NestRowBody, ReductionsWithAFusedProducerMatchTheHostExecutor) {
  auto x = make_host_tensor<float>(make_shape(index_t{6}, index_t{50}));
  fill(x, 3);
  auto want = make_host_tensor<float>(make_shape(index_t{6}));
  auto got = make_host_tensor<float>(make_shape(index_t{6}));
  assign(want, logsumexp(x * 0.5f, mode<1>), exec::Serial{});
  nest_rows<true, exec::LogSumExpOp<float>>(got, as_expr(x) * 0.5f, 1);
  expect_close(got, want, 1e-6);

  auto wcol = make_host_tensor<float>(make_shape(index_t{50}));
  auto gcol = make_host_tensor<float>(make_shape(index_t{50}));
  assign(wcol, max(x, mode<0>), exec::Serial{});
  nest_rows<true, exec::MaxOp<float>>(gcol, as_expr(x), 0);  // a strided row
  expect_close(gcol, wcol, 0.0);

  auto warg = make_host_tensor<index_t>(make_shape(index_t{6}));
  auto garg = make_host_tensor<index_t>(make_shape(index_t{6}));
  assign(warg, argmax(x, mode<1>), exec::Serial{});
  nest_rows<true, exec::ArgmaxOp<float>>(garg, as_expr(x), 1);
  expect_close(garg, warg, 0.0);
}

TEST(NestRowBody, AHierarchicalReducedModeUsesTheDividedRow) {
  // Layout (4, (3, 5)):(1, (4, 12)) over 60 elements: the reduced mode 1 splits into two loop
  // modes that do not coalesce (4 != 5 * 12), so the row divides its flat index.
  auto base = make_host_tensor<float>(make_shape(index_t{60}));
  fill(base, 4);
  auto x = make_tensor(base.data(),
                       make_layout(make_shape(index_t{4}, make_shape(index_t{3}, index_t{5})),
                                   make_stride(index_t{1}, make_stride(index_t{4}, index_t{12}))));
  auto want = make_host_tensor<float>(make_shape(index_t{4}));
  auto got = make_host_tensor<float>(make_shape(index_t{4}));
  assign(want, sum(x, mode<1>), exec::Serial{});
  nest_rows<false, exec::SumOp<float>>(got, as_expr(x), 1);
  expect_close(got, want, 1e-6);
}

TEST(NestRowBody, SoftmaxEpiloguesMatchTheHostExecutor) {
  auto x = make_host_tensor<float>(make_shape(index_t{5}, index_t{33}));
  fill(x, 5);
  auto want = make_host_tensor<float>(make_shape(index_t{5}, index_t{33}));
  auto got = make_host_tensor<float>(make_shape(index_t{5}, index_t{33}));
  assign(want, softmax(x + 1.0f), exec::Serial{});
  nest_rows<true, void, false>(got, as_expr(x) + 1.0f, 1);
  expect_close(got, want, 1e-6);
  assign(want, log_softmax(x), exec::Serial{});
  nest_rows<true, void, true>(got, as_expr(x), 1);
  expect_close(got, want, 1e-6);
}

// The input iterator of the CUDA full reduction, combined in order on the host.
template <class Op, class In>
auto full_reduce(In const& input) {
  using namespace exec::detail;
  constexpr std::size_t R = In::rank;
  auto const shape = input.shape();
  std::array<bool, R> reduced{};
  reduced.fill(true);
  constexpr std::size_t K = R + mode_capacity_v<In> + 3;
  Binder<R, K, 1 + leaf_count_v<In>> b(shape, reduced);
  auto sink = make_host_tensor<float>(make_shape());
  b.set_destination(tessel::detail::view_of(sink), std::array<std::size_t, 0>{});
  auto ev = bind<K>(input, b, [](auto const&) { return 0; });
  auto nest = b.lower();
  b.apply(nest, ev);
  Op const op{};
  exec::NestReduceInput<Op, decltype(ev), std::uint64_t, K> const in{
      op, ev, exec::make_indexer<std::uint64_t, K>(nest)};
  index_t const n = nest.size(nest.outer, nest.rank);
  auto s = op.identity();
  for (std::uint64_t f = 0; f < static_cast<std::uint64_t>(n); ++f) s = op(s, in(f));
  return op.finalize(s, n);
}

TEST(NestReduceInput, FullReductionsMatchTheHostExecutor) {
  auto x = make_host_tensor<float>(make_shape(index_t{11}, index_t{9}));
  fill(x, 6);
  EXPECT_NEAR(full_reduce<exec::LogSumExpOp<float>>(as_expr(transpose(x))), item(logsumexp(x)),
              1e-5);
  EXPECT_EQ(full_reduce<exec::ArgmaxOp<float>>(as_expr(x)), item(argmax(x)));
  EXPECT_NEAR(full_reduce<exec::SumOp<float>>(as_expr(x) * 2.0f), item(sum(x * 2.0f)), 1e-4);
}

}  // namespace
}  // namespace tessel
