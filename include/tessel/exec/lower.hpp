// Lowering one assignment to a loop nest. Every operand (the destination first, then each tensor
// leaf of the expression, broadcast to the iteration shape) is described by the extents and
// strides of the leaves of each of its modes. The modes are refined to a common factorization
// (hierarchical modes of different operands must line up; a leaf that cannot is first copied into
// a compact temporary), the destination's modes are ordered by decreasing stride, and adjacent
// modes are merged where every operand allows it (joint coalescing). The result is a short list
// of loop modes, each with one stride per operand, whose innermost mode is the vector run.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../expr/map.hpp"
#include "../expr/reduce.hpp"
#include "../expr/softmax.hpp"
#include "../tensor/host_tensor.hpp"
#include "evaluator.hpp"

namespace tessel::exec::detail {

using tessel::detail::sentence;
using tessel::detail::throw_error;

// ---- node kinds ----

template <class N>
struct is_tensor_leaf : std::false_type {};
template <class V>
struct is_tensor_leaf<tessel::detail::TensorLeaf<V>> : std::true_type {};
template <class N>
struct is_scalar_leaf : std::false_type {};
template <class T>
struct is_scalar_leaf<tessel::detail::ScalarLeaf<T>> : std::true_type {};
template <class N>
struct is_map : std::false_type {};
template <class Op, class... Cs>
struct is_map<tessel::detail::Map<Op, Cs...>> : std::true_type {};
template <class N>
struct is_reduce : std::false_type {};
template <class Kind, class E, std::size_t A, bool Keep>
struct is_reduce<tessel::detail::Reduce<Kind, E, A, Keep>> : std::true_type {};
template <class N>
struct is_row_op : std::false_type {};
template <class Kind, class E, std::size_t A>
struct is_row_op<tessel::detail::RowOp<Kind, E, A>> : std::true_type {};

// Nodes evaluated into a temporary before the pass when they appear inside a larger expression.
template <class N>
inline constexpr bool materialized_v = is_reduce<N>::value || is_row_op<N>::value;

// ---- static facts about an expression tree ----

template <class N>
struct TreeFacts;

template <class V>
struct TreeFacts<tessel::detail::TensorLeaf<V>> {
  static constexpr std::size_t leaves = 1;
  static constexpr std::size_t modes =
      max_leaves_v<decltype(std::declval<typename V::layout_type const&>().shape())>;
};
template <class T>
struct TreeFacts<tessel::detail::ScalarLeaf<T>> {
  static constexpr std::size_t leaves = 0;
  static constexpr std::size_t modes = 0;
};
template <class Op, class... Cs>
struct TreeFacts<tessel::detail::Map<Op, Cs...>> {
  static constexpr std::size_t leaves = (std::size_t{0} + ... + TreeFacts<Cs>::leaves);
  static constexpr std::size_t modes = (std::size_t{0} + ... + TreeFacts<Cs>::modes);
};
template <class N>
requires materialized_v<N>
struct TreeFacts<N> {
  static constexpr std::size_t leaves = 1;
  static constexpr std::size_t modes = N::rank;
};

// Tensor operands in the tree (each becomes one operand of the loop nest).
template <class N>
inline constexpr std::size_t leaf_count_v = TreeFacts<N>::leaves;

// Leaves of all operand layouts in the tree: bounds the number of refined modes.
template <class N>
inline constexpr std::size_t mode_capacity_v = TreeFacts<N>::modes;

// The evaluator type of node N over a loop nest of at most K modes.
template <class N, std::size_t K>
struct EvalOf;
template <class V, std::size_t K>
struct EvalOf<tessel::detail::TensorLeaf<V>, K> {
  using type = LeafEval<std::remove_cv_t<typename V::element_type>, K>;
};
template <class T, std::size_t K>
struct EvalOf<tessel::detail::ScalarLeaf<T>, K> {
  using type = ScalarEval<T>;
};
template <class Op, class... Cs, std::size_t K>
struct EvalOf<tessel::detail::Map<Op, Cs...>, K> {
  using type = MapEval<Op, typename EvalOf<Cs, K>::type...>;
};
template <class N, std::size_t K>
requires materialized_v<N>
struct EvalOf<N, K> {
  using type = LeafEval<typename N::value_type, K>;
};

template <class N, std::size_t K>
using eval_t = typename EvalOf<N, K>::type;

// ---- operand descriptions ----

template <std::size_t R>
inline constexpr std::size_t at_least_one = R == 0 ? 1 : R;

// One operand of the loop nest: for each iteration mode k, the leaves [first[k], first[k] +
// count[k]) of its layout along that mode, outer to inner (extent-1 leaves dropped). count 0
// means the operand is broadcast along mode k (or the mode has extent 1).
template <std::size_t R, std::size_t K>
struct OperandDesc {
  std::byte const* data = nullptr;
  std::size_t element_size = 0;
  index_t span = 0;          // elements from data the layout reaches (its cosize)
  bool user_memory = false;  // memory the user owns (checked for aliasing); false: a temporary
  index_t first[at_least_one<R>] = {};
  index_t count[at_least_one<R>] = {};
  index_t extent[K] = {};
  index_t stride[K] = {};
  index_t leaves = 0;
};

template <class S>
constexpr auto as_mode_tuple(S const& s) {
  if constexpr (Integer<S>) {
    return make_tuple(s);
  } else {
    return s;
  }
}

// Fills d's modes from layout l, whose mode t lies along iteration mode map[t]; a mode of extent 1
// where the iteration extent is not 1 is broadcast. Constant-evaluable: lower_static runs it on
// the value-initialized layout of a static layout type.
// @pre every mode's size is 1 or the iteration extent of the mode it maps to
template <std::size_t R, std::size_t K, LayoutType L, std::size_t RV>
constexpr void describe_layout(OperandDesc<R, K>& d, L const& l,
                               std::array<std::size_t, RV> const& map, ExprShape<R> const& shape) {
  if constexpr (RV > 0) {
    auto const s = as_mode_tuple(l.shape());
    auto const st = as_mode_tuple(l.stride());
    for_each_indexed(s, [&](auto t, auto const& mode_shape) {
      std::size_t const k = map[decltype(t)::value];
      auto const& mode_stride = get<decltype(t)::value>(st);
      d.first[k] = d.leaves;
      if (to_index(size(mode_shape)) != shape[k] || shape[k] == 1) return;  // broadcast
      auto const e = leaf_values(mode_shape);
      auto const str = leaf_values(mode_stride);
      for (index_t l = 0; l < e.rank(); ++l) {
        if (e[l] == 1) continue;
        d.extent[d.leaves] = e[l];
        d.stride[d.leaves] = str[l];
        ++d.leaves;
      }
      d.count[k] = d.leaves - d.first[k];
    });
  }
}

// Describes tensor v whose mode t lies along iteration mode map[t] (see describe_layout).
template <std::size_t R, std::size_t K, TensorType V, std::size_t RV>
OperandDesc<R, K> describe(V const& v, std::array<std::size_t, RV> const& map,
                           ExprShape<R> const& shape, bool user_memory) {
  OperandDesc<R, K> d{};
  d.data = reinterpret_cast<std::byte const*>(v.data());
  d.element_size = sizeof(typename V::element_type);
  d.span = to_index(cosize(v.layout()));
  d.user_memory = user_memory;
  describe_layout(d, v.layout(), map, shape);
  return d;
}

// Tensor mode t of a rank-RV operand lies along iteration mode t + R - RV (NumPy alignment).
template <std::size_t RV, std::size_t R>
constexpr std::array<std::size_t, RV> trailing_map() {
  static_assert(RV <= R, "tessel: internal: an operand has more modes than the iteration.");
  std::array<std::size_t, RV> m{};
  for (std::size_t t = 0; t != RV; ++t) m[t] = t + R - RV;
  return m;
}

// ---- common refinement of hierarchical modes ----

// For each iteration mode, the inner products (products of the innermost leaf extents) at which
// some operand's leaves split it, strictly between 1 and the extent, ascending.
template <std::size_t R, std::size_t K>
struct Boundaries {
  index_t value[at_least_one<R>][K] = {};
  index_t count[at_least_one<R>] = {};
};

// Adds d's split points to b if every mode's split points still form a divisibility chain (then
// all operands can be iterated by one loop nest); returns false and leaves b unchanged otherwise.
template <std::size_t R, std::size_t K>
constexpr bool merge_boundaries(Boundaries<R, K>& b, OperandDesc<R, K> const& d,
                                ExprShape<R> const& shape) {
  Boundaries<R, K> out = b;
  for (std::size_t k = 0; k != R; ++k) {
    if (d.count[k] < 2 || shape[k] == 0) continue;
    index_t p = 1;
    for (index_t l = d.first[k] + d.count[k] - 1; l > d.first[k]; --l) {
      p *= d.extent[l];
      // Insert p into the ascending list (no duplicates).
      index_t n = out.count[k];
      index_t pos = 0;
      while (pos < n && out.value[k][pos] < p) ++pos;
      if (pos < n && out.value[k][pos] == p) continue;
      if (n >= static_cast<index_t>(K)) return false;  // cannot happen: K bounds all leaves
      for (index_t q = n; q > pos; --q) out.value[k][q] = out.value[k][q - 1];
      out.value[k][pos] = p;
      ++out.count[k];
    }
    index_t prev = 1;
    for (index_t q = 0; q < out.count[k]; ++q) {
      if (out.value[k][q] % prev != 0) return false;
      prev = out.value[k][q];
    }
    if (shape[k] % prev != 0) return false;
  }
  b = out;
  return true;
}

// ---- the loop nest ----

// Loop modes, outer to inner: [0, outer) run over the destination's elements, [outer, rank) are
// reduced (none for an elementwise assignment). stride[j][m] is operand j's stride along mode m
// (operand 0 is the destination).
template <std::size_t K, std::size_t N>
struct LoopNest {
  index_t rank = 0;
  index_t outer = 0;
  index_t extent[K] = {};
  index_t stride[N][K] = {};
  index_t operands = 0;
  // The destination maps two coordinates of a kept mode to one element (a stride-0 mode).
  bool destination_repeats = false;

  constexpr index_t size(index_t from, index_t to) const {
    index_t n = 1;
    for (index_t m = from; m < to; ++m) n *= extent[m];
    return n;
  }
};

// Operand d's stride at inner product q of iteration mode k (q a split point of the refinement).
template <std::size_t R, std::size_t K>
constexpr index_t refined_stride(OperandDesc<R, K> const& d, std::size_t k, index_t q) {
  index_t p = 1;
  for (index_t l = d.first[k] + d.count[k] - 1; l >= d.first[k]; --l) {
    if (q < p * d.extent[l]) return d.stride[l] * (q / p);
    p *= d.extent[l];
  }
  return 0;  // count 0: broadcast
}

// @pre every iteration extent > 0; ops[0] is the destination; boundaries hold every operand's
//      split points
// @post for every iteration coordinate, each operand's offset is the sum over loop modes of
//       coordinate * stride, with the loop coordinates taken in the order described above
template <std::size_t R, std::size_t K, std::size_t N>
constexpr LoopNest<K, N> make_loop_nest(OperandDesc<R, K> const* ops, index_t n_ops,
                                        Boundaries<R, K> const& bounds, ExprShape<R> const& shape,
                                        std::array<bool, at_least_one<R>> const& reduced) {
  LoopNest<K, N> nest{};
  nest.operands = n_ops;
  // Refined modes in iteration order, each tagged reduced or not.
  index_t ext[K] = {};
  bool red[K] = {};
  index_t str[N][K] = {};
  index_t n = 0;
  for (std::size_t k = 0; k != R; ++k) {
    index_t splits[K + 1] = {};
    index_t ns = 0;
    splits[ns++] = 1;
    for (index_t q = 0; q < bounds.count[k]; ++q) splits[ns++] = bounds.value[k][q];
    splits[ns++] = shape[k];
    for (index_t t = ns - 2; t >= 0; --t) {
      index_t e = splits[t + 1] / splits[t];
      if (e == 1) continue;
      ext[n] = e;
      red[n] = reduced[k];
      for (index_t j = 0; j < n_ops; ++j) str[j][n] = refined_stride(ops[j], k, splits[t]);
      ++n;
    }
  }
  // Kept modes first, by decreasing destination stride (stable), then reduced modes in order.
  index_t order[K] = {};
  index_t no = 0;
  for (index_t m = 0; m < n; ++m)
    if (!red[m]) {
      index_t pos = no;
      while (pos > 0 && str[0][order[pos - 1]] < str[0][m]) {
        order[pos] = order[pos - 1];
        --pos;
      }
      order[pos] = m;
      ++no;
    }
  index_t const kept = no;
  for (index_t m = 0; m < n; ++m)
    if (red[m]) order[no++] = m;
  // Joint coalescing within each group: outer mode a absorbs inner mode b when every operand's
  // stride satisfies stride_a == extent_b * stride_b.
  auto emit_group = [&](index_t from, index_t to) {
    index_t const start = nest.rank;
    for (index_t q = from; q < to; ++q) {
      index_t m = order[q];
      if (nest.rank > start) {
        index_t last = nest.rank - 1;
        bool merge = true;
        for (index_t j = 0; j < n_ops && merge; ++j)
          merge = nest.stride[j][last] == ext[m] * str[j][m];
        if (merge) {
          nest.extent[last] *= ext[m];
          for (index_t j = 0; j < n_ops; ++j) nest.stride[j][last] = str[j][m];
          continue;
        }
      }
      nest.extent[nest.rank] = ext[m];
      for (index_t j = 0; j < n_ops; ++j) nest.stride[j][nest.rank] = str[j][m];
      ++nest.rank;
    }
    if (nest.rank == start) {  // an empty group iterates once
      nest.extent[nest.rank] = 1;
      ++nest.rank;
    }
  };
  emit_group(0, kept);
  nest.outer = nest.rank;
  bool any_reduced = false;
  for (std::size_t k = 0; k != R; ++k) any_reduced = any_reduced || reduced[k];
  if (any_reduced) emit_group(kept, no);
  for (index_t m = 0; m < nest.outer; ++m)
    if (nest.extent[m] > 1 && nest.stride[0][m] == 0) nest.destination_repeats = true;
  return nest;
}

// ---- lowering from types ----

// True when layout type L has static extents and strides (then its value carries no data).
template <class L>
inline constexpr bool static_layout_v =
    is_static_v<typename L::shape_type>&& is_static_v<typename L::stride_type>;

// True when every tensor leaf of expression N has a static layout and N evaluates nothing into a
// temporary: its loop nest is then a function of types alone.
template <class N>
struct StaticTree : std::false_type {};
template <class V>
struct StaticTree<tessel::detail::TensorLeaf<V>>
    : std::bool_constant<static_layout_v<typename V::layout_type>> {};
template <class T>
struct StaticTree<tessel::detail::ScalarLeaf<T>> : std::true_type {};
template <class Op, class... Cs>
struct StaticTree<tessel::detail::Map<Op, Cs...>>
    : std::bool_constant<(StaticTree<Cs>::value && ...)> {};

// The extents of the R modes of static layout type L (R >= its rank: leading modes 1, as in
// NumPy alignment).
template <std::size_t R, class L>
constexpr ExprShape<R> static_extents() {
  ExprShape<R> out{};
  for (auto& e : out) e = 1;
  auto const s = as_mode_tuple(L{}.shape());
  constexpr std::size_t RV = tuple_size_v<std::remove_cvref_t<decltype(s)>>;
  static_assert(RV <= R, "tessel: internal: an operand has more modes than the iteration.");
  for_each_indexed(
      s, [&](auto t, auto const& m) { out[decltype(t)::value + R - RV] = to_index(size(m)); });
  return out;
}

// The iteration shape of static expression N over R modes: per mode, the largest extent of its
// leaves (they broadcast to it; run-time validation has rejected anything else).
template <std::size_t R, class N>
struct StaticTreeShape {
  static constexpr ExprShape<R> value() {
    ExprShape<R> out{};
    for (auto& e : out) e = 1;
    return out;
  }
};
template <std::size_t R, class V>
struct StaticTreeShape<R, tessel::detail::TensorLeaf<V>> {
  static constexpr ExprShape<R> value() { return static_extents<R, typename V::layout_type>(); }
};
template <std::size_t R, class Op, class... Cs>
struct StaticTreeShape<R, tessel::detail::Map<Op, Cs...>> {
  static constexpr ExprShape<R> value() {
    ExprShape<R> out{};
    for (auto& e : out) e = 1;
    (merge(out, StaticTreeShape<R, Cs>::value()), ...);
    return out;
  }
  static constexpr void merge(ExprShape<R>& out, ExprShape<R> const& c) {
    for (std::size_t k = 0; k != R; ++k)
      if (c[k] != 1) out[k] = c[k];
  }
};

// Appends the operand of every tensor leaf of N (binding order: left to right) to ops, merging
// their split points into b; ok becomes false when a leaf would need a compact copy.
template <std::size_t R, std::size_t K, class N>
struct StaticLeaves {
  static constexpr void add(OperandDesc<R, K>*, index_t&, Boundaries<R, K>&, ExprShape<R> const&,
                            bool&) {}
};
template <std::size_t R, std::size_t K, class V>
struct StaticLeaves<R, K, tessel::detail::TensorLeaf<V>> {
  static constexpr void add(OperandDesc<R, K>* ops, index_t& count, Boundaries<R, K>& b,
                            ExprShape<R> const& shape, bool& ok) {
    using L = typename V::layout_type;
    OperandDesc<R, K> d{};
    describe_layout(d, L{}, trailing_map<tessel::detail::tensor_rank<V>(), R>(), shape);
    ok = ok && merge_boundaries(b, d, shape);
    ops[count++] = d;
  }
};
template <std::size_t R, std::size_t K, class Op, class... Cs>
struct StaticLeaves<R, K, tessel::detail::Map<Op, Cs...>> {
  static constexpr void add(OperandDesc<R, K>* ops, index_t& count, Boundaries<R, K>& b,
                            ExprShape<R> const& shape, bool& ok) {
    (StaticLeaves<R, K, Cs>::add(ops, count, b, shape, ok), ...);
  }
};

// A loop nest computed at compile time; ok false when the assignment's layouts are not all
// static (or a leaf needs a copy, or the nest is degenerate): then the executor lowers at run time.
template <std::size_t K, std::size_t N>
struct StaticLowering {
  bool ok = false;
  LoopNest<K, N> nest{};
};

// The loop nest the Binder would produce for destination layout type DL (mode t along iteration
// mode dst_map[t]) and expression type Node over iteration shape `shape` — by the same functions,
// evaluated by the compiler. Kernels take it as a template argument (StaticNestIndexer).
template <std::size_t R, std::size_t K, std::size_t N, class DL, class Node, std::size_t RD>
constexpr StaticLowering<K, N> lower_static(ExprShape<R> const& shape,
                                            std::array<std::size_t, RD> const& dst_map,
                                            std::array<bool, at_least_one<R>> const& reduced) {
  StaticLowering<K, N> out{};
  if constexpr (static_layout_v<DL> && StaticTree<Node>::value) {
    for (std::size_t k = 0; k != R; ++k)
      if (shape[k] == 0) return out;  // empty: nothing is launched
    OperandDesc<R, K> ops[N] = {};
    Boundaries<R, K> b{};
    describe_layout(ops[0], DL{}, dst_map, shape);
    bool ok = merge_boundaries(b, ops[0], shape);
    index_t count = 1;
    StaticLeaves<R, K, Node>::add(ops, count, b, shape, ok);
    if (!ok || count != static_cast<index_t>(N)) return out;
    out.nest = make_loop_nest<R, K, N>(ops, count, b, shape, reduced);
    out.ok = !out.nest.destination_repeats;
  }
  return out;
}

// The compile-time nest of an elementwise assignment to a destination of static layout type DL and
// rank R (its shape is the iteration shape).
template <std::size_t R, std::size_t K, std::size_t N, class DL, class Node>
constexpr StaticLowering<K, N> lower_static_elementwise() {
  if constexpr (static_layout_v<DL> && StaticTree<Node>::value) {
    std::array<std::size_t, R> map{};
    for (std::size_t t = 0; t != R; ++t) map[t] = t;
    return lower_static<R, K, N, DL, Node>(static_extents<R, DL>(), map, {});
  } else {
    return {};
  }
}

// The compile-time nest of a reduction or row operation over input expression In (its shape is
// the iteration shape); the destination's mode t lies along iteration mode dst_map[t].
template <std::size_t R, std::size_t K, std::size_t N, class DL, class In, std::size_t RD>
constexpr StaticLowering<K, N> lower_static_over(std::array<std::size_t, RD> const& dst_map,
                                                 std::array<bool, at_least_one<R>> const& reduced) {
  if constexpr (static_layout_v<DL> && StaticTree<In>::value)
    return lower_static<R, K, N, DL, In>(StaticTreeShape<R, In>::value(), dst_map, reduced);
  else
    return {};
}

// Compile-time nests as types (Of::value, a StaticLowering), what StaticNestIndexer takes.
// Elementwise: dst = Node, iteration shape the destination's.
template <std::size_t R, std::size_t K, std::size_t N, class DL, class Node>
struct StaticElementwiseNest {
  static constexpr StaticLowering<K, N> value = lower_static_elementwise<R, K, N, DL, Node>();
};
// Over input In, Modes naming dst_map and reduced (static constexpr arrays).
template <std::size_t R, std::size_t K, std::size_t N, class DL, class In, class Modes>
struct StaticNestOver {
  static constexpr StaticLowering<K, N> value =
      lower_static_over<R, K, N, DL, In>(Modes::dst_map, Modes::reduced);
};

// True when a and b iterate the same modes with the same strides for every operand (the check
// that a compile-time nest is the one the run-time lowering produced).
template <std::size_t KA, std::size_t KB, std::size_t N>
constexpr bool same_nest(LoopNest<KA, N> const& a, LoopNest<KB, N> const& b) {
  if (a.rank != b.rank || a.outer != b.outer || a.operands != b.operands) return false;
  for (index_t m = 0; m < a.rank; ++m) {
    if (a.extent[m] != b.extent[m]) return false;
    for (index_t j = 0; j < a.operands; ++j)
      if (a.stride[j][m] != b.stride[j][m]) return false;
  }
  return true;
}

// ---- aliasing ----

// True when some operand in user memory overlaps the destination other than element for element
// (same address, element size and stride along every loop mode), so the pass must write to a
// temporary first. Overlap is judged by address ranges: interleaved but disjoint operands (e.g.
// two column ranges of one matrix) also take the temporary.
template <std::size_t R, std::size_t K, std::size_t N>
bool needs_temporary(OperandDesc<R, K> const* ops, LoopNest<K, N> const& nest,
                     bool element_for_element_ok) {
  OperandDesc<R, K> const& dst = ops[0];
  std::byte const* d_lo = dst.data;
  std::byte const* d_hi = dst.data + dst.span * static_cast<index_t>(dst.element_size);
  if (dst.span == 0) return false;
  for (index_t j = 1; j < nest.operands; ++j) {
    OperandDesc<R, K> const& s = ops[j];
    if (!s.user_memory || s.span == 0) continue;
    std::byte const* lo = s.data;
    std::byte const* hi = s.data + s.span * static_cast<index_t>(s.element_size);
    if (hi <= d_lo || d_hi <= lo) continue;
    bool same = element_for_element_ok && s.data == dst.data && s.element_size == dst.element_size;
    for (index_t m = 0; m < nest.rank && same; ++m)
      same = nest.extent[m] == 1 || nest.stride[j][m] == nest.stride[0][m];
    if (!same) return true;
  }
  return false;
}

// ---- temporaries ----

template <std::size_t R>
auto shape_tuple(ExprShape<R> const& s) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_shape(s[I]...);
  }
  (std::make_index_sequence<R>{});
}

// A zero-filled compact host tensor of the given shape.
template <class T, std::size_t R>
auto make_compact(ExprShape<R> const& s) {
  return make_host_tensor<T>(shape_tuple(s));
}

// ---- binding an expression to a loop nest ----

// A temporary that is not a tensor engine of its own (e.g. stream-ordered device memory): a view
// and what keeps its memory alive.
template <TensorType V>
struct OwnedView {
  V view;
  std::shared_ptr<void> keep;
};

template <class T>
struct is_owned_view : std::false_type {};
template <class V>
struct is_owned_view<OwnedView<V>> : std::true_type {};

// Collects the operands of one assignment (destination first), keeps the temporaries alive, and
// positions the evaluators once the loop nest is known.
// R: iteration rank, K: loop-mode capacity, N: operand capacity, Space: where the executor runs
// (its operands must live there).
template <std::size_t R, std::size_t K, std::size_t N, class Space = HostSpace>
class Binder {
 public:
  using Reduced = std::array<bool, at_least_one<R>>;
  using space = Space;

  Binder(ExprShape<R> const& shape, Reduced const& reduced) : shape_(shape), reduced_(reduced) {}

  ExprShape<R> const& shape() const { return shape_; }

  template <TensorType V, std::size_t RV>
  void set_destination(V const& v, std::array<std::size_t, RV> const& map) {
    ops_[0] = describe<R, K>(v, map, shape_, true);
    if (count_ == 0) count_ = 1;
    bool ok = merge_boundaries(bounds_, ops_[0], shape_);
    (void)ok;  // a layout's own split points always form a chain
  }

  // A tensor leaf: its operand, or a compact copy when its modes cannot be iterated with the
  // operands before it.
  template <TensorType V>
  auto add_leaf(V const& v) {
    using T = std::remove_cv_t<typename V::element_type>;
    static_assert(std::is_same_v<typename V::space, HostSpace>,
                  "tessel: the host executor reads host tensors only; this expression holds a "
                  "device tensor (use the CUDA executor).");
    constexpr std::size_t RV = tessel::detail::tensor_rank<V>();
    auto d = describe<R, K>(v, trailing_map<RV, R>(), shape_, true);
    if (merge_boundaries(bounds_, d, shape_)) return push<T>(d);
    auto tmp = make_compact<T>(tessel::detail::logical_shape(v));
    index_t const n = to_index(size(tmp.layout()));
    auto tv = tessel::detail::view_of(tmp);
    for (index_t i = 0; i < n; ++i) tv[i] = v[i];
    return add_owned(std::move(tmp), false);
  }

  // A device tensor leaf: its operand, or compact() (an OwnedView of a compact copy made by the
  // device executor) when its modes cannot be iterated with the operands before it.
  template <TensorType V, class Compact>
  auto add_device_leaf(V const& v, Compact const& compact) {
    using T = std::remove_cv_t<typename V::element_type>;
    static_assert(std::is_same_v<typename V::space, DeviceSpace>,
                  "tessel: the CUDA executor reads device tensors only; this expression holds a "
                  "host tensor (copy it to the device first, or use a host executor).");
    constexpr std::size_t RV = tessel::detail::tensor_rank<V>();
    auto d = describe<R, K>(v, trailing_map<RV, R>(), shape_, true);
    if (merge_boundaries(bounds_, d, shape_)) return push<T>(d);
    return add_owned(compact());
  }

  // A temporary this binder keeps alive (a materialized reduction or a compacted leaf).
  template <class V>
  auto add_owned(OwnedView<V> const& tmp, bool user_memory = false) {
    using T = std::remove_cv_t<typename V::element_type>;
    temporaries_.push_back(tmp.keep);
    constexpr std::size_t RV = tessel::detail::tensor_rank<V>();
    auto d = describe<R, K>(tmp.view, trailing_map<RV, R>(), shape_, user_memory);
    bool ok = merge_boundaries(bounds_, d, shape_);  // compact: no split points inside a mode
    (void)ok;
    return push<T>(d);
  }
  template <class HT>
  requires(!is_owned_view<std::remove_cvref_t<HT>>::value) auto add_owned(
      HT&& tmp, bool user_memory = false) {
    using T = typename std::remove_cvref_t<HT>::value_type;
    auto owned = std::make_shared<std::remove_cvref_t<HT>>(std::forward<HT>(tmp));
    temporaries_.push_back(owned);
    constexpr std::size_t RV = tessel::detail::tensor_rank<std::remove_cvref_t<HT>>();
    auto d =
        describe<R, K>(tessel::detail::view_of(*owned), trailing_map<RV, R>(), shape_, user_memory);
    bool ok = merge_boundaries(bounds_, d, shape_);  // compact: no split points inside a mode
    (void)ok;
    return push<T>(d);
  }

  LoopNest<K, N> lower() const {
    return make_loop_nest<R, K, N>(ops_, count_, bounds_, shape_, reduced_);
  }

  bool needs_temporary(LoopNest<K, N> const& nest, bool element_for_element_ok) const {
    return detail::needs_temporary(ops_, nest, element_for_element_ok);
  }

  // Positions every leaf evaluator of ev (in binding order) on the nest.
  template <class Ev>
  void apply(LoopNest<K, N> const& nest, Ev& ev) const {
    index_t j = 1;
    ev.visit_leaves([&](auto& leaf) {
      for (index_t m = 0; m < nest.rank; ++m) leaf.stride[m] = nest.stride[j][m];
      leaf.inner = nest.stride[j][nest.rank - 1];
      ++j;
    });
  }

  // The destination evaluator over the nest.
  template <class T>
  DstEval<T, K> destination(T* data, LoopNest<K, N> const& nest) const {
    DstEval<T, K> d{};
    d.ptr = data;
    for (index_t m = 0; m < nest.rank; ++m) d.stride[m] = nest.stride[0][m];
    d.inner = nest.stride[0][nest.rank - 1];
    return d;
  }

 private:
  template <class T>
  LeafEval<T, K> push(OperandDesc<R, K> const& d) {
    ops_[count_++] = d;
    LeafEval<T, K> e{};
    e.ptr = reinterpret_cast<T const*>(d.data);
    return e;
  }

  ExprShape<R> shape_;
  Reduced reduced_;
  OperandDesc<R, K> ops_[N] = {};
  index_t count_ = 0;
  Boundaries<R, K> bounds_{};
  std::vector<std::shared_ptr<void>> temporaries_;
};

// The evaluator of node over binder's nest; materialize(node) evaluates a reduction or row
// operation into a host tensor of its shape (then read as a leaf).
template <std::size_t K, class Node, class B, class Materialize>
auto bind(Node const& node, B& binder, Materialize const& materialize) -> eval_t<Node, K> {
  if constexpr (is_tensor_leaf<Node>::value) {
    if constexpr (std::is_same_v<typename B::space, DeviceSpace>)
      return binder.add_device_leaf(node.tensor, [&] { return materialize(node); });
    else
      return binder.add_leaf(node.tensor);
  } else if constexpr (is_scalar_leaf<Node>::value) {
    return ScalarEval<typename Node::value_type>{node.value};
  } else if constexpr (is_map<Node>::value) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      // Children are bound left to right, the order visit_leaves later walks them in.
      using E = eval_t<Node, K>;
      E e{node.op, {}};
      ((get<I>(e.children) = bind<K>(get<I>(node.children), binder, materialize)), ...);
      return e;
    }
    (std::make_index_sequence<tuple_size_v<decltype(node.children)>>{});
  } else {
    static_assert(materialized_v<Node>, "tessel: internal: unknown expression node.");
    return binder.add_owned(materialize(node));
  }
}

}  // namespace tessel::exec::detail
