// The row bodies of top-k selection: in every scope, keep the k members with the highest scores —
// exactly k, ties to the lower index (row-major in the scope), NaN below every number. Written
// once over an execution context (exec/body/context.hpp): the host runs them through
// exec::for_each_row with one lane per row, the CUDA executor with a block of 256 lanes per row.
//
// Two regimes, picked by the scope size n (the same for every row, so the lanes of a row agree):
//   n <= small_scope   a row is a batch of small_scopes_per_row scopes and each lane ranks whole
//                      scopes in registers: member i is kept when fewer than k members rank
//                      before it. n^2 comparisons per scope, no cooperation (N:M groups, 2:4).
//   n >  small_scope   a row is one scope and its lanes select together on the scores' order
//                      keys (order_key: an unsigned integer that orders like the scores): the
//                      range of the keys, then a binary search for the k-th key one bit at a time
//                      (each step a count combined by ctx.reduce), stopping as soon as the
//                      members above the search's prefix are exactly the ones to keep; a tie at
//                      the k-th key is cut by index with a second binary search. The scores are
//                      read once per step instead of being copied, so no scratch is needed.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../../core/config.hpp"
#include "../../expr/element.hpp"
#include "../../expr/scalar_math.hpp"
#include "scope_offsets.hpp"

namespace tessel::detail {

// Scopes of at most this many members are ranked by one lane each.
inline constexpr index_t small_scope = 32;
// Scopes per row in the small regime: one per thread of the CUDA row kernel's 256-thread block.
inline constexpr index_t small_scopes_per_row = 256;

// The unsigned type of a score's order key.
template <class C>
using order_key_t = std::conditional_t<sizeof(C) == 8, std::uint64_t, std::uint32_t>;

// An unsigned key in the order top-k ranks scores: a > b iff key(a) > key(b), equal keys for equal
// values (-0.0 and 0.0 included), and every NaN the key 0, below every number (-inf included).
// Members with equal keys rank by index, the lower first.
template <class C>
TESSEL_HOST_DEVICE constexpr order_key_t<C> order_key(C x) {
  using K = order_key_t<C>;
  constexpr K top = K{1} << (sizeof(K) * 8 - 1);
  if constexpr (std::is_floating_point_v<C>) {
    static_assert(sizeof(C) == sizeof(K), "tessel: order keys cover float and double scores.");
    if (x != x) return K{0};
    K const u = std::bit_cast<K>(static_cast<C>(x + C{0}));  // -0.0 + 0.0 is +0.0
    // Negative: all bits flipped; otherwise the sign bit set. Branch-free: signs are random.
    K const flip = static_cast<K>(K{0} - (u >> (sizeof(K) * 8 - 1))) | top;
    return static_cast<K>(u ^ flip);  // never 0: -inf becomes 0x007fffff (float)
  } else if constexpr (std::is_same_v<C, bool>) {
    return static_cast<K>(x);
  } else if constexpr (std::is_signed_v<C>) {
    return static_cast<K>(static_cast<std::make_signed_t<K>>(x)) ^ top;
  } else {
    return static_cast<K>(x);
  }
}

struct Plus {
  template <class T>
  TESSEL_HOST_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};

// The smallest and largest key among some members.
template <class K>
struct KeyRange {
  K lo;
  K hi;
};
struct WidenRange {
  template <class K>
  TESSEL_HOST_DEVICE KeyRange<K> operator()(KeyRange<K> a, KeyRange<K> b) const {
    return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
};

// The position of the highest set bit of x != 0.
template <class K>
TESSEL_HOST_DEVICE constexpr int top_bit(K x) {
  int b = 0;
  while (x >>= 1) ++b;
  return b;
}

// |x| in S.
template <class S, class T>
TESSEL_HOST_DEVICE constexpr S abs_in(T const& x) {
  return math::abs(static_cast<S>(load_element(x)));
}

// Score readers: scope(s) gives a cursor to scope s (its first element in each tensor read), and
// reader(cursor, i) the score of member i.

// Scores read as they are, in their compute type (half and bfloat16 compare as float).
template <class T, std::size_t R>
struct SourceScores {
  using value_type = compute_t<std::remove_cv_t<T>>;
  using Cursor = T const*;
  ScopeSource<T const, R> source;
  TESSEL_HOST_DEVICE Cursor scope(index_t s) const { return source.base(s); }
  TESSEL_HOST_DEVICE value_type operator()(Cursor c, index_t i) const {
    return load_element(source.at(c, i));
  }
};

// |t0| + |t1| + ... at the same coordinate of coupled tensors, in S, added left to right.
template <class S, std::size_t R, class... Ts>
struct AbsSumScores;
template <class S, std::size_t R, class T>
struct AbsSumScores<S, R, T> {
  using value_type = S;
  using Cursor = T const*;
  ScopeSource<T const, R> source;
  TESSEL_HOST_DEVICE Cursor scope(index_t s) const { return source.base(s); }
  TESSEL_HOST_DEVICE void add(S& acc, Cursor c, index_t i) const {
    acc += abs_in<S>(source.at(c, i));
  }
  TESSEL_HOST_DEVICE S operator()(Cursor c, index_t i) const { return abs_in<S>(source.at(c, i)); }
};
template <class S, std::size_t R, class T, class U, class... Ts>
struct AbsSumScores<S, R, T, U, Ts...> {
  using value_type = S;
  using Rest = AbsSumScores<S, R, U, Ts...>;
  struct Cursor {
    T const* base;
    typename Rest::Cursor rest;
  };
  ScopeSource<T const, R> source;
  Rest rest;
  TESSEL_HOST_DEVICE Cursor scope(index_t s) const { return {source.base(s), rest.scope(s)}; }
  TESSEL_HOST_DEVICE void add(S& acc, Cursor const& c, index_t i) const {
    acc += abs_in<S>(source.at(c.base, i));
    rest.add(acc, c.rest, i);
  }
  TESSEL_HOST_DEVICE S operator()(Cursor const& c, index_t i) const {
    S acc = abs_in<S>(source.at(c.base, i));
    rest.add(acc, c.rest, i);
    return acc;
  }
};

template <class S, std::size_t R, class T>
AbsSumScores<S, R, T> abs_sum_scores(ScopeSource<T const, R> const& s) {
  return {s};
}
template <class S, std::size_t R, class T, class U, class... Ts>
AbsSumScores<S, R, T, U, Ts...> abs_sum_scores(ScopeSource<T const, R> const& s,
                                               ScopeSource<U const, R> const& next,
                                               ScopeSource<Ts const, R> const&... more) {
  return {s, abs_sum_scores<S>(next, more...)};
}

// keep(s, i) = whether member i of scope s is among the k best of its scope, for every member.
// Scores: a reader over the scopes (above); keep: the mask seen with the same scopes. Members: the
// scope size n, an Int<N> when the scope shape is static (the loops over a scope then unroll).
// @pre 0 <= k <= n; the scores do not change while the body runs
template <class Scores, std::size_t R, Integer Members = index_t>
struct TopkRows {
  Scores scores;
  ScopeSource<bool, R> keep;
  index_t scopes = 0;
  [[no_unique_address]] Members n{};
  index_t k = 0;

  using value_type = typename Scores::value_type;
  using Key = order_key_t<value_type>;

  bool small() const { return to_index(n) <= small_scope; }
  index_t rows() const {
    return small() ? (scopes + small_scopes_per_row - 1) / small_scopes_per_row : scopes;
  }
  // Elements read per row (for the host executor's thread decision).
  index_t row_work() const { return small() ? small_scopes_per_row * to_index(n) : to_index(n); }

  template <class Ctx>
  TESSEL_HOST_DEVICE void operator()(Ctx const& ctx, index_t row) const {
    if constexpr (StaticInt<Members>) {
      if constexpr (Members::value <= small_scope)
        rank_scopes(ctx, row);
      else
        select(ctx, row);
    } else {
      if (n <= small_scope)
        rank_scopes(ctx, row);
      else
        select(ctx, row);
    }
  }

 private:
  // Member i is kept when fewer than k members rank before it (a higher key, or the same key
  // and a lower index).
  template <class Ctx>
  TESSEL_HOST_DEVICE void rank_scopes(Ctx const& ctx, index_t row) const {
    index_t const first = row * small_scopes_per_row;
    index_t const last =
        first + small_scopes_per_row < scopes ? first + small_scopes_per_row : scopes;
    for (index_t s = first + ctx.lane(); s < last; s += ctx.lanes()) {
      auto const c = scores.scope(s);
      Key key[small_scope];
      for (index_t i = 0; i < n; ++i) key[i] = order_key(scores(c, i));
      bool kept[small_scope];
      for (index_t i = 0; i < n; ++i) {
        index_t before = 0;
        for (index_t j = 0; j < i; ++j) before += key[j] >= key[i] ? 1 : 0;
        for (index_t j = i + 1; j < n; ++j) before += key[j] > key[i] ? 1 : 0;
        kept[i] = before < k;
      }
      bool* const out = keep.base(s);
      for (index_t i = 0; i < n; ++i) keep.at(out, i) = kept[i];
    }
  }

  // Members of the scope at c whose key shifted right by `bit` equals `want`.
  template <class Ctx, class Cursor>
  TESSEL_HOST_DEVICE index_t count_prefix(Ctx const& ctx, Cursor const& c, int bit,
                                          Key want) const {
    index_t count = 0;
    for (index_t i = ctx.lane(); i < n; i += ctx.lanes())
      count += (order_key(scores(c, i)) >> bit) == want ? 1 : 0;
    return ctx.reduce(count, Plus{});
  }

  template <class Ctx>
  TESSEL_HOST_DEVICE void select(Ctx const& ctx, index_t s) const {
    auto const c = scores.scope(s);
    bool* const out = keep.base(s);
    if (k == 0 || k == n) {
      for (index_t i = ctx.lane(); i < n; i += ctx.lanes()) keep.at(out, i) = k != 0;
      return;
    }
    KeyRange<Key> part{static_cast<Key>(~Key{0}), Key{0}};
    for (index_t i = ctx.lane(); i < n; i += ctx.lanes()) {
      Key const x = order_key(scores(c, i));
      part = WidenRange{}(part, KeyRange<Key>{x, x});
    }
    KeyRange<Key> const range = ctx.reduce(part, WidenRange{});
    // Invariant: the candidates (keys equal to prefix on bits >= bit) number `candidates`, every
    // key above them is kept, and `need` of the candidates are kept too.
    Key prefix = range.lo;
    int bit = 0;
    index_t need = k, candidates = n;
    if (range.lo != range.hi) {
      int const top = top_bit(static_cast<Key>(range.lo ^ range.hi));
      // The bits above `top` are common to every key (a shift by the full width would be UB).
      prefix = top + 1 < static_cast<int>(sizeof(Key) * 8)
                   ? static_cast<Key>(range.hi & ~((Key{1} << (top + 1)) - 1))
                   : Key{0};
      for (bit = top;; --bit) {
        index_t const above = count_prefix(ctx, c, bit, static_cast<Key>((prefix >> bit) | 1));
        if (above >= need) {
          prefix |= Key{1} << bit;
          candidates = above;
        } else {
          need -= above;
          candidates -= above;
        }
        if (candidates == need || bit == 0) break;
      }
    }
    if (candidates == need) {
      for (index_t i = ctx.lane(); i < n; i += ctx.lanes())
        keep.at(out, i) = (order_key(scores(c, i)) >> bit) >= (prefix >> bit);
      return;
    }
    // A tie at the k-th key (prefix, all bits decided): the first `need` tied members by index.
    index_t lo = 1, hi = n;  // the smallest cut with `need` tied members below it
    while (lo < hi) {
      index_t const mid = lo + (hi - lo) / 2;
      index_t count = 0;
      for (index_t i = ctx.lane(); i < mid; i += ctx.lanes())
        count += order_key(scores(c, i)) == prefix ? 1 : 0;
      if (ctx.reduce(count, Plus{}) >= need)
        hi = mid;
      else
        lo = mid + 1;
    }
    for (index_t i = ctx.lane(); i < n; i += ctx.lanes()) {
      Key const x = order_key(scores(c, i));
      keep.at(out, i) = x > prefix || (x == prefix && i < lo);
    }
  }
};

}  // namespace tessel::detail
