// distribute_buffer_sizes: Distributed Shampoo's greedy assignment of parameter blocks to the ranks
// of a group, balancing the bytes of each rank's buffers. Constexpr for std::array input, so a
// static blocking plan carries its owner ranks as compile-time values.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/error.hpp"

namespace tessel::shampoo {

// Buffers are aligned to 64 bytes, as Distributed Shampoo's AlignedMemoryCostModel does.
inline constexpr index_t buffer_alignment = 64;

namespace detail {

// std::vector<T>(n, value) for the plans' constant evaluation. libstdc++ (12) fills a new
// vector's storage by assignment, which clang rejects in a constant expression (assignment to an
// object outside its lifetime), so clang over libstdc++ gets push_back, which constructs each
// element. GCC keeps the constructor: its evaluator runs the push_back loop slower (the 64-layer
// plan of tools/bench/compile_time took about 20% longer to compile).
template <class T>
constexpr std::vector<T> filled_vector(std::size_t n, T value) {
#if defined(__clang__) && defined(__GLIBCXX__)
  std::vector<T> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) v.push_back(value);
  return v;
#else
  return std::vector<T>(n, value);
#endif
}

TESSEL_HOST_DEVICE constexpr index_t align_up(index_t bytes) {
  return (bytes + buffer_alignment - 1) / buffer_alignment * buffer_alignment;
}

// The algorithm over plain arrays; `order` and `scratch` hold n entries, `load` group_size.
// Visits blocks by aligned size, largest first (a stable merge sort keeps ties in input order),
// and gives each to the rank with the least load so far (ties: the lower rank).
constexpr void distribute_into(index_t const* bytes, std::size_t n, index_t group_size,
                               index_t* aligned, index_t* ranks, std::size_t* order,
                               std::size_t* scratch, index_t* load) {
  for (std::size_t i = 0; i < n; ++i) {
    aligned[i] = align_up(bytes[i]);
    order[i] = i;
  }
  // Bottom-up merge sort: O(n log n) for the thousands of blocks of a large model, and usable in
  // constant expressions (std::stable_sort is not constexpr).
  for (std::size_t width = 1; width < n; width *= 2) {
    for (std::size_t lo = 0; lo < n; lo += 2 * width) {
      std::size_t const mid = lo + width < n ? lo + width : n;
      std::size_t const hi = mid + width < n ? mid + width : n;
      std::size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        scratch[k++] = aligned[order[j]] > aligned[order[i]] ? order[j++] : order[i++];
      while (i < mid) scratch[k++] = order[i++];
      while (j < hi) scratch[k++] = order[j++];
    }
    for (std::size_t i = 0; i < n; ++i) order[i] = scratch[i];
  }
  for (index_t r = 0; r < group_size; ++r) load[r] = 0;
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t const i = order[k];
    index_t best = 0;
    for (index_t r = 1; r < group_size; ++r)
      if (load[r] < load[best]) best = r;
    load[best] += aligned[i];
    ranks[i] = best;
  }
}

inline void check_distribute_arguments(std::span<index_t const> bytes, index_t group_size) {
  if (group_size < 1)
    tessel::detail::throw_error(tessel::detail::sentence(
        "distribute_buffer_sizes needs a group size >= 1, got ", group_size, "."));
  for (std::size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] < 0)
      tessel::detail::throw_error(tessel::detail::sentence(
          "distribute_buffer_sizes got the negative size ", bytes[i], " at position ", i, "."));
}

}  // namespace detail

// (aligned_bytes, rank) for each block, in input order: sizes rounded up to a multiple of 64,
// blocks visited by aligned size descending (ties keep input order), each given to the rank with
// the least load so far (ties: the lower rank).
// @pre group_size >= 1 and every size >= 0 (tessel::Error otherwise)
inline std::vector<std::pair<index_t, index_t>> distribute_buffer_sizes(
    std::span<index_t const> byte_sizes, index_t group_size) {
  detail::check_distribute_arguments(byte_sizes, group_size);
  std::size_t const n = byte_sizes.size();
  std::vector<index_t> aligned(n), ranks(n), load(static_cast<std::size_t>(group_size));
  std::vector<std::size_t> order(n), scratch(n);
  detail::distribute_into(byte_sizes.data(), n, group_size, aligned.data(), ranks.data(),
                          order.data(), scratch.data(), load.data());
  std::vector<std::pair<index_t, index_t>> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = {aligned[i], ranks[i]};
  return out;
}

inline std::vector<std::pair<index_t, index_t>> distribute_buffer_sizes(
    std::vector<index_t> const& byte_sizes, index_t group_size) {
  return distribute_buffer_sizes(std::span<index_t const>(byte_sizes), group_size);
}

// The same as a constant expression for a std::array of sizes; in a constant expression a bad
// argument stops compilation.
template <std::size_t N>
constexpr std::array<std::pair<index_t, index_t>, N> distribute_buffer_sizes(
    std::array<index_t, N> const& byte_sizes, index_t group_size) {
  if (std::is_constant_evaluated()) {
    if (group_size < 1) throw "tessel: distribute_buffer_sizes needs a group size >= 1.";
    for (index_t b : byte_sizes)
      if (b < 0) throw "tessel: distribute_buffer_sizes got a negative size.";
  } else {
    detail::check_distribute_arguments(byte_sizes, group_size);
  }
  std::array<index_t, N> aligned{}, ranks{};
  std::array<std::size_t, N> order{}, scratch{};
  std::vector<index_t> load =
      detail::filled_vector(static_cast<std::size_t>(group_size), index_t{0});
  detail::distribute_into(byte_sizes.data(), N, group_size, aligned.data(), ranks.data(),
                          order.data(), scratch.data(), load.data());
  std::array<std::pair<index_t, index_t>, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = {aligned[i], ranks[i]};
  return out;
}

}  // namespace tessel::shampoo
