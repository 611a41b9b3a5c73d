// DynRankTuple<MaxRank>: a flat tuple of run-time integers whose rank is itself known only at run
// time (at most MaxRank). It is what a plan returns when its answer's rank depends on run-time
// values, e.g. merge_small_dims of a run-time shape.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "config.hpp"

namespace tessel {

template <std::size_t MaxRank>
struct DynRankTuple {
  static constexpr std::size_t max_rank = MaxRank;

  // Fixed capacity keeps the type literal, so the same value code runs in constant expressions.
  index_t values[MaxRank == 0 ? 1 : MaxRank]{};
  index_t count = 0;

  constexpr DynRankTuple() = default;
  TESSEL_HOST_DEVICE constexpr DynRankTuple(std::initializer_list<index_t> xs) {
    for (index_t x : xs) push_back(x);
  }

  TESSEL_HOST_DEVICE constexpr index_t rank() const noexcept { return count; }
  TESSEL_HOST_DEVICE constexpr bool empty() const noexcept { return count == 0; }
  TESSEL_HOST_DEVICE constexpr index_t operator[](index_t i) const noexcept { return values[i]; }
  TESSEL_HOST_DEVICE constexpr index_t& operator[](index_t i) noexcept { return values[i]; }
  TESSEL_HOST_DEVICE constexpr index_t back() const noexcept { return values[count - 1]; }
  TESSEL_HOST_DEVICE constexpr index_t& back() noexcept { return values[count - 1]; }
  // @pre rank() < MaxRank
  TESSEL_HOST_DEVICE constexpr void push_back(index_t x) noexcept { values[count++] = x; }
  TESSEL_HOST_DEVICE constexpr void reverse() noexcept {
    for (index_t i = 0, j = count - 1; i < j; ++i, --j) {
      index_t t = values[i];
      values[i] = values[j];
      values[j] = t;
    }
  }
  TESSEL_HOST_DEVICE constexpr index_t const* begin() const noexcept { return values; }
  TESSEL_HOST_DEVICE constexpr index_t const* end() const noexcept { return values + count; }

  template <std::size_t M>
  TESSEL_HOST_DEVICE friend constexpr bool operator==(DynRankTuple const& a,
                                                      DynRankTuple<M> const& b) {
    if (a.count != b.count) return false;
    for (index_t i = 0; i < a.count; ++i)
      if (a.values[i] != b.values[i]) return false;
    return true;
  }
};

}  // namespace tessel
