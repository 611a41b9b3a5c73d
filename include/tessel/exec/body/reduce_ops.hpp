// The arithmetic of every reduction, as operators a kernel body applies per element (update) and
// per pair of partials (combine, which is the operator's call operator, so it can be handed to a
// block reduction). Each has identity(), update(state, x, index), operator()(a, b) and
// finalize(state, n); PairOp runs two of them in one pass. Host and device code alike.
#pragma once

#include <limits>
#include <type_traits>

#include "../../core/config.hpp"
#include "../../expr/reduce.hpp"
#include "../../expr/scalar_math.hpp"

namespace tessel::exec {

// How the host's packet path reduces an operator (exec/host/packet.hpp): with packet additions,
// packet maxima / minima, the per-lane online logsumexp, or not at all (the scalar body then).
enum class PacketForm { none, sum, max, min, logsumexp };

// Sum in T (the result type: 64-bit integers, or the floating type).
template <class T>
struct SumOp {
  using value_type = T;  // the element type it reduces
  static constexpr PacketForm packet_form = PacketForm::sum;
  using state_type = T;
  TESSEL_HOST_DEVICE constexpr T identity() const { return T(0); }
  template <class V>
  TESSEL_HOST_DEVICE constexpr T update(T s, V x, index_t) const {
    return s + static_cast<T>(x);
  }
  TESSEL_HOST_DEVICE constexpr T operator()(T a, T b) const { return a + b; }
  TESSEL_HOST_DEVICE constexpr T finalize(T s, index_t) const { return s; }
};

// Mean: a sum in the floating type T divided by the count (NaN for an empty mode).
template <class T>
struct MeanOp {
  using value_type = T;  // the element type it reduces
  static constexpr PacketForm packet_form = PacketForm::sum;
  using state_type = T;
  TESSEL_HOST_DEVICE constexpr T identity() const { return T(0); }
  template <class V>
  TESSEL_HOST_DEVICE constexpr T update(T s, V x, index_t) const {
    return s + static_cast<T>(x);
  }
  TESSEL_HOST_DEVICE constexpr T operator()(T a, T b) const { return a + b; }
  TESSEL_HOST_DEVICE constexpr T finalize(T s, index_t n) const { return s / static_cast<T>(n); }
};

template <class T>
TESSEL_HOST_DEVICE constexpr T lowest_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}
template <class T>
TESSEL_HOST_DEVICE constexpr T highest_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::max();
  }
}

// Maximum; NaN propagates. The identity is -inf (the lowest value for integers).
template <class T>
struct MaxOp {
  using value_type = T;  // the element type it reduces
  static constexpr PacketForm packet_form = PacketForm::max;
  using state_type = T;
  TESSEL_HOST_DEVICE constexpr T identity() const { return lowest_value<T>(); }
  TESSEL_HOST_DEVICE constexpr T update(T s, T x, index_t) const { return math::max(s, x); }
  TESSEL_HOST_DEVICE constexpr T operator()(T a, T b) const { return math::max(a, b); }
  TESSEL_HOST_DEVICE constexpr T finalize(T s, index_t) const { return s; }
};

// Minimum; NaN propagates.
template <class T>
struct MinOp {
  using value_type = T;  // the element type it reduces
  static constexpr PacketForm packet_form = PacketForm::min;
  using state_type = T;
  TESSEL_HOST_DEVICE constexpr T identity() const { return highest_value<T>(); }
  TESSEL_HOST_DEVICE constexpr T update(T s, T x, index_t) const { return math::min(s, x); }
  TESSEL_HOST_DEVICE constexpr T operator()(T a, T b) const { return math::min(a, b); }
  TESSEL_HOST_DEVICE constexpr T finalize(T s, index_t) const { return s; }
};

template <class T>
struct ArgState {
  T value;
  index_t index;  // -1: no element seen
};

// Index of the maximum. Ties go to the lowest index; a NaN is larger than everything (the first
// NaN wins), as torch.argmax does. An empty mode gives -1.
template <class T>
struct ArgmaxOp {
  using value_type = T;  // the element type it reduces
  static constexpr PacketForm packet_form = PacketForm::none;
  using state_type = ArgState<T>;
  TESSEL_HOST_DEVICE constexpr ArgState<T> identity() const { return {lowest_value<T>(), -1}; }
  TESSEL_HOST_DEVICE constexpr ArgState<T> update(ArgState<T> s, T x, index_t i) const {
    return (*this)(s, ArgState<T>{x, i});
  }
  // Commutative and associative, so any combination order gives the same answer.
  TESSEL_HOST_DEVICE constexpr ArgState<T> operator()(ArgState<T> a, ArgState<T> b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    bool const a_nan = math::isnan(a.value), b_nan = math::isnan(b.value);
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan && a.value != b.value) return a.value > b.value ? a : b;
    return a.index <= b.index ? a : b;
  }
  TESSEL_HOST_DEVICE constexpr index_t finalize(ArgState<T> s, index_t) const { return s.index; }
};

template <class T>
struct LseState {
  T max;  // the largest element so far (NaN once a NaN was seen)
  T sum;  // sum of exp(x - shift(max)); shift(m) is m when finite, else 0
};

// log(sum(exp(x))) in one pass: a running maximum m and a sum s of exp(x - m), rescaled by
// exp(m_old - m_new) whenever the maximum grows. Shifting by 0 instead of a non-finite maximum
// keeps -inf rows at -inf (not NaN) and makes any +inf element give +inf.
// @post finalize(state) == log(sum_i exp(x_i)) up to rounding; -inf for no element or all -inf
template <class T>
struct LogSumExpOp {
  using value_type = T;  // the element type it reduces
  static constexpr PacketForm packet_form = PacketForm::logsumexp;
  static_assert(std::is_floating_point_v<T>, "tessel: logsumexp computes in a floating type.");
  using state_type = LseState<T>;

  TESSEL_HOST_DEVICE static constexpr T shift(T m) { return math::isfinite(m) ? m : T(0); }

  TESSEL_HOST_DEVICE constexpr LseState<T> identity() const { return {-math::infinity<T>(), T(0)}; }
  // One exp per element: only the branch that raises the maximum rescales. Below the maximum no
  // shift is needed (the maximum is then > -inf; an infinite one has made the sum +inf already,
  // which adding exp(x - inf) = 0 leaves as it is), so the common case is a compare and an exp.
  TESSEL_HOST_DEVICE LseState<T> update(LseState<T> s, T x, index_t) const {
    if (x < s.max) {
      s.sum += math::exp(x - s.max);
      return s;
    }
    // x >= max (a tie adds exp(0) = 1, as the branch above would), or either is NaN (then the sum
    // becomes NaN and stays NaN).
    T const sh = shift(x);
    s.sum = math::rounded_product(s.sum, math::exp(s.max - sh)) + math::exp(x - sh);
    s.max = math::isnan(s.max) ? s.max : x;
    return s;
  }
  // Merge of two partials: both sums rescaled to the larger maximum.
  TESSEL_HOST_DEVICE LseState<T> operator()(LseState<T> a, LseState<T> b) const {
    T const m = math::max(a.max, b.max);
    T const sh = shift(m);
    return {m, math::rounded_product(a.sum, math::exp(a.max - sh)) +
                   math::rounded_product(b.sum, math::exp(b.max - sh))};
  }
  TESSEL_HOST_DEVICE T finalize(LseState<T> s, index_t) const {
    return shift(s.max) + math::log(s.sum);
  }
};

template <class A, class B>
struct Pair {
  A first;
  B second;
};

template <class T>
struct MomentState {
  T max;       // as LseState
  T sum;       // sum of exp(x - shift(max))
  T weighted;  // sum of exp(x - shift(max)) * x
};

// logsumexp and the softmax-weighted mean sum_i p_i x_i (p = softmax(x)) in one pass: the online
// logsumexp with a second sum rescaled alongside. FLCE's entropy is lse - mean. An element whose
// exponential is 0 (x = -inf) adds nothing to the weighted sum (not 0 * -inf).
// @post finalize(state) == Pair{logsumexp(x), sum_i softmax(x)_i x_i} up to rounding
template <class T>
struct SoftmaxMomentOp {
  using value_type = T;
  static constexpr PacketForm packet_form = PacketForm::none;
  static_assert(std::is_floating_point_v<T>, "tessel: softmax moments compute in a floating type.");
  using state_type = MomentState<T>;

  TESSEL_HOST_DEVICE static constexpr T shift(T m) { return LogSumExpOp<T>::shift(m); }
  TESSEL_HOST_DEVICE static T weighted_term(T e, T x) {
    return e != T(0) ? math::rounded_product(e, x) : T(0);
  }

  TESSEL_HOST_DEVICE constexpr MomentState<T> identity() const {
    return {-math::infinity<T>(), T(0), T(0)};
  }
  TESSEL_HOST_DEVICE MomentState<T> update(MomentState<T> s, T x, index_t) const {
    if (x < s.max) {
      T const e = math::exp(x - s.max);
      s.sum += e;
      s.weighted += weighted_term(e, x);
      return s;
    }
    T const sh = shift(x);
    T const f = math::exp(s.max - sh), e = math::exp(x - sh);
    s.sum = math::rounded_product(s.sum, f) + e;
    s.weighted = math::rounded_product(s.weighted, f) + weighted_term(e, x);
    s.max = math::isnan(s.max) ? s.max : x;
    return s;
  }
  TESSEL_HOST_DEVICE MomentState<T> operator()(MomentState<T> a, MomentState<T> b) const {
    T const m = math::max(a.max, b.max);
    T const sh = shift(m);
    T const fa = math::exp(a.max - sh), fb = math::exp(b.max - sh);
    return {m, math::rounded_product(a.sum, fa) + math::rounded_product(b.sum, fb),
            math::rounded_product(a.weighted, fa) + math::rounded_product(b.weighted, fb)};
  }
  TESSEL_HOST_DEVICE Pair<T, T> finalize(MomentState<T> s, index_t) const {
    return {shift(s.max) + math::log(s.sum), s.weighted / s.sum};
  }
};

template <class S, class T>
struct WithArgmaxState {
  S inner;          // the wrapped operator's state
  ArgState<T> arg;  // the running argmax
};

// Op (a reduction over elements of type T: exec's logsumexp or softmax moments) and the index of
// its largest element in the same sweep and the same lane reduction: FLCE's row predicts its
// argmax from the logits the online softmax reads, without a second pass. The index follows
// ArgmaxOp (ties to the lowest index, the first NaN wins); an empty row gives -1.
// @post finalize(s, n) == Pair{Op.finalize(s.inner, n), ArgmaxOp.finalize(s.arg, n)}
template <class Op>
struct WithArgmax {
  using value_type = typename Op::value_type;
  static constexpr PacketForm packet_form = PacketForm::none;
  using state_type = WithArgmaxState<typename Op::state_type, value_type>;

  Op op{};

  TESSEL_HOST_DEVICE constexpr state_type identity() const {
    return {op.identity(), ArgmaxOp<value_type>{}.identity()};
  }
  TESSEL_HOST_DEVICE state_type update(state_type s, value_type x, index_t i) const {
    return {op.update(s.inner, x, i), ArgmaxOp<value_type>{}.update(s.arg, x, i)};
  }
  TESSEL_HOST_DEVICE state_type operator()(state_type a, state_type b) const {
    return {op(a.inner, b.inner), ArgmaxOp<value_type>{}(a.arg, b.arg)};
  }
  TESSEL_HOST_DEVICE auto finalize(state_type s, index_t n) const {
    using R = decltype(op.finalize(s.inner, n));
    return Pair<R, index_t>{op.finalize(s.inner, n), ArgmaxOp<value_type>{}.finalize(s.arg, n)};
  }
};

// Two reductions in one pass and one lane reduction: an element is a Pair (a, b); a goes to OpA,
// b to OpB, and the state, the combination and the result are the pairs of theirs. FLCE's pass
// over a row of logits is PairOp<LogSumExpOp<C>, SumOp<C>>: the online logsumexp of z_j and the
// label-smoothing sum of w_j z_j, without a second loop or a second block reduction.
// @post finalize(s, n) == Pair{OpA.finalize(s.first, n), OpB.finalize(s.second, n)}
template <class OpA, class OpB>
struct PairOp {
  static constexpr PacketForm packet_form = PacketForm::none;
  using state_type = Pair<typename OpA::state_type, typename OpB::state_type>;

  OpA op_a{};
  OpB op_b{};

  TESSEL_HOST_DEVICE constexpr state_type identity() const {
    return {op_a.identity(), op_b.identity()};
  }
  template <class VA, class VB>
  TESSEL_HOST_DEVICE state_type update(state_type s, Pair<VA, VB> x, index_t i) const {
    return {op_a.update(s.first, x.first, i), op_b.update(s.second, x.second, i)};
  }
  TESSEL_HOST_DEVICE state_type operator()(state_type a, state_type b) const {
    return {op_a(a.first, b.first), op_b(a.second, b.second)};
  }
  TESSEL_HOST_DEVICE auto finalize(state_type s, index_t n) const {
    using RA = decltype(op_a.finalize(s.first, n));
    using RB = decltype(op_b.finalize(s.second, n));
    return Pair<RA, RB>{op_a.finalize(s.first, n), op_b.finalize(s.second, n)};
  }
};

namespace detail {

template <class Kind, class T>
struct reduce_op;
template <class T>
struct reduce_op<reduction::Sum, T> {
  using type = SumOp<typename tessel::detail::reduce_result<reduction::Sum, T>::type>;
};
template <class T>
struct reduce_op<reduction::Mean, T> {
  using type = MeanOp<floating_t<T>>;
};
template <class T>
struct reduce_op<reduction::Max, T> {
  using type = MaxOp<T>;
};
template <class T>
struct reduce_op<reduction::Min, T> {
  using type = MinOp<T>;
};
template <class T>
struct reduce_op<reduction::Argmax, T> {
  using type = ArgmaxOp<T>;
};
template <class T>
struct reduce_op<reduction::LogSumExp, T> {
  using type = LogSumExpOp<floating_t<T>>;
};

}  // namespace detail

// The operator of reduction Kind over elements of compute type T.
template <class Kind, class T>
using reduce_op_t = typename detail::reduce_op<Kind, T>::type;

}  // namespace tessel::exec
