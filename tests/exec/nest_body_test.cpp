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
  exec::NestReduceInput<Op, decltype(ev), exec::NestIndexer<std::uint64_t, K>> const in{
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

// ---- compile-time nests: static layouts lowered by the compiler ----

namespace lowering = exec::detail;

// x: [8, 4] row-major; its transpose is [4, 8] with strides (1, 4).
using RowMajor4x8 = decltype(make_layout(make_shape(Int<4>{}, Int<8>{})));
using Transposed4x8 =
    decltype(make_layout(make_shape(Int<4>{}, Int<8>{}), make_stride(Int<1>{}, Int<4>{})));
using View4x8 = decltype(make_tensor(static_cast<float*>(nullptr), RowMajor4x8{}));
using TView4x8 = decltype(make_tensor(static_cast<float*>(nullptr), Transposed4x8{}));
using Bias8 = decltype(make_tensor(static_cast<float*>(nullptr), make_shape(Int<8>{})));
using tessel::detail::Map;
using tessel::detail::ScalarLeaf;
using tessel::detail::TensorLeaf;

// dst[4, 8] = x + y over contiguous operands: one loop mode of 32 elements, unit strides.
constexpr auto contiguous =
    lowering::lower_static_elementwise<2, 8, 3, RowMajor4x8,
                                       Map<ops::Add, TensorLeaf<View4x8>, TensorLeaf<View4x8>>>();
static_assert(contiguous.ok && contiguous.nest.rank == 1 && contiguous.nest.extent[0] == 32);
static_assert(contiguous.nest.stride[0][0] == 1 && contiguous.nest.stride[2][0] == 1);

// dst[4, 8] = transpose(x) * 2 + bias[8]: two modes (no common coalescing), the bias broadcast
// along the outer one and the transposed operand striding 4 along the inner one.
constexpr auto transposed = lowering::lower_static_elementwise<
    2, 8, 3, RowMajor4x8,
    Map<ops::Add, Map<ops::Mul, TensorLeaf<TView4x8>, ScalarLeaf<float>>, TensorLeaf<Bias8>>>();
static_assert(transposed.ok && transposed.nest.rank == 2);
static_assert(transposed.nest.extent[0] == 4 && transposed.nest.extent[1] == 8);
static_assert(transposed.nest.stride[0][0] == 8 && transposed.nest.stride[0][1] == 1);  // dst
static_assert(transposed.nest.stride[1][0] == 1 && transposed.nest.stride[1][1] == 4);  // x^T
static_assert(transposed.nest.stride[2][0] == 0 && transposed.nest.stride[2][1] == 1);  // bias

// A dynamic extent anywhere: no compile-time nest (the executor lowers at run time).
using Dynamic = decltype(make_layout(make_shape(index_t{4}, Int<8>{})));
static_assert(!lowering::lower_static_elementwise<2, 8, 2, Dynamic, TensorLeaf<View4x8>>().ok);
static_assert(!lowering::lower_static_elementwise<
                   2, 8, 2, RowMajor4x8,
                   TensorLeaf<decltype(make_tensor(static_cast<float*>(nullptr), Dynamic{}))>>()
                   .ok);

// The nest the Binder lowers at run time for view dst = node; ev comes back unpositioned when
// `position` is false (its strides zero), so a body that reads correct values took its strides
// from somewhere else: the compile-time nest.
template <class DV, class Node>
auto runtime_lowering(DV const& dv, Node const& node, bool position) {
  using namespace exec::detail;
  constexpr std::size_t R = tessel::detail::tensor_rank<DV>();
  constexpr std::size_t K = R + max_leaves_v<decltype(dv.shape())> + mode_capacity_v<Node> + 2;
  Binder<R, K, 1 + leaf_count_v<Node>> b(tessel::detail::logical_shape(dv), {});
  b.set_destination(dv, identity_map<R>());
  auto ev = bind<K>(node, b, [](auto const&) { return 0; });
  auto nest = b.lower();
  if (position) b.apply(nest, ev);
  auto d = b.destination(dv.data(), nest);
  if (!position) {
    for (auto& s : d.stride) s = 0;
    d.inner = 0;
  }
  struct Lowered {
    decltype(nest) loops;
    decltype(d) dst;
    decltype(ev) expr;
  };
  return Lowered{nest, d, ev};
}

TEST(StaticNest, IsTheNestTheRunTimeLoweringProduces) {
  std::vector<float> xs(32), bias(8), out(32);
  auto x = make_tensor(xs.data(), Transposed4x8{});
  auto b = make_tensor(bias.data(), make_shape(Int<8>{}));
  auto dst = make_tensor(out.data(), RowMajor4x8{});
  auto const node = as_expr(x) * 2.0f + b;
  auto const run = runtime_lowering(dst, node, true);
  using Node = std::remove_cvref_t<decltype(node)>;
  constexpr auto S = lowering::lower_static_elementwise<2, 8, 3, RowMajor4x8, Node>();
  static_assert(S.ok);
  EXPECT_TRUE(lowering::same_nest(run.loops, S.nest));
  EXPECT_TRUE(lowering::same_nest(run.loops, transposed.nest));
  // A different destination layout lowers differently, and the comparison notices.
  EXPECT_FALSE(lowering::same_nest(run.loops, contiguous.nest));
}

TEST(StaticNest, TheElementwiseBodyFoldsItsConstantsIntoUnpositionedEvaluators) {
  std::vector<float> xs(32), bias(8), got(32, -1.0f);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = 0.5f * static_cast<float>(i) - 3.0f;
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i * i);
  auto x = make_tensor(xs.data(), Transposed4x8{});
  auto b = make_tensor(bias.data(), make_shape(Int<8>{}));
  auto dst = make_tensor(got.data(), RowMajor4x8{});
  auto const node = as_expr(x) * 2.0f + b;
  auto const run = runtime_lowering(dst, node, false);
  using Node = std::remove_cvref_t<decltype(node)>;
  using S = lowering::StaticElementwiseNest<2, 8, 3, RowMajor4x8, Node>;
  static_assert(S::value.ok);
  exec::nest_elementwise_body(SequentialContext{}, exec::StaticNestIndexer<S, std::uint32_t>{},
                              run.dst, run.expr, std::uint32_t{32});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      ASSERT_EQ(got[static_cast<std::size_t>(i * 8 + j)],
                xs[static_cast<std::size_t>(j * 4 + i)] * 2.0f + bias[static_cast<std::size_t>(j)])
          << "at (" << i << ", " << j << ")";
}

// Destination modes and reduced modes of the reductions below, as StaticNestOver takes them.
struct AlongMode1 {
  static constexpr std::array<std::size_t, 1> dst_map{0};
  static constexpr std::array<bool, 2> reduced{false, true};
};
struct AlongMode0 {
  static constexpr std::array<std::size_t, 1> dst_map{1};
  static constexpr std::array<bool, 2> reduced{true, false};
};
struct AlongBoth {
  static constexpr std::array<std::size_t, 0> dst_map{};
  static constexpr std::array<bool, 2> reduced{true, true};
};

TEST(StaticNest, RowAndFullReductionBodiesMatchTheHostExecutor) {
  // x: [6, 20] static, row-major; rows reduced along mode 1 and along mode 0 (strided rows).
  using X = decltype(make_layout(make_shape(Int<6>{}, Int<20>{})));
  auto xh = make_host_tensor<float>(make_shape(Int<6>{}, Int<20>{}));
  fill(xh, 7);
  auto x = make_tensor(xh.data(), X{});
  auto want = make_host_tensor<float>(make_shape(Int<6>{}));
  assign(want, logsumexp(x * 0.5f, mode<1>), exec::Serial{});
  auto wcol = make_host_tensor<float>(make_shape(Int<20>{}));
  assign(wcol, max(x, mode<0>), exec::Serial{});

  using In = std::remove_cvref_t<decltype(as_expr(x) * 0.5f)>;
  using Rows6 = decltype(make_layout(make_shape(Int<6>{})));
  using Cols20 = decltype(make_layout(make_shape(Int<20>{})));
  constexpr std::size_t K = 2 + 1 + 2 + 2;
  using Over1 = lowering::StaticNestOver<2, K, 2, Rows6, In, AlongMode1>;
  using Over0 = lowering::StaticNestOver<2, K, 2, Cols20, TensorLeaf<decltype(x)>, AlongMode0>;
  constexpr auto over1 = Over1::value;
  constexpr auto over0 = Over0::value;
  static_assert(over1.ok && over1.nest.outer == 1 && over1.nest.rank == 2);
  static_assert(over1.nest.extent[0] == 6 && over1.nest.extent[1] == 20);
  static_assert(over0.ok && over0.nest.stride[1][1] == 20);  // a row strides down a column

  // Evaluators with every stride zero: the constants must come from the static nest.
  exec::LeafEval<float, K> leaf{};
  leaf.ptr = xh.data();
  exec::MapEval<ops::Mul, exec::LeafEval<float, K>, exec::ScalarEval<float>> const scaled{
      {}, {leaf, exec::ScalarEval<float>{0.5f}}};
  auto got = make_host_tensor<float>(make_shape(Int<6>{}));
  exec::DstEval<float, K> d{};
  d.ptr = got.data();
  exec::StaticNestIndexer<Over1, std::uint32_t> const rows{};
  for (std::uint32_t r = 0; r < 6; ++r)
    exec::nest_reduce_row_body<true>(SequentialContext{}, exec::LogSumExpOp<float>{}, rows, d,
                                     scaled, r, 20);
  expect_close(got, want, 1e-6);

  auto gcol = make_host_tensor<float>(make_shape(Int<20>{}));
  d.ptr = gcol.data();
  exec::StaticNestIndexer<Over0, std::uint32_t> const cols{};
  for (std::uint32_t r = 0; r < 20; ++r)
    exec::nest_reduce_row_body<true>(SequentialContext{}, exec::MaxOp<float>{}, cols, d, leaf, r,
                                     6);
  expect_close(gcol, wcol, 0.0);

  // Every mode reduced: the full reduction's input iterator.
  using All = lowering::StaticNestOver<2, K, 2, decltype(make_layout(make_shape())), In, AlongBoth>;
  constexpr auto all = All::value;
  static_assert(all.ok && all.nest.rank - all.nest.outer == 1);  // contiguous: one reduced mode
  exec::NestReduceInput<exec::SumOp<float>, std::remove_cvref_t<decltype(scaled)>,
                        exec::StaticNestIndexer<All, std::uint32_t>> const in{{}, scaled, {}};
  exec::SumOp<float> const op{};
  auto s = op.identity();
  for (std::uint32_t f = 0; f < 120; ++f) s = op(s, in(f));
  EXPECT_NEAR(op.finalize(s, 120), item(sum(x * 0.5f)), 1e-4);
}

}  // namespace
}  // namespace tessel
