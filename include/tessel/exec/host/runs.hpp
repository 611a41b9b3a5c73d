// The runs every host pass is made of: an odometer over the loop modes of a nest, and the
// elementwise and reduction runs along its innermost mode (the packet path, exec/host/packet.hpp,
// or the scalar kernel body with SequentialContext). The general lowering (exec/host.hpp) and the
// flat one (exec/host/flat.hpp) both end here, so they compute the same bits.
#pragma once

#include <algorithm>
#include <type_traits>

#include "../../core/config.hpp"
#include "../body/context.hpp"
#include "../body/elementwise.hpp"
#include "../body/reduce_ops.hpp"
#include "../body/row.hpp"
#include "../evaluator.hpp"
#include "packet.hpp"
#include "streaming.hpp"

namespace tessel::exec::detail {

// Elements per block of a reduction over every mode (fixed, so results do not depend on threads).
inline constexpr index_t reduce_block = index_t{1} << 15;

// ---- odometer over loop modes [lo, hi) ----

// Positions evs at the flat (row-major) index `flat` of modes [lo, hi).
template <class Nest, class... Evs>
void seek(Nest const& nest, index_t lo, index_t hi, index_t flat, index_t* coord, Evs&... evs) {
  for (index_t m = hi - 1; m >= lo; --m) {
    coord[m] = flat % nest.extent[m];
    flat /= nest.extent[m];
    (evs.advance(m, coord[m]), ...);
  }
}

// Moves evs one step along modes [lo, hi), innermost first.
template <class Nest, class... Evs>
void step(Nest const& nest, index_t lo, index_t hi, index_t* coord, Evs&... evs) {
  for (index_t m = hi - 1; m >= lo; --m) {
    ++coord[m];
    (evs.advance(m, 1), ...);
    if (coord[m] < nest.extent[m]) return;
    (evs.advance(m, -nest.extent[m]), ...);
    coord[m] = 0;
  }
}

// f(i0, i1, base) for each run [i0, i1) of the innermost mode covering the flat range [begin, end)
// of modes [lo, rank), with evs positioned at the run's row; base is the flat index of the row.
template <class Nest, class F, class... Evs>
void for_each_run(Nest const& nest, index_t lo, index_t begin, index_t end, F const& f,
                  Evs&... evs) {
  index_t const last = nest.rank - 1;
  index_t const n = nest.extent[last];
  index_t coord[sizeof(nest.extent) / sizeof(index_t)] = {};
  index_t row = begin / n;
  index_t i = begin % n;
  seek(nest, lo, last, row, coord, evs...);
  index_t left = end - begin;
  index_t base = row * n;
  while (left > 0) {
    index_t const len = std::min(n - i, left);
    f(i, i + len, base);
    left -= len;
    if (left == 0) break;
    step(nest, lo, last, coord, evs...);
    i = 0;
    base += n;
  }
}

// True when every leaf of ev has innermost stride 1.
template <class Ev>
bool leaves_contiguous(Ev ev) {
  bool all = true;
  ev.visit_leaves([&](auto const& leaf) { all = all && leaf.inner == 1; });
  return all;
}

// ---- elementwise runs ----

// The packet type S an assignment of ev into T elements computes in, if any (else void).
template <class Ev, class T>
using packet_scalar_t =
    std::conditional_t<host::packetizable_v<Ev, typename Ev::value_type> &&
                           (std::is_same_v<T, typename Ev::value_type> ||
                            (StorageFloat<T> && std::is_same_v<typename Ev::value_type, float>)),
                       typename Ev::value_type, void>;

// How a run is stored: contiguous (every leaf and the destination have innermost stride 1) and,
// for a large destination of the packet type, streaming (exec/host/streaming.hpp).
struct RunStores {
  bool contiguous = false;
  bool stream = false;
};

// A run every leaf and the destination read with unit stride; stream: with streaming stores.
template <class D, class Ev>
void run_contiguous(D const& dst, Ev const& ev, index_t begin, index_t end, bool stream) {
  using S = packet_scalar_t<Ev, typename D::element_type>;
  if constexpr (!std::is_void_v<S>) {
    if constexpr (std::is_same_v<typename D::element_type, S>) {
      if (stream) {
        host::packet_run<S, true, true>(dst, ev, begin, end);
        return;
      }
    }
    host::packet_run<S, true>(dst, ev, begin, end);
  } else {
    D d = dst;
    elementwise_body(SequentialContext{}, d, ev, begin, end);
  }
}

template <class D, class Ev>
void run_elementwise(D const& dst, Ev const& ev, index_t begin, index_t end, RunStores stores) {
  if (stores.contiguous) {
    run_contiguous(dst, ev, begin, end, stores.stream);
    return;
  }
  using S = packet_scalar_t<Ev, typename D::element_type>;
  if constexpr (!std::is_void_v<S>) {
    host::packet_run<S, false>(dst, ev, begin, end);
  } else {
    D d = dst;
    elementwise_body(SequentialContext{}, d, ev, begin, end);
  }
}

// dst(x) = ev(x) over modes [lo, rank) of the nest, flat range [begin, end).
template <class Nest, class D, class Ev>
void elementwise_range(Nest const& nest, index_t lo, index_t begin, index_t end, D d, Ev ev,
                       RunStores stores) {
  for_each_run(
      nest, lo, begin, end,
      [&](index_t i0, index_t i1, index_t) { run_elementwise(d, ev, i0, i1, stores); }, d, ev);
}

// ---- reduction runs ----

// Op reduces ev's values in packets of their type (reduce_run's vector path).
template <class Op, class Ev>
constexpr bool reduces_in_packets() {
  using S = typename Ev::value_type;
  return host::packet_reducible_v<S, Op> && host::packetizable_v<Ev, S>;
}

// The partial state of op over [begin, end) of one run, with unit-stride leaves (Contiguous) or
// any.
template <bool Contiguous, class Op, class Ev>
typename Op::state_type reduce_run_as(Op const& op, Ev const& ev, index_t begin, index_t end,
                                      index_t base) {
  using S = typename Ev::value_type;
  if constexpr (reduces_in_packets<Op, Ev>()) {
    if (end - begin >= 2 * host::packet_width<S>)
      return host::packet_reduce_run<S, Contiguous>(op, ev, begin, end);
  }
  return row_reduce_body(SequentialContext{}, op, ev, begin, end, base);
}

template <class Op, class Ev>
typename Op::state_type reduce_run(Op const& op, Ev const& ev, index_t begin, index_t end,
                                   index_t base, bool contiguous) {
  return contiguous ? reduce_run_as<true>(op, ev, begin, end, base)
                    : reduce_run_as<false>(op, ev, begin, end, base);
}

// The partial state of op over the flat range [begin, end) of the reduced modes, ev positioned
// at a destination element.
template <class Nest, class Op, class Ev>
typename Op::state_type reduce_range(Nest const& nest, Op const& op, Ev ev, index_t begin,
                                     index_t end, bool contiguous) {
  auto state = op.identity();
  for_each_run(
      nest, nest.outer, begin, end,
      [&](index_t i0, index_t i1, index_t base) {
        state = op(state, reduce_run(op, ev, i0, i1, base, contiguous));
      },
      ev);
  return state;
}

}  // namespace tessel::exec::detail
