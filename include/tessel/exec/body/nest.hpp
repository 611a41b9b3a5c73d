// Kernel bodies over a whole loop nest (exec/lower.hpp), for executors that hand out flat indices
// instead of stepping an odometer: the CUDA executor's grid-stride elementwise kernel, its row
// kernels and the input of its full reductions. A flat index becomes loop coordinates by fast
// division (exec/fast_divmod.hpp), or by constant divisors when every layout is static. Host and
// device: the host tests run every body here with SequentialContext and compare with the host
// executor, so these are the CUDA kernels' host twins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../../core/config.hpp"
#include "../../core/tuple.hpp"
#include "../../expr/element.hpp"
#include "../evaluator.hpp"
#include "../fast_divmod.hpp"
#include "context.hpp"
#include "elementwise.hpp"
#include "row.hpp"

// Full unrolling in device code (a loop over a capacity K whose trip count is a constant), where
// it keeps arrays indexed by the loop variable in registers.
#if defined(__CUDA_ARCH__)
#define TESSEL_UNROLL _Pragma("unroll")
#else
#define TESSEL_UNROLL
#endif

namespace tessel::exec {

// The extents of a loop nest's modes as divisors. Index is the unsigned type flat indices are
// computed in (32 bits when every flat index fits, which makes each division one multiply-high).
template <class Index, std::size_t K>
struct NestIndexer {
  using index_type = Index;

  int rank = 0;   // loop modes
  int outer = 0;  // modes [0, outer) run over destination elements, [outer, rank) are reduced
  FastDivmod<Index> extent[K] = {};

  // Moves evs to flat (row-major) index f of modes [lo, hi).
  // @pre 0 <= lo < hi <= rank and f < the product of those extents
  template <class... Evs>
  TESSEL_HOST_DEVICE void seek(int lo, int hi, Index f, Evs&... evs) const {
    // Unrolled over the capacity, so every stride index is a constant (no local-memory arrays).
    TESSEL_UNROLL
    for (int m = static_cast<int>(K) - 1; m >= 0; --m) {
      if (m < lo || m >= hi) continue;
      Index c = f;  // the outermost mode's coordinate is what is left
      if (m > lo) f = extent[m].divmod(f, c);
      (evs.advance(m, static_cast<index_t>(c)), ...);
    }
  }

  // Moves evs to flat index f of modes [lo, hi) except the innermost, whose coordinate it returns
  // (the offset an evaluator's operator() takes). Unrolled like seek: indexing extent[hi - 1] at
  // run time would put the divisors in local memory.
  template <class... Evs>
  TESSEL_HOST_DEVICE Index seek_inner(int lo, int hi, Index f, Evs&... evs) const {
    Index inner = f;
    TESSEL_UNROLL
    for (int m = static_cast<int>(K) - 1; m >= 0; --m) {
      if (m < lo || m >= hi) continue;
      Index c = f;
      if (m > lo) f = extent[m].divmod(f, c);
      if (m == hi - 1)
        inner = c;
      else
        (evs.advance(m, static_cast<index_t>(c)), ...);
    }
    return inner;
  }

  // The evaluators already hold their strides (Binder::apply): nothing to fold.
  template <class... Evs>
  TESSEL_HOST_DEVICE void fold(Evs&...) const {}
};

// The divisors of nest's modes. @pre every extent < 2^(bits(Index) - 1)
template <class Index, std::size_t K, class Nest>
NestIndexer<Index, K> make_indexer(Nest const& nest) {
  NestIndexer<Index, K> x;
  x.rank = static_cast<int>(nest.rank);
  x.outer = static_cast<int>(nest.outer);
  for (index_t m = 0; m < nest.rank; ++m)
    x.extent[m] = FastDivmod<Index>(static_cast<Index>(nest.extent[m]));
  return x;
}

// A loop nest known at compile time — Of::value.nest, a LoopNest lowered from static layouts by
// exec/lower.hpp (Of is a type: nvcc's host launch stubs cannot spell class-type template
// arguments) — behind NestIndexer's interface: every extent is a constant (division by it is a
// multiply-high the compiler picks) and fold() overwrites the evaluators' strides with the nest's
// constants, so after inlining every offset is coordinate * immediate. Empty: a kernel argument
// of no size.
template <class Of, class Index>
struct StaticNestIndexer {
  using index_type = Index;

  static constexpr int rank = static_cast<int>(Of::value.nest.rank);
  static constexpr int outer = static_cast<int>(Of::value.nest.outer);

  template <class... Evs>
  TESSEL_HOST_DEVICE void seek(int lo, int hi, Index f, Evs&... evs) const {
    Index inner = 0;
    walk(lo, hi, -1, f, inner, std::make_integer_sequence<int, rank>{}, evs...);
  }

  template <class... Evs>
  TESSEL_HOST_DEVICE Index seek_inner(int lo, int hi, Index f, Evs&... evs) const {
    Index inner = f;
    walk(lo, hi, hi - 1, f, inner, std::make_integer_sequence<int, rank>{}, evs...);
    return inner;
  }

  // Sets the strides of d (operand 0 of the nest) and of every leaf of ev (operands 1, 2, ... in
  // binding order) to the nest's constants.
  template <class Dst, class Ev>
  TESSEL_HOST_DEVICE void fold(Dst& d, Ev& ev) const {
    fold_operand<0>(d);
    fold_tree<1>(ev);
  }
  template <class Ev>
  TESSEL_HOST_DEVICE void fold(Ev& ev) const {
    fold_tree<1>(ev);
  }

 private:
  // Modes innermost first, each index a constant.
  template <int... I, class... Evs>
  TESSEL_HOST_DEVICE static void walk(int lo, int hi, int keep, Index& f, Index& inner,
                                      std::integer_sequence<int, I...>, Evs&... evs) {
    (step<rank - 1 - I>(lo, hi, keep, f, inner, evs...), ...);
  }

  template <int M, class... Evs>
  TESSEL_HOST_DEVICE static void step(int lo, int hi, int keep, Index& f, Index& inner,
                                      Evs&... evs) {
    if (M < lo || M >= hi) return;
    constexpr Index extent = static_cast<Index>(Of::value.nest.extent[M]);
    Index c = f;  // the outermost mode's coordinate is what is left
    if (M > lo) {
      c = f % extent;
      f = f / extent;
    }
    if (M == keep)
      inner = c;
    else
      (evs.advance(M, static_cast<index_t>(c)), ...);
  }

  template <std::size_t J, class E, int... M>
  TESSEL_HOST_DEVICE static void set_strides(E& e, std::integer_sequence<int, M...>) {
    ((e.stride[M] = std::integral_constant<index_t, Of::value.nest.stride[J][M]>::value), ...);
    e.inner = std::integral_constant<index_t, Of::value.nest.stride[J][rank - 1]>::value;
  }

  template <std::size_t J, class E>
  TESSEL_HOST_DEVICE static void fold_operand(E& e) {
    set_strides<J>(e, std::make_integer_sequence<int, rank>{});
  }

  template <std::size_t J, class E>
  TESSEL_HOST_DEVICE static void fold_tree(E& e) {
    if constexpr (is_leaf_eval_v<E>) {
      fold_operand<J>(e);
    } else if constexpr (is_map_eval_v<E>) {
      fold_children<J>(e, std::make_index_sequence<E::arity>{});
    }  // scalars have no strides
  }

  template <std::size_t J, class E, std::size_t... C>
  TESSEL_HOST_DEVICE static void fold_children(E& e, std::index_sequence<C...>) {
    (fold_tree<J + leaves_before<E, C>()>(get<C>(e.children)), ...);
  }

  // Tensor leaves in the children of E before child C.
  template <class E, std::size_t C>
  static constexpr std::size_t leaves_before() {
    return []<std::size_t... P>(std::index_sequence<P...>) {
      return (
          std::size_t{0} + ... +
          eval_leaves_v<std::remove_cvref_t<decltype(get<P>(std::declval<E const&>().children))>>);
    }
    (std::make_index_sequence<C>{});
  }
};

// ---- elementwise ----

// dst = ev at every flat index of the nest's modes [0, rank), lanes striding through them.
// Nest: a NestIndexer (extents and strides at run time) or a StaticNestIndexer (constants).
template <class Ctx, class Nest, class Dst, class Ev>
TESSEL_HOST_DEVICE void nest_elementwise_body(Ctx const& ctx, Nest const& nest, Dst const& dst,
                                              Ev const& ev, typename Nest::index_type total) {
  using Index = typename Nest::index_type;
  Dst d0 = dst;
  Ev e0 = ev;
  nest.fold(d0, e0);
  auto const stride = static_cast<Index>(ctx.lanes());
  for (auto f = static_cast<Index>(ctx.lane()); f < total; f += stride) {
    Dst d = d0;
    Ev e = e0;
    auto const i = static_cast<index_t>(nest.seek_inner(0, nest.rank, f, d, e));
    d.store(i, e(i));
  }
}

// V consecutive elements, computed lane by lane after one vector load per operand.
template <class T, int V>
struct Packet {
  T v[V];
};

namespace detail {

// A vector of V elements of T as one memory access: 16 bytes at most per access, so wider
// packets (V doubles) become several 16-byte accesses.
template <class T, int V>
struct alignas(sizeof(T) * V < 16 ? sizeof(T) * V : 16) RawPacket {
  T v[V];
};

}  // namespace detail

// The byte alignment a V-packet of T needs.
template <class T, int V>
inline constexpr std::size_t packet_alignment_v = alignof(detail::RawPacket<T, V>);

// ev(f .. f + V - 1), each operand read with one vector access.
// @pre every tensor leaf has innermost stride 1 and ptr + f aligned to its packet alignment
template <int V, class T, std::size_t K>
TESSEL_HOST_DEVICE Packet<compute_t<T>, V> load_packet(LeafEval<T, K> const& e, index_t f) {
  Packet<compute_t<T>, V> out;
#if TESSEL_DEVICE_PASS
  auto const raw = *reinterpret_cast<detail::RawPacket<T, V> const*>(e.ptr + f);
  TESSEL_UNROLL
  for (int v = 0; v < V; ++v) out.v[v] = load_element(raw.v[v]);
#else
  for (int v = 0; v < V; ++v) out.v[v] = load_element(e.ptr[f + v]);
#endif
  return out;
}
template <int V, class T>
TESSEL_HOST_DEVICE Packet<T, V> load_packet(ScalarEval<T> const& e, index_t) {
  Packet<T, V> out;
  TESSEL_UNROLL
  for (int v = 0; v < V; ++v) out.v[v] = e.value;
  return out;
}

namespace detail {
template <int V, class Op, class... Cs, std::size_t... I>
TESSEL_HOST_DEVICE auto load_map_packet(MapEval<Op, Cs...> const& e, index_t f,
                                        std::index_sequence<I...>) {
  auto const args = make_tuple(load_packet<V>(get<I>(e.children), f)...);
  Packet<typename MapEval<Op, Cs...>::value_type, V> out;
  TESSEL_UNROLL
  for (int v = 0; v < V; ++v) out.v[v] = e.op(get<I>(args).v[v]...);
  return out;
}
}  // namespace detail

template <int V, class Op, class... Cs>
TESSEL_HOST_DEVICE auto load_packet(MapEval<Op, Cs...> const& e, index_t f) {
  return detail::load_map_packet<V>(e, f, std::index_sequence_for<Cs...>{});
}

// dst(f .. f + V - 1) = p, rounded to T, with one vector access.
template <int V, class T, std::size_t K, class S>
TESSEL_HOST_DEVICE void store_packet(DstEval<T, K> const& d, index_t f, Packet<S, V> const& p) {
#if TESSEL_DEVICE_PASS
  detail::RawPacket<T, V> raw;
  TESSEL_UNROLL
  for (int v = 0; v < V; ++v) raw.v[v] = store_element<T>(p.v[v]);
  *reinterpret_cast<detail::RawPacket<T, V>*>(d.ptr + f) = raw;
#else
  for (int v = 0; v < V; ++v) d.ptr[f + v] = store_element<T>(p.v[v]);
#endif
}

// dst = ev over [0, total) of one contiguous mode: lanes take V-packets, then the last
// total % V elements one by one.
// @pre dst and every tensor leaf have innermost stride 1 and packet-aligned pointers
template <int V, class Ctx, class Dst, class Ev>
TESSEL_HOST_DEVICE void packet_elementwise_body(Ctx const& ctx, Dst const& dst, Ev const& ev,
                                                index_t total) {
  index_t const full = total / V * V;
  index_t const stride = static_cast<index_t>(ctx.lanes()) * V;
  for (index_t f = static_cast<index_t>(ctx.lane()) * V; f < full; f += stride)
    store_packet<V>(dst, f, load_packet<V>(ev, f));
  Dst d = dst;
  elementwise_body(ctx, d, ev, full, total);
}

// ---- rows: reductions over the nest's modes [outer, rank) ----

// One row of a nest: element i of the reduced modes in row-major order. Flat: the reduced modes
// coalesced into one, so element i is at offset i along it (no division).
template <class Ev, class Nest, bool Flat>
struct NestRow {
  using Index = typename Nest::index_type;

  Ev ev;
  Nest nest;

  TESSEL_HOST_DEVICE auto operator()(index_t i) const {
    if constexpr (Flat) {
      return ev(i);
    } else {
      Ev e = ev;
      auto const j =
          static_cast<index_t>(nest.seek_inner(nest.outer, nest.rank, static_cast<Index>(i), e));
      return e(j);
    }
  }
  template <class V>
  TESSEL_HOST_DEVICE void store(index_t i, V v) const {
    if constexpr (Flat) {
      ev.store(i, v);
    } else {
      Ev e = ev;
      auto const j =
          static_cast<index_t>(nest.seek_inner(nest.outer, nest.rank, static_cast<Index>(i), e));
      e.store(j, v);
    }
  }
};

// Destination element `row` of a reduction over the nest's modes [outer, rank) of n elements:
// op over the row (ev, the producer, evaluated on the fly), finalized, stored by lane 0.
template <bool Flat, class Ctx, class Op, class Nest, class Dst, class Ev>
TESSEL_HOST_DEVICE void nest_reduce_row_body(Ctx const& ctx, Op const& op, Nest const& nest,
                                             Dst const& dst, Ev const& ev,
                                             typename Nest::index_type row, index_t n) {
  Dst d = dst;
  Ev e = ev;
  nest.fold(d, e);
  nest.seek(0, nest.outer, row, d, e);
  NestRow<Ev, Nest, Flat> const r{e, nest};
  auto const s = row_reduce_body(ctx, op, r, 0, n);
  if (ctx.lane() == 0) d.store(0, op.finalize(s, n));
}

// Row `row` of softmax (Log false) or log_softmax (Log true) over the nest's modes [outer, rank):
// the logsumexp of the row, then the row written through the epilogue.
template <bool Log, bool Flat, class Ctx, class Nest, class Dst, class Ev>
TESSEL_HOST_DEVICE void nest_softmax_row_body(Ctx const& ctx, Nest const& nest, Dst const& dst,
                                              Ev const& ev, typename Nest::index_type row,
                                              index_t n) {
  Dst d = dst;
  Ev e = ev;
  nest.fold(d, e);
  nest.seek(0, nest.outer, row, d, e);
  NestRow<Ev, Nest, Flat> const in{e, nest};
  NestRow<Dst, Nest, Flat> out{d, nest};
  if constexpr (Log)
    row_log_softmax_body(ctx, in, out, n);
  else
    row_softmax_body(ctx, in, out, n);
}

// ---- full reductions ----

// The input of a reduction over every mode: element f (row-major over the nest's reduced modes)
// as a one-element state of op, which a device-wide reduction then combines with op.
// Nest: a NestIndexer, or a StaticNestIndexer whose strides fold() has not yet written (the
// constructor-free aggregate cannot, so operator() does: a no-op for run-time nests).
template <class Op, class Ev, class Nest>
struct NestReduceInput {
  using Index = typename Nest::index_type;

  Op op;
  Ev ev;
  Nest nest;

  TESSEL_HOST_DEVICE typename Op::state_type operator()(Index f) const {
    Ev e = ev;
    nest.fold(e);
    auto const i = static_cast<index_t>(nest.seek_inner(nest.outer, nest.rank, f, e));
    return op.update(op.identity(), e(i), static_cast<index_t>(f));
  }
};

// A reduction's state finalized over n elements and rounded to the destination type T.
template <class Op, class T>
struct FinalizeAs {
  Op op;
  index_t n;

  TESSEL_HOST_DEVICE T operator()(typename Op::state_type s) const {
    return store_element<T>(op.finalize(s, n));
  }
};

}  // namespace tessel::exec
