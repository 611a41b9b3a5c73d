// Flat lowering: the host executor's path for assignments whose layout types already say how the
// pass walks memory, so that the compiler, not the run-time lowering, chooses the loop.
//
//   vector    dst and every tensor operand are (n):(_1), a contiguous vector (the state of a
//             Shampoo batch group, an FLCE row, any make_layout(make_shape(n))): one run of n
//             elements, split over the executor's threads.
//   rows      dst and every tensor operand are (r, n):(s, _1) (any make_layout(make_shape(r, n)))
//             or (n):(_1) read by every row: one run per row; or a reduction over mode 1 of such
//             operands into an (r):(_1) vector.
//
// The general path (host.hpp: bind, refine, coalesce, odometer, alias check) reaches the same
// runs for such operands, through the same run functions (run_elementwise, reduce_run), so both
// paths give the same bits (tests/exec/flat_test.cpp compares them). What the flat path saves is
// compile time: about 0.6 s of -O2 per distinct expression for the general path's loop nest,
// against about 0.1 s here (docs/benchmarks.md, "Compile time"), which is what a program made of
// many small fused stages (an optimizer step) pays per stage.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "../../core/int.hpp"
#include "../../core/layout.hpp"
#include "../../expr/leaf.hpp"
#include "../../expr/map.hpp"
#include "../../expr/reduce.hpp"
#include "../evaluator.hpp"
#include "../executors.hpp"
#include "../lower.hpp"
#include "../route.hpp"
#include "runs.hpp"

namespace tessel::exec::detail {

template <class DV, class Node, class X>
void run_assignment(DV const& dst, Node const& node, X const& executor);

// ---- what the compiler can see ----

// (n):(_1): one mode of static unit stride.
template <class L>
inline constexpr bool unit_vector_layout_v = false;
template <Integer S>
inline constexpr bool unit_vector_layout_v<Layout<tuple<S>, tuple<Int<1>>>> = true;

// (r, n):(s, _1): rows of static unit stride.
template <class L>
inline constexpr bool unit_rows_layout_v = false;
template <Integer R, Integer N, Integer S>
inline constexpr bool unit_rows_layout_v<Layout<tuple<R, N>, tuple<S, Int<1>>>> = true;

template <class V>
using view_layout_t = std::remove_cvref_t<decltype(std::declval<V const&>().layout())>;

// Every tensor leaf of the tree is one of Leaf<layout>; no node is materialized.
template <class N, template <class> class LeafOk>
struct FlatTree : std::false_type {};
template <class V, template <class> class LeafOk>
struct FlatTree<tessel::detail::TensorLeaf<V>, LeafOk>
    : std::bool_constant<LeafOk<view_layout_t<V>>::value> {};
template <class T, template <class> class LeafOk>
struct FlatTree<tessel::detail::ScalarLeaf<T>, LeafOk> : std::true_type {};
template <class Op, class... Cs, template <class> class LeafOk>
struct FlatTree<tessel::detail::Map<Op, Cs...>, LeafOk>
    : std::bool_constant<(FlatTree<Cs, LeafOk>::value && ...)> {};

template <class L>
struct VectorLeaf : std::bool_constant<unit_vector_layout_v<L>> {};
template <class L>
struct RowsLeaf : std::bool_constant<unit_rows_layout_v<L> || unit_vector_layout_v<L>> {};

// Elementwise into a vector from vectors, or into rows from rows and vectors (each row reading the
// vector).
template <class DV, class Node>
inline constexpr bool flat_elementwise_v = (unit_vector_layout_v<view_layout_t<DV>> &&
                                            FlatTree<Node, VectorLeaf>::value) ||
                                           (unit_rows_layout_v<view_layout_t<DV>> &&
                                            FlatTree<Node, RowsLeaf>::value);

// A reduction over every mode of a vector expression into one element, or over mode 1 of rows.
template <class DV, class Node>
constexpr bool flat_reduction() {
  using In = typename Node::input_type;
  using DL = view_layout_t<DV>;
  if constexpr (Node::over_all)
    return In::rank == 1 && FlatTree<In, VectorLeaf>::value &&
           (unit_vector_layout_v<DL> || tessel::detail::tensor_rank<DV>() == 0);
  else
    return In::rank == 2 && Node::axis == 1 && !Node::keeps_mode && FlatTree<In, RowsLeaf>::value &&
           unit_vector_layout_v<DL>;
}

// ---- evaluators ----

// The evaluator of node over one loop mode of `inner` elements, rows `stride[0]` apart: a leaf of
// extent 1 where the pass has more is broadcast (stride 0), as the general path's nest has it.
template <class Node>
auto flat_eval(Node const& node, index_t rows, index_t inner) -> eval_t<Node, 1> {
  if constexpr (is_tensor_leaf<Node>::value) {
    using T = std::remove_cv_t<typename Node::tensor_type::element_type>;
    constexpr std::size_t R = Node::rank;
    auto const& shape = node.shape();
    LeafEval<T, 1> e{};
    e.ptr = node.tensor.data();
    e.inner = shape[R - 1] == 1 && inner != 1 ? 0 : 1;
    if constexpr (R == 2)
      e.stride[0] =
          shape[0] == 1 && rows != 1 ? 0 : to_index(get<0>(node.tensor.layout().stride()));
    return e;
  } else if constexpr (is_scalar_leaf<Node>::value) {
    return ScalarEval<typename Node::value_type>{node.value};
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return eval_t<Node, 1>{node.op, {flat_eval(get<I>(node.children), rows, inner)...}};
    }
    (std::make_index_sequence<tuple_size_v<decltype(node.children)>>{});
  }
}

// True when a leaf of ev overlaps the `span` elements of T at dst (rows dst_row apart) other than
// element for element (the general path's needs_temporary): the pass then writes to a temporary
// first. rows: the leaves' rows (a leaf spans its last row's end).
template <class T, class Ev>
bool flat_overlaps(Ev ev, T const* dst, index_t span, index_t dst_row, index_t rows, index_t inner,
                   bool element_for_element_ok) {
  auto const* d_lo = reinterpret_cast<std::byte const*>(dst);
  auto const* d_hi = d_lo + span * index_t(sizeof(T));
  bool overlap = false;
  ev.visit_leaves([&](auto const& leaf) {
    using E = typename std::remove_cvref_t<decltype(leaf)>::element_type;
    index_t const reach = (rows - 1) * leaf.stride[0] + (leaf.inner == 0 ? 1 : inner);
    auto const* lo = reinterpret_cast<std::byte const*>(leaf.ptr);
    auto const* hi = lo + reach * index_t(sizeof(E));
    if (span == 0 || hi <= d_lo || d_hi <= lo) return;
    bool const same = element_for_element_ok && lo == d_lo && sizeof(E) == sizeof(T) &&
                      leaf.inner == 1 && (rows == 1 || leaf.stride[0] == dst_row);
    overlap = overlap || !same;
  });
  return overlap;
}

// Leaves that the pass broadcasts along its run (a leaf of extent 1 where the run has more)
// repeated into compact copies that `keep` holds, so that every run reads its leaves with unit
// stride: the contiguous loop is the only one the flat path compiles. A copy holds the same
// values the broadcast read, so the run computes the same bits.
template <class Ev>
void densify_broadcasts(Ev& ev, index_t rows, index_t inner,
                        std::vector<std::unique_ptr<std::byte[]>>& keep) {
  ev.visit_leaves([&](auto& leaf) {
    using E = typename std::remove_cvref_t<decltype(leaf)>::element_type;
    if (leaf.inner != 0) return;
    index_t const copies = leaf.stride[0] == 0 ? 1 : rows;
    keep.push_back(
        std::make_unique<std::byte[]>(static_cast<std::size_t>(copies * inner) * sizeof(E)));
    auto* dense = reinterpret_cast<E*>(keep.back().get());
    for (index_t r = 0; r < copies; ++r)
      std::fill_n(dense + r * inner, inner, leaf.ptr[r * leaf.stride[0]]);
    leaf.ptr = dense;
    leaf.inner = 1;
    if (leaf.stride[0] != 0) leaf.stride[0] = inner;
  });
}

// ---- passes ----

// dst = node over a contiguous vector, or over rows of unit stride (run by run, each run within a
// row, the flat range of elements split over the executor's threads as the general path splits
// it). @pre flat_elementwise_v<DV, Node>; node broadcasts to dst
template <class DV, class Node, class X>
void run_flat_elementwise(DV const& dst, Node const& node, X const& executor) {
  using T = std::remove_cv_t<typename DV::element_type>;
  constexpr bool by_rows = tessel::detail::tensor_rank<DV>() == 2;
  auto const shape = tessel::detail::logical_shape(dst);
  index_t const rows = by_rows ? shape[0] : 1, n = shape[by_rows ? 1 : 0], total = rows * n;
  if (total == 0) return;
  index_t dst_row = n;
  if constexpr (by_rows) dst_row = to_index(get<0>(dst.layout().stride()));
  auto ev = flat_eval(node, rows, n);
  bool const overlaps =
      flat_overlaps(ev, dst.data(), (rows - 1) * dst_row + n, dst_row, rows, n, true);
  std::vector<std::unique_ptr<std::byte[]>> keep;
  densify_broadcasts(ev, rows, n, keep);
  int const threads = threads_for(executor, total);
  bool const stream = streams_destination(total * index_t(sizeof(T)));
  auto pass = [&](T* out, index_t out_row) {
    parallel_ranges(threads, total, [&](index_t begin, index_t end) {
      for (index_t i = begin; i < end;) {
        index_t const r = i / n, c = i % n, len = std::min(n - c, end - i);
        auto row = ev;
        row.advance(0, r);
        run_contiguous(DstEval<T, 1>{out + r * out_row, 1, {}}, row, c, c + len, stream);
        i += len;
      }
    });
  };
  if (!overlaps) {
    pass(dst.data(), dst_row);
    return;
  }
  // An operand overlapping dst other than element for element: through a compact temporary.
  auto const tmp = std::make_unique<T[]>(static_cast<std::size_t>(total));
  pass(tmp.get(), n);
  for (index_t r = 0; r < rows; ++r)
    std::copy(tmp.get() + r * n, tmp.get() + (r + 1) * n, dst.data() + r * dst_row);
}

// dst = Kind over node.input, a vector reduced to one element or rows reduced to a vector.
// @pre flat_reduction<DV, Node>(); dst's shape is node's
template <class DV, class Node, class X>
void run_flat_reduction(DV const& dst, Node const& node, X const& executor) {
  using Kind = typename Node::kind;
  using In = typename Node::input_type;
  using Op = reduce_op_t<Kind, typename In::value_type>;
  using T = std::remove_cv_t<typename DV::element_type>;
  if (!prepare_reduction(node, [&](auto const& value) { run_assignment(dst, value, executor); }))
    return;
  auto const shape = node.input.shape();
  Op const op{};
  if constexpr (Node::over_all) {
    index_t const n = shape[0];
    auto ev = flat_eval(node.input, 1, n);
    std::vector<std::unique_ptr<std::byte[]>> keep;
    densify_broadcasts(ev, 1, n, keep);
    index_t const blocks = (n + reduce_block - 1) / reduce_block;
    std::vector<typename Op::state_type> partial(static_cast<std::size_t>(blocks));
    parallel_ranges(threads_for(executor, n), blocks, [&](index_t begin, index_t end) {
      for (index_t k = begin; k < end; ++k)
        partial[static_cast<std::size_t>(k)] = op(
            op.identity(),
            reduce_run_as<true>(op, ev, k * reduce_block, std::min(n, (k + 1) * reduce_block), 0));
    });
    auto state = op.identity();
    for (auto const& p : partial) state = op(state, p);
    *dst.data() = store_element<T>(op.finalize(state, n));
  } else {
    index_t const rows = shape[0], inner = shape[1];
    auto ev = flat_eval(node.input, rows, inner);
    bool const overlaps = flat_overlaps(ev, dst.data(), rows, 1, rows, inner, false);
    std::vector<std::unique_ptr<std::byte[]>> keep;
    densify_broadcasts(ev, rows, inner, keep);
    auto pass = [&](T* out) {
      parallel_ranges(threads_for(executor, rows * inner), rows, [&](index_t begin, index_t end) {
        for (index_t r = begin; r < end; ++r) {
          auto row = ev;
          row.advance(0, r);
          out[r] = store_element<T>(
              op.finalize(op(op.identity(), reduce_run_as<true>(op, row, 0, inner, 0)), inner));
        }
      });
    };
    auto const tmp = std::make_unique<T[]>(static_cast<std::size_t>(overlaps ? rows : 0));
    pass(overlaps ? tmp.get() : dst.data());
    if (overlaps) std::copy(tmp.get(), tmp.get() + rows, dst.data());
  }
}

}  // namespace tessel::exec::detail
