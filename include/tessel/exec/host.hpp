// The host executor: runs `dst = expr` as one pass over the destination.
//
//   1. Validate: the expression's shape broadcasts to dst's (tessel::Error naming both otherwise).
//   2. Bind: every tensor leaf becomes an operand of a loop nest (lower.hpp). A reduction or
//      softmax *inside* a larger expression is evaluated first into a temporary of its own shape
//      (one pass over its input) and read as a leaf; at the root it is the pass itself.
//   3. Lower: refine, order by destination stride, jointly coalesce.
//   4. Alias check: a source overlapping dst other than element for element sends the pass into a
//      compact temporary, copied into dst afterwards.
//   5. Run: the runs of the innermost mode are split over threads (OpenMP) in contiguous ranges;
//      each run goes through the packet path (exec/host/packet.hpp) or the scalar kernel body
//      (exec/body/) with SequentialContext. No division or modulo per element: each thread finds
//      its first coordinate once and then steps an odometer.
//
// Reductions over one mode give each destination element (a row) to one thread; reductions over
// every mode split the input into fixed blocks of 2^15 elements combined in order, so Serial and
// OpenMP give bit-identical results.
#pragma once

#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "../expr/arithmetic.hpp"
#include "../expr/assign.hpp"
#include "../expr/math.hpp"
#include "../expr/reduce.hpp"
#include "../expr/scalar_math.hpp"
#include "../expr/softmax.hpp"
#include "body/context.hpp"
#include "body/elementwise.hpp"
#include "body/reduce_ops.hpp"
#include "body/row.hpp"
#include "executors.hpp"
#include "host/flat.hpp"
#include "host/packet.hpp"
#include "host/runs.hpp"
#include "host/streaming.hpp"
#include "host/wide_exp.hpp"
#include "lower.hpp"
#include "route.hpp"

namespace tessel::exec::detail {

using tessel::detail::view_of;

// Whether the outputs of a reduction are reduced a tile at a time (reduce_tile): when no operand
// reads its reduced run contiguously, every operand reads the innermost kept mode contiguously or
// not at all, as in the per-column sums of a row-major matrix, and reduce_run would take its
// sequential path (no packet form) or assemble its packets lane by lane (an operand of another
// type than the packets', as float read in double). A packet form over leaves of its own type
// keeps reduce_run's gathers, whose order of additions the tiles do not reproduce.
template <class Op, class Nest, class Ev>
bool reduces_in_tiles(Nest const& nest, Ev ev) {
  if constexpr (reduces_in_packets<Op, Ev>() &&
                host::native_leaves_v<Ev, typename Ev::value_type>) {
    return false;
  } else {
    if (nest.outer == 0 || nest.extent[nest.outer - 1] < 2) return false;
    index_t const kept = nest.outer - 1;
    bool strided_runs = true, kept_contiguous = true, reads_kept = false;
    ev.visit_leaves([&](auto const& leaf) {
      strided_runs = strided_runs && leaf.inner != 1;
      kept_contiguous = kept_contiguous && (leaf.stride[kept] == 0 || leaf.stride[kept] == 1);
      reads_kept = reads_kept || leaf.stride[kept] == 1;
    });
    return strided_runs && kept_contiguous && reads_kept;
  }
}

// Outputs per tile of reduce_tile: a 1024-float row is read as one stream at each reduced
// position; tiles of 256 read it in four 1 KB pieces 4 KB apart and took 1.6x the time over
// 1024 x 1024 blocks (tools/bench/host_expr_bench.cpp BM_SquaredNorms).
inline constexpr index_t reduce_tile_width = 1024;

// reduce_tile adds a position's terms for a packet of outputs at once: a sum whose operands have a
// packet form. Each lane then adds its output's terms in order, the scalar loop's bits.
template <class Op, class Ev>
constexpr bool tiles_in_packets() {
  return Op::packet_form == PacketForm::sum && reduces_in_packets<Op, Ev>();
}

// Stores `width` consecutive outputs along the innermost kept mode, starting where row and dd
// stand, each reduced over the flat range [0, inner) of the reduced modes with its terms combined
// exactly as reduce_range combines them (run by run, each run from op's identity): the same bits.
// For each reduced position the tile's elements are read side by side, so a strided reduced mode
// touches each cache line once per tile instead of once per output.
// @pre reduces_in_tiles<Op>(nest, row) and 0 < width <= reduce_tile_width
template <class Nest, class Op, class Ev, class D>
void reduce_tile(Nest const& nest, Op const& op, Ev row, D dd, index_t width, index_t inner) {
  using State = typename Op::state_type;
  index_t const kept = nest.outer - 1;
  alignas(64) std::array<State, reduce_tile_width> state, part;
  std::fill_n(state.begin(), width, op.identity());
  for_each_run(
      nest, nest.outer, 0, inner,
      [&](index_t i0, index_t i1, index_t base) {
        if constexpr (tiles_in_packets<Op, Ev>()) {
          // `across` reads along the kept mode: lane j of a packet at j0 is output j0 + j.
          auto across = row;
          across.visit_leaves([&](auto& leaf) { leaf.inner = leaf.stride[kept]; });
          across.advance(nest.rank - 1, i0);
          host::tile_sums<typename Ev::value_type>(across, nest.rank - 1, i1 - i0, width,
                                                   part.data());
        } else {
          std::fill_n(part.begin(), width, op.identity());
          for (index_t i = i0; i < i1; ++i) {
            auto e = row;
            for (index_t j = 0; j < width; ++j) {
              part[static_cast<std::size_t>(j)] =
                  op.update(part[static_cast<std::size_t>(j)], e(i), base + i);
              e.advance(kept, 1);
            }
          }
        }
        for (index_t j = 0; j < width; ++j)
          state[static_cast<std::size_t>(j)] =
              op(state[static_cast<std::size_t>(j)], part[static_cast<std::size_t>(j)]);
      },
      row);
  for (index_t j = 0; j < width; ++j) {
    dd.store(0, op.finalize(state[static_cast<std::size_t>(j)], inner));
    dd.advance(kept, 1);
  }
}

// ---- drivers ----

template <std::size_t R>
constexpr std::array<std::size_t, R> identity_map() {
  std::array<std::size_t, R> m{};
  for (std::size_t t = 0; t != R; ++t) m[t] = t;
  return m;
}

template <class DV>
void check_destination(DV const&) {
  static_assert(std::is_same_v<typename DV::space, HostSpace>,
                "tessel: the host executor writes host tensors only; this destination is a device "
                "tensor (use the CUDA executor).");
  static_assert(!std::is_const_v<typename DV::element_type>,
                "tessel: cannot assign to a tensor of const elements.");
}

template <class DV>
[[noreturn]] void throw_destination_repeats(DV const& dst) {
  throw_error(sentence("cannot assign to a tensor whose layout ",
                       tessel::detail::shape_text(dst.layout().shape()), ":",
                       tessel::detail::shape_text(dst.layout().stride()),
                       " maps several coordinates to one element."));
}

template <class DV, class Node, class X>
void run_assignment(DV const& dst, Node const& node, X const& executor);

// A reduction or row operation inside a larger expression, evaluated into a temporary.
template <class Node, class X>
auto materialize(Node const& node, X const& executor) {
  auto tmp = make_compact<typename Node::value_type>(node.shape());
  run_assignment(view_of(tmp), node, executor);
  return tmp;
}

template <class DV, class Node, class X>
void run_elementwise_assignment(DV const& dst, Node const& node, X const& executor);
template <class DV, class Node, class X>
void run_reduction(DV const& dst, Node const& node, X const& executor);
template <class DV, class Node, class X>
void run_row_op(DV const& dst, Node const& node, X const& executor);

// The host executor's passes for the shared front end (exec/route.hpp).
template <class X>
struct HostPasses {
  X const& executor;
  template <class DV>
  void check(DV const& dst) const {
    check_destination(dst);
  }
  template <class DV, class Node>
  void elementwise(DV const& dst, Node const& node) const {
    run_elementwise_assignment(dst, node, executor);
  }
  template <class DV, class Node>
  void reduction(DV const& dst, Node const& node) const {
    run_reduction(dst, node, executor);
  }
  template <class DV, class Node>
  void row_op(DV const& dst, Node const& node) const {
    run_row_op(dst, node, executor);
  }
  template <class Node>
  auto materialize(Node const& node) const {
    return exec::detail::materialize(node, executor);
  }
  template <class T, class Shape>
  static auto temporary(Shape const& shape) {
    return make_compact<T>(shape);
  }
  template <class Tmp>
  static auto view(Tmp& tmp) {
    return view_of(tmp);
  }
};

// dst = node through a loop nest lowered at run time.
template <class DV, class Node, class X>
void run_nest_elementwise(DV const& dst, Node const& node, X const& executor) {
  using T = std::remove_cv_t<typename DV::element_type>;
  constexpr std::size_t R = tessel::detail::tensor_rank<DV>();
  auto const shape = tessel::detail::logical_shape(dst);
  index_t const total = tessel::detail::shape_size(shape);
  if (total == 0) return;
  constexpr std::size_t K = R + max_leaves_v<decltype(dst.shape())> + mode_capacity_v<Node> + 2;
  constexpr std::size_t N = 1 + leaf_count_v<Node>;
  Binder<R, K, N> b(shape, {});
  b.set_destination(dst, identity_map<R>());
  auto ev = bind<K>(node, b, [&](auto const& n) { return materialize(n, executor); });
  auto nest = b.lower();
  if (nest.destination_repeats) throw_destination_repeats(dst);
  int const threads = threads_for(executor, total);
  auto pass = [&](T* data) {
    b.apply(nest, ev);
    auto d = b.destination(data, nest);
    bool const contiguous = d.inner == 1 && leaves_contiguous(ev);
    RunStores const stores{contiguous,
                           contiguous && streams_destination(total * index_t(sizeof(T)))};
    parallel_ranges(threads, total, [&](index_t begin, index_t end) {
      elementwise_range(nest, 0, begin, end, d, ev, stores);
    });
  };
  write_through<T>(HostPasses<X>{executor}, b, nest, true, dst, shape, identity_map<R>(), pass);
}

// The input modes a reduction node reduces, and the input mode behind each output mode.
template <class Node>
struct ReductionModes {
  static constexpr std::size_t input_rank = Node::input_type::rank;
  std::array<bool, at_least_one<input_rank>> reduced{};
  std::array<std::size_t, Node::rank> output_to_input{};
};

template <class Node>
constexpr ReductionModes<Node> reduction_modes() {
  ReductionModes<Node> m;
  for (std::size_t k = 0, t = 0; k != m.input_rank; ++k) {
    bool const r = Node::over_all || k == Node::axis;
    m.reduced[k] = r;
    if (!r || Node::keeps_mode) m.output_to_input[t++] = k;
  }
  return m;
}

// dst = Kind over node.input, dst's shape equal to node's.
template <class DV, class Node, class X>
void run_nest_reduction(DV const& dst, Node const& node, X const& executor) {
  using Kind = typename Node::kind;
  using In = typename Node::input_type;
  using Op = reduce_op_t<Kind, typename In::value_type>;
  using T = std::remove_cv_t<typename DV::element_type>;
  constexpr std::size_t R = In::rank;
  if (!prepare_reduction(node, [&](auto const& value) { run_assignment(dst, value, executor); }))
    return;
  auto const shape = node.input.shape();
  index_t const in_size = tessel::detail::shape_size(shape);
  Op const op{};
  constexpr auto modes = reduction_modes<Node>();
  constexpr std::size_t K = R + max_leaves_v<decltype(dst.shape())> + mode_capacity_v<In> + 2;
  constexpr std::size_t N = 1 + leaf_count_v<In>;
  Binder<R, K, N> b(shape, modes.reduced);
  b.set_destination(dst, modes.output_to_input);
  auto ev = bind<K>(node.input, b, [&](auto const& n) { return materialize(n, executor); });
  auto nest = b.lower();
  if (nest.destination_repeats) throw_destination_repeats(dst);
  int const threads = threads_for(executor, in_size);
  auto pass = [&](T* data) {
    b.apply(nest, ev);
    auto d = b.destination(data, nest);
    bool const contiguous = leaves_contiguous(ev);
    index_t const outer = nest.size(0, nest.outer);
    index_t const inner = nest.size(nest.outer, nest.rank);
    if constexpr (Node::over_all) {
      index_t const blocks = (inner + reduce_block - 1) / reduce_block;
      std::vector<typename Op::state_type> partial(static_cast<std::size_t>(blocks));
      parallel_ranges(threads, blocks, [&](index_t begin, index_t end) {
        for (index_t k = begin; k < end; ++k)
          partial[static_cast<std::size_t>(k)] = reduce_range(
              nest, op, ev, k * reduce_block, std::min(inner, (k + 1) * reduce_block), contiguous);
      });
      auto state = op.identity();
      for (auto const& p : partial) state = op(state, p);
      d.store(0, op.finalize(state, inner));
    } else {
      bool const tiles = reduces_in_tiles<Op>(nest, ev);
      parallel_ranges(threads, outer, [&](index_t begin, index_t end) {
        index_t coord[K] = {};
        auto dd = d;
        auto row = ev;
        seek(nest, 0, nest.outer, begin, coord, dd, row);
        for (index_t r = begin; r < end;) {
          index_t done = 1;
          if (tiles) {
            index_t const kept = nest.outer - 1;
            done = std::min({reduce_tile_width, end - r, nest.extent[kept] - coord[kept]});
            reduce_tile(nest, op, row, dd, done, inner);
          } else {
            dd.store(0, op.finalize(reduce_range(nest, op, row, 0, inner, contiguous), inner));
          }
          r += done;
          for (index_t k = 0; k < done && r < end; ++k) step(nest, 0, nest.outer, coord, dd, row);
        }
      });
    }
  };
  write_through<T>(HostPasses<X>{executor}, b, nest, false, dst, node.shape(),
                   modes.output_to_input, pass);
}

// An elementwise assignment or a reduction: the flat path when the layout types show one
// (exec/host/flat.hpp), else a loop nest lowered at run time.
template <class DV, class Node, class X>
void run_elementwise_assignment(DV const& dst, Node const& node, X const& executor) {
  if constexpr (flat_elementwise_v<DV, Node>)
    run_flat_elementwise(dst, node, executor);
  else
    run_nest_elementwise(dst, node, executor);
}
template <class DV, class Node, class X>
void run_reduction(DV const& dst, Node const& node, X const& executor) {
  if constexpr (flat_reduction<DV, Node>())
    run_flat_reduction(dst, node, executor);
  else
    run_nest_reduction(dst, node, executor);
}

// dst = softmax / log_softmax of node.input along node.axis, dst's shape equal to node's.
template <class DV, class Node, class X>
void run_row_op(DV const& dst, Node const& node, X const& executor) {
  using In = typename Node::input_type;
  using V = typename Node::value_type;
  using Op = LogSumExpOp<V>;
  using T = std::remove_cv_t<typename DV::element_type>;
  constexpr std::size_t R = In::rank;
  auto const shape = node.input.shape();
  index_t const total = tessel::detail::shape_size(shape);
  if (total == 0) return;
  std::array<bool, at_least_one<R>> reduced{};
  reduced[Node::axis] = true;
  constexpr std::size_t K = R + max_leaves_v<decltype(dst.shape())> + mode_capacity_v<In> + 2;
  constexpr std::size_t N = 1 + leaf_count_v<In>;
  Binder<R, K, N> b(shape, reduced);
  b.set_destination(dst, identity_map<R>());
  auto ev = bind<K>(node.input, b, [&](auto const& n) { return materialize(n, executor); });
  auto nest = b.lower();
  if (nest.destination_repeats) throw_destination_repeats(dst);
  int const threads = threads_for(executor, total);
  Op const op{};
  // Softmax into a destination of the compute type: one exp per element, the destination row
  // holding exp(x - max) until it is scaled. log_softmax, and a narrower destination (whose
  // rounded exponentials would be summed and rounded again), take the two passes of the online
  // logsumexp: exp(x - lse) is computed on the second.
  constexpr bool one_exp = !Node::kind::log && std::is_same_v<T, V>;
  auto pass = [&](T* data) {
    b.apply(nest, ev);
    auto d = b.destination(data, nest);
    bool const contiguous = leaves_contiguous(ev);
    bool const write_contiguous = contiguous && d.inner == 1;
    // A row written once, by its last pass, may stream; the one-exp path reads its row back.
    RunStores const last_pass{write_contiguous,
                              write_contiguous && streams_destination(total * index_t(sizeof(T)))};
    index_t const outer = nest.size(0, nest.outer);
    index_t const inner = nest.size(nest.outer, nest.rank);
    parallel_ranges(threads, outer, [&](index_t begin, index_t end) {
      index_t coord[K] = {};
      auto dd = d;
      auto row = ev;
      seek(nest, 0, nest.outer, begin, coord, dd, row);
      for (index_t r = begin; r < end; ++r) {
        if constexpr (one_exp) {
          // max, then e = exp(x - max) written to the row, then its sum, then e * (1 / sum):
          // one exp per element (the exp is what a host row costs; the row is still in cache).
          V const m = reduce_range(nest, MaxOp<V>{}, row, 0, inner, contiguous);
          auto shifted =
              MapEval<ops::Sub, decltype(row), ScalarEval<V>>{{}, {row, ScalarEval<V>{m}}};
          elementwise_range(nest, nest.outer, 0, inner, dd,
                            MapEval<ops::Exp, decltype(shifted)>{{}, {shifted}},
                            RunStores{write_contiguous});
          LeafEval<T, K> written{dd.ptr, dd.inner, {}};
          for (std::size_t k = 0; k != K; ++k) written.stride[k] = dd.stride[k];
          V const total = reduce_range(nest, SumOp<V>{}, written, 0, inner, dd.inner == 1);
          elementwise_range(nest, nest.outer, 0, inner, dd,
                            MapEval<ops::Mul, LeafEval<T, K>, ScalarEval<V>>{
                                {}, {written, ScalarEval<V>{V(1) / total}}},
                            RunStores{dd.inner == 1});
        } else {
          V const lse =
              softmax_shift(op.finalize(reduce_range(nest, op, row, 0, inner, contiguous), inner));
          // The second pass is the elementwise expression exp(x - lse) (or x - lse) over the row.
          auto shifted =
              MapEval<ops::Sub, decltype(row), ScalarEval<V>>{{}, {row, ScalarEval<V>{lse}}};
          if constexpr (!Node::kind::log) {
            auto out = MapEval<ops::Exp, decltype(shifted)>{{}, {shifted}};
            elementwise_range(nest, nest.outer, 0, inner, dd, out, last_pass);
          } else {
            elementwise_range(nest, nest.outer, 0, inner, dd, shifted, last_pass);
          }
        }
        if (r + 1 < end) step(nest, 0, nest.outer, coord, dd, row);
      }
    });
  };
  write_through<T>(HostPasses<X>{executor}, b, nest, true, dst, shape, identity_map<R>(), pass);
}

// dst = node (node broadcast to dst's shape). Validates before anything is written.
template <class DV, class Node, class X>
void run_assignment(DV const& dst, Node const& node, X const& executor) {
  route_assignment(HostPasses<X>{executor}, dst, node);
}

}  // namespace tessel::exec::detail

namespace tessel::exec {

// What exp_shifted_in_place leaves: the row's maximum m and sum_j exp(x_j - m); the row's
// logsumexp is max + log(sum), its softmax x_j / sum.
template <class S>
struct ShiftedExp {
  S max;
  S sum;
};

// x_j <- exp(x_j - m) over a contiguous row of n > 0 elements, m = max_j x_j: the unnormalized
// softmax in one exp per element (the host's vector path where S has one; for float, the CPU's
// widest vectors where they are wider than this build's packets), the passes the host's one-exp
// softmax makes. A row whose maximum is not finite (a +inf or a NaN in it, or all -inf),
// where exp(x_j - m) is not the softmax's numerator, is left unwritten: sum is then NaN.
// n is an index_t or an Int<N> (a static row length, e.g. FLCE's V, passed down as one).
template <class S, Integer N>
ShiftedExp<S> exp_shifted_in_place(S* x, N n) {
  LeafEval<S, 1> const row{x, 1, {}};
  S const m = detail::reduce_run(MaxOp<S>{}, row, 0, n, 0, true);
  if (!math::isfinite(m)) return {m, std::numeric_limits<S>::quiet_NaN()};
#if TESSEL_BLAS
  // The CPU's widest vectors where this build's packets are narrower (exec/host/wide_exp.hpp).
  if constexpr (std::is_same_v<S, float> && detail::wide_exp_may_help) {
    if (S sum; detail::wide_exp_shifted(x, n, m, sum)) return {m, sum};
  }
#endif
  DstEval<S, 1> const out{x, 1, {}};
  using Shifted = MapEval<ops::Sub, LeafEval<S, 1>, ScalarEval<S>>;
  detail::run_elementwise(out,
                          MapEval<ops::Exp, Shifted>{{}, {Shifted{{}, {row, ScalarEval<S>{m}}}}}, 0,
                          n, {.contiguous = true});
  return {m, detail::reduce_run(SumOp<S>{}, row, 0, n, 0, true)};
}

// x_j <- x_j * factor over a contiguous row of n elements.
template <class S, Integer N>
void scale_in_place(S* x, N n, S factor) {
  LeafEval<S, 1> const row{x, 1, {}};
  detail::run_elementwise(
      DstEval<S, 1>{x, 1, {}},
      MapEval<ops::Mul, LeafEval<S, 1>, ScalarEval<S>>{{}, {row, ScalarEval<S>{factor}}}, 0, n,
      {.contiguous = true});
}

}  // namespace tessel::exec

namespace tessel {

namespace detail {

// The default executor for `dst = src` (see expr/assign.hpp).
template <class E, class L, Expression S>
void execute_default(Tensor<E, L>& dst, S const& src) {
  exec::detail::run_assignment(view_of(dst), src, exec::Auto{});
}

}  // namespace detail

// dst = src with an explicit executor: exec::Serial{}, exec::OpenMP{.threads = 2}, exec::Auto{}.
// dst may be a view temporary (assign(t(_, 0), x, exec::Serial{})).
template <class D, Operand Src, exec::HostExecutor X>
requires TensorType<D>
void assign(D&& dst, Src const& src, X const& executor) {
  exec::detail::run_assignment(detail::view_of(dst), as_expr(src), executor);
}

// The single element of an expression (a full reduction, or any expression of size 1).
template <ArrayOperand Src>
auto item(Src const& src) {
  auto e = as_expr(src);
  index_t const n = detail::shape_size(e.shape());
  check(n == 1, "item() needs an expression with one element, not one of shape ",
        tessel::detail::shape_text(e.shape()), ".");
  auto tmp = exec::detail::make_compact<typename decltype(e)::value_type>(e.shape());
  auto v = detail::view_of(tmp);
  exec::detail::run_assignment(v, e, exec::Auto{});
  return v[0];
}

}  // namespace tessel
