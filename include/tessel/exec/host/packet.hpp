// The host executor's vector path: evaluators evaluated a packet (SIMD register) at a time with
// Eigen's packet math (Eigen::internal::padd, pexp, ...). An expression takes this path when every
// node has a packet form in one floating type S (float or double): tessel's arithmetic, math,
// max/min, comparisons (as lane masks), where, casts within S, and float leaves under cast<double>
// (read into double packets). Leaf loads specialize on the innermost stride: 1 (ploadu), 0 (pset1,
// hoisted by the compiler), anything else (pgather); a fully contiguous nest instantiates a loop
// with plain ploadu only. Partial packets at the end of a run load the remaining lanes into a
// zero-padded buffer, so every element of a run, tail included, is computed by the same packet
// code (results do not depend on how runs are split across threads). Host only.
//
// Under nvcc this header declares the traits as "no packet form" and includes no Eigen: Eigen 3.4
// does not compile warning-free there, and CUDA translation units evaluate on the device anyway.
// The host executor in a CUDA TU then runs the scalar kernel bodies.
#pragma once

#if defined(__CUDACC__)

#include "../../core/config.hpp"

namespace tessel::exec::host {
template <class S>
inline constexpr bool vectorizable_v = false;
template <class Ev, class S>
inline constexpr bool packetizable_v = false;
template <class S, class Op>
inline constexpr bool packet_reducible_v = false;
template <class Ev, class S>
inline constexpr bool native_leaves_v = true;
template <class S>
inline constexpr index_t packet_width = 1;
template <class S, class Ev>
void tile_sums(Ev, index_t, index_t, index_t, S*) {}
template <class S, bool Contiguous, bool Stream = false, class D, class Ev>
void packet_run(D const&, Ev const&, index_t, index_t) {}
template <class S, bool Contiguous, class Op, class Ev>
typename Op::state_type packet_reduce_run(Op const& op, Ev const&, index_t, index_t) {
  return op.identity();
}
}  // namespace tessel::exec::host

#else

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

#include "../../expr/arithmetic.hpp"
#include "../../expr/cast.hpp"
#include "../../expr/compare.hpp"
#include "../../expr/math.hpp"
#include "../../expr/minmax.hpp"
#include "../../expr/where.hpp"
#include "../body/reduce_ops.hpp"
#include "../evaluator.hpp"
#include "exp_float.hpp"

#ifndef TESSEL_PREFETCH_BYTES
#define TESSEL_PREFETCH_BYTES 4096
#endif

namespace tessel::exec::host {

namespace ei = Eigen::internal;

template <class S>
using packet_t = typename ei::packet_traits<S>::type;

template <class S>
inline constexpr index_t packet_width = ei::unpacket_traits<packet_t<S>>::size;

// S has a vector packet type on this target.
template <class S>
inline constexpr bool vectorizable_v =
    (std::is_same_v<S, float> || std::is_same_v<S, double>)&&ei::packet_traits<S>::Vectorizable &&
    (packet_width<S> > 1);

// What a node yields in packets of S: nothing (no packet form), values, or comparison lane masks.
enum class PacketKind { none, value, mask };

// How leaves load: every innermost stride is 1; any stride (1, 0 or other, chosen per leaf at run
// time); or a partial packet at the end of a run.
enum class Load { contiguous, general, tail };

// ---- exp with IEEE edge cases ----

// Float packets: tessel's exp (exp_float.hpp), about 2/3 the instructions of Eigen's generic
// pexp (and no emulated floor on SSE2, no overflow from 88.38 on as in its AVX-512 form): k in
// the low bits of one multiply-add, the polynomial, k added to the result's exponent bits. Lanes
// past the normal range are then set: +inf above it, 0 below (where the bits would be garbage;
// Eigen keeps subnormal results there instead), so exp(-inf) = 0 as logsumexp needs. A NaN
// stays NaN: it fails both comparisons, and shifting its bits moves nothing into the exponent.
template <class P>
TESSEL_FORCEINLINE P exp_float_packet(P const& x) {
  namespace c = detail::exp_float;
  using PI = typename ei::unpacket_traits<P>::integer_packet;
  P shifted = ei::pmadd(x, ei::pset1<P>(c::log2e), ei::pset1<P>(c::round_shift));
  // Under -ffast-math the compiler could fold (x log2e + shift) - shift into x log2e, which drops
  // the rounding; the barrier hides where `shifted` came from.
  TESSEL_OPTIMIZATION_BARRIER(shifted);
  P const k = ei::psub(shifted, ei::pset1<P>(c::round_shift));
  P f = ei::pmadd(k, ei::pset1<P>(-c::ln2_hi), x);
  f = ei::pmadd(k, ei::pset1<P>(-c::ln2_lo), f);
  P p = ei::pset1<P>(c::taylor[0]);
  // Horner's steps written out by a fold: at -O2 GCC keeps a loop over the coefficients, loading
  // each from memory per packet.
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((p = ei::pmadd(p, f, ei::pset1<P>(c::taylor[I + 1]))), ...);
  }
  (std::make_index_sequence<std::size(c::taylor) - 1>{});
  // The low bits of `shifted` are k (two's complement, 9 bits are enough): shifted left by the
  // mantissa width they add k to p's exponent; the higher bits fall off the word.
  P const e = ei::preinterpret<P>(ei::padd(
      ei::preinterpret<PI>(p), ei::plogical_shift_left<23>(ei::preinterpret<PI>(shifted))));
  P const big = ei::pcmp_lt(ei::pset1<P>(c::largest_argument), x);
  P const tiny = ei::pcmp_lt(x, ei::pset1<P>(c::smallest_argument));
  return ei::pandnot(ei::pselect(big, ei::pset1<P>(std::numeric_limits<float>::infinity()), e),
                     tiny);
}

// Double packets: Eigen 3.4's pexp clamps its argument from below, so on SSE / AVX pexp(-inf) is
// a tiny denormal, not 0 (AVX-512 flushes it). logsumexp needs exp(-inf) == 0 exactly, so
// arguments below ln(DBL_MIN)-ish give 0. Above the range pexp already gives +inf, and NaN stays
// NaN (checked by tests/exec/packet_test.cpp).
template <class P>
TESSEL_FORCEINLINE P exp_packet(P const& x) {
  if constexpr (std::is_same_v<typename ei::unpacket_traits<P>::type, float>) {
    return exp_float_packet(x);
  } else {
    return ei::pandnot(ei::pexp(x), ei::pcmp_lt(x, ei::pset1<P>(-709.78)));
  }
}

// Eigen 3.4's float psqrt under its default EIGEN_FAST_MATH is rsqrt plus one Newton step (about
// 2 ulp, denormal results flushed); sqrt should be correctly rounded, so the exact instructions
// are used where Eigen's float packets are SSE / AVX / AVX-512 registers.
// (Overloads, not is_same: the packet types are vector-attributed built-in types.)
template <class P>
P sqrt_packet(P const& x) {
  return ei::psqrt(x);  // double packets are exact
}
#if defined(EIGEN_VECTORIZE_SSE)
inline ei::Packet4f sqrt_packet(ei::Packet4f const& x) {
  return _mm_sqrt_ps(x);
}
#endif
#if defined(EIGEN_VECTORIZE_AVX)
inline ei::Packet8f sqrt_packet(ei::Packet8f const& x) {
  return _mm256_sqrt_ps(x);
}
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
inline ei::Packet16f sqrt_packet(ei::Packet16f const& x) {
  return _mm512_sqrt_ps(x);
}
#endif

template <class P>
P tanh_packet(P const& x) {
  return ei::pselect(ei::pcmp_eq(x, x), ei::ptanh(x), x);
}

// ---- packet forms of the elementwise operators ----

template <PacketKind... C>
constexpr bool all_values() {
  return ((C == PacketKind::value) && ...);
}

// Operators without a packet form (user functors, integer-only operations) use the scalar path.
template <class Op>
struct PacketOp {
  template <class S, PacketKind...>
  static constexpr PacketKind kind() {
    return PacketKind::none;
  }
};

// Values in, a value out, when the packet type supports the operation (Has = Eigen's flag).
template <bool Has>
struct ValuePacketOp {
  template <class S, PacketKind... C>
  static constexpr PacketKind kind() {
    return Has && all_values<C...>() ? PacketKind::value : PacketKind::none;
  }
};
template <bool Has>
struct MaskPacketOp {
  template <class S, PacketKind... C>
  static constexpr PacketKind kind() {
    return Has && all_values<C...>() ? PacketKind::mask : PacketKind::none;
  }
};

template <>
struct PacketOp<ops::Add> : ValuePacketOp<true> {
  template <class P>
  static P apply(ops::Add, P const& a, P const& b) {
    return ei::padd(a, b);
  }
};
template <>
struct PacketOp<ops::Sub> : ValuePacketOp<true> {
  template <class P>
  static P apply(ops::Sub, P const& a, P const& b) {
    return ei::psub(a, b);
  }
};
template <>
struct PacketOp<ops::Mul> : ValuePacketOp<true> {
  // The product is rounded on its own, never fused into a later addition (as the scalar
  // math::rounded_product): GCC may contract a*b + c into an FMA in one copy of a run's loop and
  // not in another (the unrolled body, the plain loop, the partial packets), so an element's bits
  // would depend on how the pass was split across threads.
  template <class P>
  static P apply(ops::Mul, P const& a, P const& b) {
    P product = ei::pmul(a, b);
    TESSEL_OPTIMIZATION_BARRIER(product);
    return product;
  }
};
template <>
struct PacketOp<ops::Div> : ValuePacketOp<true> {
  template <class P>
  static P apply(ops::Div, P const& a, P const& b) {
    return ei::pdiv(a, b);
  }
};
template <>
struct PacketOp<ops::Negate> : ValuePacketOp<true> {
  template <class P>
  static P apply(ops::Negate, P const& a) {
    return ei::pnegate(a);
  }
};
template <>
struct PacketOp<ops::Abs> : ValuePacketOp<true> {
  template <class P>
  static P apply(ops::Abs, P const& a) {
    return ei::pabs(a);
  }
};
template <>
struct PacketOp<ops::Max> : ValuePacketOp<true> {
  template <class P>
  static P apply(ops::Max, P const& a, P const& b) {
    return ei::pmax<Eigen::PropagateNaN>(a, b);
  }
};
template <>
struct PacketOp<ops::Min> : ValuePacketOp<true> {
  template <class P>
  static P apply(ops::Min, P const& a, P const& b) {
    return ei::pmin<Eigen::PropagateNaN>(a, b);
  }
};

template <>
struct PacketOp<ops::Exp> {
  template <class S, PacketKind... C>
  static constexpr PacketKind kind() {
    return ValuePacketOp<bool(ei::packet_traits<S>::HasExp)>::template kind<S, C...>();
  }
  template <class P>
  static P apply(ops::Exp, P const& a) {
    return exp_packet(a);
  }
};
template <>
struct PacketOp<ops::Log> {
  template <class S, PacketKind... C>
  static constexpr PacketKind kind() {
    return ValuePacketOp<bool(ei::packet_traits<S>::HasLog)>::template kind<S, C...>();
  }
  template <class P>
  static P apply(ops::Log, P const& a) {
    return ei::plog(a);
  }
};
template <>
struct PacketOp<ops::Sqrt> {
  template <class S, PacketKind... C>
  static constexpr PacketKind kind() {
    return ValuePacketOp<bool(ei::packet_traits<S>::HasSqrt)>::template kind<S, C...>();
  }
  template <class P>
  static P apply(ops::Sqrt, P const& a) {
    return sqrt_packet(a);
  }
};
template <>
struct PacketOp<ops::Tanh> {
  template <class S, PacketKind... C>
  static constexpr PacketKind kind() {
    return ValuePacketOp<bool(ei::packet_traits<S>::HasTanh)>::template kind<S, C...>();
  }
  template <class P>
  static P apply(ops::Tanh, P const& a) {
    return tanh_packet(a);
  }
};

template <>
struct PacketOp<ops::Equal> : MaskPacketOp<true> {
  template <class P>
  static P apply(ops::Equal, P const& a, P const& b) {
    return ei::pcmp_eq(a, b);
  }
};
template <>
struct PacketOp<ops::NotEqual> : MaskPacketOp<true> {
  template <class P>
  static P apply(ops::NotEqual, P const& a, P const& b) {
    return ei::pxor(ei::pcmp_eq(a, b), ei::ptrue(a));
  }
};
template <>
struct PacketOp<ops::Less> : MaskPacketOp<true> {
  template <class P>
  static P apply(ops::Less, P const& a, P const& b) {
    return ei::pcmp_lt(a, b);
  }
};
template <>
struct PacketOp<ops::LessEqual> : MaskPacketOp<true> {
  template <class P>
  static P apply(ops::LessEqual, P const& a, P const& b) {
    return ei::pcmp_le(a, b);
  }
};
template <>
struct PacketOp<ops::Greater> : MaskPacketOp<true> {
  template <class P>
  static P apply(ops::Greater, P const& a, P const& b) {
    return ei::pcmp_lt(b, a);
  }
};
template <>
struct PacketOp<ops::GreaterEqual> : MaskPacketOp<true> {
  template <class P>
  static P apply(ops::GreaterEqual, P const& a, P const& b) {
    return ei::pcmp_le(b, a);
  }
};

template <>
struct PacketOp<ops::Where> {
  template <class S, PacketKind C, PacketKind A, PacketKind B>
  static constexpr PacketKind kind() {
    return C == PacketKind::mask && A == PacketKind::value && B == PacketKind::value
               ? PacketKind::value
               : PacketKind::none;
  }
  template <class P>
  static P apply(ops::Where, P const& mask, P const& a, P const& b) {
    return ei::pselect(mask, a, b);
  }
};

// A cast within S is the identity; a cast to half / bfloat16 (S float) rounds each lane.
template <class T>
struct PacketOp<ops::Cast<T>> {
  template <class S, PacketKind C>
  static constexpr PacketKind kind() {
    return C == PacketKind::value && std::is_same_v<compute_t<T>, S> ? PacketKind::value
                                                                     : PacketKind::none;
  }
  template <class P>
  static P apply(ops::Cast<T>, P const& a) {
    using S = typename ei::unpacket_traits<P>::type;
    if constexpr (std::is_same_v<T, S>) {
      return a;
    } else {
      alignas(64) S lanes[ei::unpacket_traits<P>::size];
      ei::pstore(lanes, a);
      for (auto& x : lanes) x = load_element(store_element<T>(x));
      return ei::pload<P>(lanes);
    }
  }
};

// ---- float leaves read in double packets ----

// A float leaf under cast<double> (sums of squares in double, the mixed-precision reductions) is
// read into double packets: the conversion is exact, so the values are those of the scalar path,
// and the packet takes half a float packet's worth of floats.
inline packet_t<double> widen_load(float const* p) {
#if defined(EIGEN_VECTORIZE_AVX512)
  return _mm512_cvtps_pd(_mm256_loadu_ps(p));
#elif defined(EIGEN_VECTORIZE_AVX)
  return _mm256_cvtps_pd(_mm_loadu_ps(p));
#elif defined(EIGEN_VECTORIZE_SSE2)
  return _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<__m128i const*>(p))));
#else
  alignas(64) double lanes[packet_width<double>];
  for (index_t l = 0; l < packet_width<double>; ++l) lanes[l] = double(p[l]);
  return ei::pload<packet_t<double>>(lanes);
#endif
}

// The evaluator of cast<double> of a float operand.
template <std::size_t K>
using WidenedLeaf = MapEval<ops::Cast<double>, LeafEval<float, K>>;

// ---- which evaluators have a packet form ----

template <class Ev, class S>
struct PacketTraits {
  static constexpr PacketKind kind = PacketKind::none;
};
template <class T, std::size_t K, class S>
struct PacketTraits<LeafEval<T, K>, S> {
  static constexpr PacketKind kind =
      vectorizable_v<S> && (std::is_same_v<T, S> || (StorageFloat<T> && std::is_same_v<S, float>))
          ? PacketKind::value
          : PacketKind::none;
};
template <class T, class S>
struct PacketTraits<ScalarEval<T>, S> {
  static constexpr PacketKind kind =
      vectorizable_v<S> && std::is_same_v<T, S> ? PacketKind::value : PacketKind::none;
};
template <class Op, class... Cs, class S>
struct PacketTraits<MapEval<Op, Cs...>, S> {
  static constexpr PacketKind kind =
      vectorizable_v<S> ? PacketOp<Op>::template kind<S, PacketTraits<Cs, S>::kind...>()
                        : PacketKind::none;
};

template <std::size_t K>
struct PacketTraits<WidenedLeaf<K>, double> {
  static constexpr PacketKind kind = vectorizable_v<double> ? PacketKind::value : PacketKind::none;
};

// Ev can be evaluated in packets of S, giving values.
template <class Ev, class S>
inline constexpr bool packetizable_v = PacketTraits<Ev, S>::kind == PacketKind::value;

// Every leaf of Ev holds S itself, so a strided run of it is loaded with packet gathers; other
// leaves (float read as double, 16-bit floats read as float) assemble such a packet lane by lane.
template <class Ev>
struct NativeLeaves {
  template <class S>
  static constexpr bool in = true;
};
template <class T, std::size_t K>
struct NativeLeaves<LeafEval<T, K>> {
  template <class S>
  static constexpr bool in = std::is_same_v<T, S>;
};
template <class Op, class... Cs>
struct NativeLeaves<MapEval<Op, Cs...>> {
  template <class S>
  static constexpr bool in = (NativeLeaves<Cs>::template in<S> && ...);
};
template <class Ev, class S>
inline constexpr bool native_leaves_v = NativeLeaves<Ev>::template in<S>;

// ---- evaluation ----

// Forced inline, with the lambdas they call: at -O2 GCC left peval's index-sequence lambdas out
// of line, a call per packet and node in the run loops (-O3 inlined them).

template <Load L, class S, class T, std::size_t K>
TESSEL_FORCEINLINE packet_t<S> peval(LeafEval<T, K> const& e, index_t i, index_t count) {
  using P = packet_t<S>;
  constexpr index_t W = packet_width<S>;
  if constexpr (L == Load::contiguous && std::is_same_v<T, S>) {
    return ei::ploadu<P>(e.ptr + i);
  } else if constexpr (L == Load::general && std::is_same_v<T, S>) {
    if (e.inner == 1) return ei::ploadu<P>(e.ptr + i);
    if (e.inner == 0) return ei::pset1<P>(*e.ptr);
    return ei::pgather<S, P>(e.ptr + i * e.inner, e.inner);
  } else {
    if constexpr (L != Load::tail) {
      if (e.inner == 0) return ei::pset1<P>(load_element(*e.ptr));
    }
    alignas(64) S lanes[W];
    index_t const n = L == Load::tail ? count : W;
    for (index_t l = 0; l < W; ++l)
      lanes[l] = l < n ? S(load_element(e.ptr[(i + l) * e.inner])) : S(0);
    return ei::pload<P>(lanes);
  }
}

template <Load L, class S, std::size_t K>
TESSEL_FORCEINLINE packet_t<S> peval(WidenedLeaf<K> const& w, index_t i, index_t count) {
  static_assert(std::is_same_v<S, double>,
                "tessel: internal: a widened leaf loads double packets.");
  auto const& e = get<0>(w.children);
  if constexpr (L == Load::contiguous) {
    return widen_load(e.ptr + i);
  } else {
    if constexpr (L == Load::general) {
      if (e.inner == 1) return widen_load(e.ptr + i);
    }
    return peval<L, S>(e, i, count);  // broadcast, or lane by lane
  }
}

template <Load L, class S, class T>
TESSEL_FORCEINLINE packet_t<S> peval(ScalarEval<T> const& e, index_t, index_t) {
  return ei::pset1<packet_t<S>>(e.value);
}

template <Load L, class S, class Op, class... Cs>
TESSEL_FORCEINLINE packet_t<S> peval(MapEval<Op, Cs...> const& e, index_t i, index_t count) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) TESSEL_INLINE_LAMBDA {
    return PacketOp<Op>::apply(e.op, peval<L, S>(get<I>(e.children), i, count)...);
  }
  (std::index_sequence_for<Cs...>{});
}

// Stores p at offsets [i, i + count) along the innermost mode.
template <Load L, class S, class T, std::size_t K>
TESSEL_FORCEINLINE void pstore(DstEval<T, K> const& d, index_t i, packet_t<S> const& p,
                               index_t count) {
  constexpr index_t W = packet_width<S>;
  if constexpr (L != Load::tail && std::is_same_v<T, S>) {
    if (L == Load::contiguous || d.inner == 1) {
      ei::pstoreu(d.ptr + i, p);
    } else {
      ei::pscatter<S, packet_t<S>>(d.ptr + i * d.inner, p, d.inner);
    }
  } else {
    alignas(64) S lanes[W];
    ei::pstore(lanes, p);
    index_t const n = L == Load::tail ? count : W;
    for (index_t l = 0; l < n; ++l) d.ptr[(i + l) * d.inner] = store_element<T>(lanes[l]);
  }
}

// ---- non-temporal stores ----

// A full packet written around the caches, to an address aligned to the packet's size
// (exec/host/streaming.hpp says when). Where no instruction is wrapped, an aligned store.
template <class S>
void pstream(S* to, packet_t<S> const& p) {
  ei::pstore(to, p);
}
#if defined(EIGEN_VECTORIZE_SSE)
inline void pstream(float* to, ei::Packet4f const& p) {
  _mm_stream_ps(to, p);
}
inline void pstream(double* to, ei::Packet2d const& p) {
  _mm_stream_pd(to, p);
}
#endif
#if defined(EIGEN_VECTORIZE_AVX)
inline void pstream(float* to, ei::Packet8f const& p) {
  _mm256_stream_ps(to, p);
}
inline void pstream(double* to, ei::Packet4d const& p) {
  _mm256_stream_pd(to, p);
}
#endif
#if defined(EIGEN_VECTORIZE_AVX512)
inline void pstream(float* to, ei::Packet16f const& p) {
  _mm512_stream_ps(to, p);
}
inline void pstream(double* to, ei::Packet8d const& p) {
  _mm512_stream_pd(to, p);
}
#endif

// Prefetches the cache lines each contiguous leaf of ev will read `ahead` elements from now.
template <class T, std::size_t K>
TESSEL_FORCEINLINE void prefetch_leaves(LeafEval<T, K> const& e, index_t i) {
  __builtin_prefetch(e.ptr + i);
}
template <class T>
TESSEL_FORCEINLINE void prefetch_leaves(ScalarEval<T> const&, index_t) {}
template <class Op, class... Cs>
TESSEL_FORCEINLINE void prefetch_leaves(MapEval<Op, Cs...> const& e, index_t i) {
  [&]<std::size_t... I>(std::index_sequence<I...>) TESSEL_INLINE_LAMBDA {
    (prefetch_leaves(get<I>(e.children), i), ...);
  }
  (std::index_sequence_for<Cs...>{});
}

// How far ahead (bytes) reduction scans and streamed runs prefetch. A reduction does much
// arithmetic per cache line (logsumexp: an exp per element), so the out-of-order window holds
// too few loads to hide memory latency; measured on tools/bench/host_expr_bench.cpp RowLse.
inline constexpr index_t prefetch_bytes = TESSEL_PREFETCH_BYTES;

// Elements of S in a cache line.
template <class S>
inline constexpr index_t line_elements = 64 / index_t(sizeof(S));

// Prefetches, for each contiguous leaf of ev, the lines of elements [at, at + count) moved
// prefetch_bytes ahead.
template <class S, class Ev>
TESSEL_FORCEINLINE void prefetch_ahead(Ev const& ev, index_t at, index_t count) {
  constexpr index_t ahead = prefetch_bytes / index_t(sizeof(S));
  for (index_t k = 0; k < count; k += line_elements<S>) prefetch_leaves(ev, at + ahead + k);
}

// Streaming stores are weakly ordered: fenced before the run's values are published to another
// thread (the team's barrier) or read back.
inline void stream_fence() {
#if defined(EIGEN_VECTORIZE_SSE)
  _mm_sfence();
#endif
}

// Runs shorter than this many bytes keep ordinary stores: a streaming store of a partial line
// costs a partial write to memory.
inline constexpr index_t stream_min_run_bytes = 4096;

#if defined(EIGEN_VECTORIZE_AVX512)
inline constexpr index_t packet_unroll = 4;
#else
inline constexpr index_t packet_unroll = 1;
#endif

// dst(i) = ev(i) for i in [begin, end) of the innermost mode. Stream (contiguous destinations of
// S only): full packets at packet-aligned addresses go out as streaming stores; the elements
// before the first such address take the partial-packet path, which computes them with the same
// packet code, so the values do not depend on the destination's alignment.
template <class S, bool Contiguous, bool Stream = false, class D, class Ev>
void packet_run(D const& dst_in, Ev const& ev_in, index_t begin, index_t end) {
  // Local copies: the packet stores may alias anything, so pointers read through the arguments
  // would be reloaded after every store; locals whose address is never taken stay in registers.
  D const dst = dst_in;
  Ev const ev = ev_in;
  constexpr index_t W = packet_width<S>;
  constexpr Load L = Contiguous ? Load::contiguous : Load::general;
  index_t i = begin;
  if constexpr (Stream) {
    static_assert(Contiguous && std::is_same_v<typename D::element_type, S>,
                  "tessel: streaming stores need a contiguous destination of the packet's type.");
    if ((end - begin) * index_t(sizeof(S)) < stream_min_run_bytes) {
      packet_run<S, Contiguous>(dst, ev, begin, end);
      return;
    }
    constexpr auto align = sizeof(packet_t<S>);
    auto const offset = reinterpret_cast<std::uintptr_t>(dst.ptr + i) % align;
    if (offset % sizeof(S) != 0) {  // not even element-aligned: no aligned packet anywhere
      packet_run<S, Contiguous>(dst, ev, begin, end);
      return;
    }
    if (offset != 0) {
      index_t const head = index_t((align - offset) / sizeof(S));
      pstore<Load::tail, S>(dst, i, peval<Load::tail, S>(ev, i, head), head);
      i += head;
    }
  }
  auto const store = [&](index_t at, packet_t<S> const& p) TESSEL_INLINE_LAMBDA {
    if constexpr (Stream)
      pstream(dst.ptr + at, p);
    else
      pstore<L, S>(dst, at, p, W);
  };
  // A streamed run is larger than the last-level cache, so its leaves come from memory too: each
  // block of packets prefetches the lines its leaves will read prefetch_bytes ahead. The
  // hardware prefetcher alone leaves one core short of the loads in flight that two or three
  // input streams need (tools/bench/host_expr_bench.cpp Fused: 0.71-0.74x the time with it).
  constexpr index_t line = line_elements<S>;
  auto const prefetch = [&](index_t at, index_t count) TESSEL_INLINE_LAMBDA {
    if constexpr (Stream && prefetch_bytes > 0) prefetch_ahead<S>(ev, at, count);
  };
  // Several independent packets per iteration where the register file holds them (AVX-512 has
  // 32 vector registers); with SSE's 16 the unrolled exp spills and runs slower (measured with
  // tools/bench/host_expr_bench.cpp).
  if constexpr (packet_unroll > 1) {
    for (; i + packet_unroll * W <= end; i += packet_unroll * W) {
      prefetch(i, packet_unroll * W);
      [&]<std::size_t... U>(std::index_sequence<U...>) TESSEL_INLINE_LAMBDA {
        packet_t<S> const p[] = {peval<L, S>(ev, i + index_t(U) * W, W)...};
        (store(i + index_t(U) * W, p[U]), ...);
      }
      (std::make_index_sequence<packet_unroll>{});
    }
  } else if constexpr (Stream && W < line) {
    for (; i + line <= end; i += line) {  // a line's packets, one after another
      prefetch(i, line);
      for (index_t u = 0; u < line; u += W) store(i + u, peval<L, S>(ev, i + u, W));
    }
  }
  for (; i + W <= end; i += W) store(i, peval<L, S>(ev, i, W));
  if (i < end) pstore<Load::tail, S>(dst, i, peval<Load::tail, S>(ev, i, end - i), end - i);
  if constexpr (Stream) stream_fence();
}

// ---- column reductions ----

// sums[j] = the sum over `positions` steps along loop mode `along` of across(j), j in [0, width),
// each in order from 0: lane l of the packet at j0 adds output j0 + l's terms, so every output has
// the bits of a scalar loop. across reads the outputs with its leaves' inner strides (each 0 or 1:
// the kept mode of exec/host.hpp's reduce_tile). sums is aligned to a packet and holds width
// rounded up to whole packets.
// @pre packetizable_v<Ev, S>
template <class S, class Ev>
void tile_sums(Ev across, index_t along, index_t positions, index_t width, S* sums) {
  using P = packet_t<S>;
  constexpr index_t W = packet_width<S>;
  index_t const full = width / W, rest = width % W, packets = full + (rest > 0 ? 1 : 0);
  for (index_t p = 0; p < packets; ++p) ei::pstore(sums + p * W, ei::pzero(P{}));
  for (index_t i = 0; i < positions; ++i) {
    for (index_t p = 0; p < full; ++p)
      ei::pstore(sums + p * W,
                 ei::padd(ei::pload<P>(sums + p * W), peval<Load::general, S>(across, p * W, W)));
    if (rest > 0)
      ei::pstore(sums + full * W, ei::padd(ei::pload<P>(sums + full * W),
                                           peval<Load::tail, S>(across, full * W, rest)));
    across.advance(along, 1);
  }
}

// ---- row reductions ----

template <class P>
P lane_mask(index_t count) {
  using S = typename ei::unpacket_traits<P>::type;
  return ei::pcmp_lt(ei::plset<P>(S(0)), ei::pset1<P>(static_cast<S>(count)));
}

// Op has a packet form (its trait, exec/body/reduce_ops.hpp) and reduces elements of type S.
template <class S, class Op>
constexpr bool packet_reducible() {
  if constexpr (Op::packet_form == PacketForm::none)
    return false;
  else
    return vectorizable_v<S> && std::is_same_v<typename Op::value_type, S>;
}
template <class S, class Op>
inline constexpr bool packet_reducible_v = packet_reducible<S, Op>();

// Runs ev over [begin, end) of the innermost mode in packets: feed(x) for every full packet,
// feed(pselect(mask, x, identity)) for the tail.
template <class S, bool Contiguous, class Ev, class Feed>
void packet_scan(Ev const& ev, index_t begin, index_t end, S identity, Feed&& feed) {
  using P = packet_t<S>;
  constexpr index_t W = packet_width<S>;
  constexpr Load L = Contiguous ? Load::contiguous : Load::general;
  index_t i = begin;
  for (; i + 4 * W <= end; i += 4 * W) {
    if constexpr (Contiguous && prefetch_bytes > 0) prefetch_ahead<S>(ev, i, 4 * W);
    feed(peval<L, S>(ev, i, W), peval<L, S>(ev, i + W, W), peval<L, S>(ev, i + 2 * W, W),
         peval<L, S>(ev, i + 3 * W, W));
  }
  P const id = ei::pset1<P>(identity);
  for (; i + W <= end; i += W) feed(peval<L, S>(ev, i, W), id, id, id);
  if (i < end)
    feed(ei::pselect(lane_mask<P>(end - i), peval<Load::tail, S>(ev, i, end - i), id), id, id, id);
}

// The partial state of op over ev(i), i in [begin, end), computed in packets of S.
// @pre packet_reducible_v<S, Op> and packetizable_v<Ev, S>
template <class S, bool Contiguous, class Op, class Ev>
typename Op::state_type packet_reduce_run(Op const& op, Ev const& ev, index_t begin, index_t end) {
  using P = packet_t<S>;
  constexpr index_t W = packet_width<S>;
  alignas(64) S a[W];
  if constexpr (Op::packet_form == PacketForm::sum) {
    P acc[4] = {ei::pzero(P{}), ei::pzero(P{}), ei::pzero(P{}), ei::pzero(P{})};
    packet_scan<S, Contiguous>(ev, begin, end, S(0),
                               [&](P x0, P x1, P x2, P x3) TESSEL_INLINE_LAMBDA {
                                 acc[0] = ei::padd(acc[0], x0);
                                 acc[1] = ei::padd(acc[1], x1);
                                 acc[2] = ei::padd(acc[2], x2);
                                 acc[3] = ei::padd(acc[3], x3);
                               });
    return ei::predux(ei::padd(ei::padd(acc[0], acc[1]), ei::padd(acc[2], acc[3])));
  } else if constexpr (Op::packet_form == PacketForm::max || Op::packet_form == PacketForm::min) {
    constexpr bool is_max = Op::packet_form == PacketForm::max;
    auto combine = [](P const& u, P const& v) {
      if constexpr (is_max) {
        return ei::pmax<Eigen::PropagateNaN>(u, v);
      } else {
        return ei::pmin<Eigen::PropagateNaN>(u, v);
      }
    };
    P const id = ei::pset1<P>(op.identity());
    P acc[4] = {id, id, id, id};
    packet_scan<S, Contiguous>(ev, begin, end, op.identity(),
                               [&](P x0, P x1, P x2, P x3) TESSEL_INLINE_LAMBDA {
                                 acc[0] = combine(acc[0], x0);
                                 acc[1] = combine(acc[1], x1);
                                 acc[2] = combine(acc[2], x2);
                                 acc[3] = combine(acc[3], x3);
                               });
    ei::pstore(a, combine(combine(acc[0], acc[1]), combine(acc[2], acc[3])));
    S s = op.identity();
    for (index_t l = 0; l < W; ++l) s = op(s, a[l]);
    return s;
  } else {
    static_assert(Op::packet_form == PacketForm::logsumexp,
                  "tessel: internal: no packet reduction for this operator.");
    // Per lane: a running max m and a sum s of exp(x - sh), sh = shift(m) (m when finite, else
    // 0). A group of four packets rescales s only when some lane's maximum grows, so after the
    // first groups of a row there is one exp per element. A NaN never raises m (comparisons with
    // NaN are false) but makes that lane's s NaN for good, which finalize turns into NaN.
    // A lane whose maximum is still -inf has its sum set to 0 at the end.
    P const zero = ei::pzero(P{});
    P const inf = ei::pset1<P>(std::numeric_limits<S>::infinity());
    P const minus_inf = ei::pset1<P>(-std::numeric_limits<S>::infinity());
    P m = minus_inf;
    P sh = zero;
    P s = zero;
    packet_scan<S, Contiguous>(
        ev, begin, end, -std::numeric_limits<S>::infinity(),
        [&](P x0, P x1, P x2, P x3) TESSEL_INLINE_LAMBDA {
          P const mx = ei::pmax(ei::pmax(x0, x1), ei::pmax(x2, x3));
          P const grow = ei::pcmp_lt(m, mx);
          if (ei::predux_any(grow)) {
            P const mn = ei::pselect(grow, mx, m);
            P const nsh = ei::pselect(ei::pcmp_lt(ei::pabs(mn), inf), mn, zero);
            s = ei::pmul(s, exp_packet(ei::psub(m, nsh)));
            m = mn;
            sh = nsh;
          }
          P const e01 = ei::padd(exp_packet(ei::psub(x0, sh)), exp_packet(ei::psub(x1, sh)));
          P const e23 = ei::padd(exp_packet(ei::psub(x2, sh)), exp_packet(ei::psub(x3, sh)));
          s = ei::padd(s, ei::padd(e01, e23));
        });
    s = ei::pandnot(s, ei::pcmp_eq(m, minus_inf));
    alignas(64) S sl[W];
    ei::pstore(a, m);
    ei::pstore(sl, s);
    LseState<S> st = op.identity();
    for (index_t l = 0; l < W; ++l) st = op(st, LseState<S>{a[l], sl[l]});
    return st;
  }
}

}  // namespace tessel::exec::host

#endif  // __CUDACC__
