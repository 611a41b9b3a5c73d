// Distributed Shampoo's small utility idioms in C++: selecting list entries by a mask
// (compress_list), element sizes of dtypes, the [begin, end) ranges of consecutive partitions
// (generate_pairwise_indices), fixed-size chunks of a range (batched), a zip over named ranges of
// equal length, and an RAII scope that calls an enter and an exit function on an object.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"

namespace tessel::shampoo {

// ---- compress_list ----

// The entries of `values` whose selector entry is true, in order (Python's itertools.compress,
// but a length mismatch is an error rather than a silent truncation).
// @pre size(values) == size(selector), else tessel::Error naming both lengths
template <std::ranges::sized_range R, std::ranges::sized_range S>
requires std::convertible_to < std::ranges::range_reference_t<S>,
bool > auto compress_list(R const& values, S const& selector) {
  using T = std::remove_cvref_t<std::ranges::range_reference_t<R const&>>;
  auto const n = std::ranges::size(values);
  auto const m = std::ranges::size(selector);
  if (n != m)
    tessel::detail::throw_error(
        tessel::detail::sentence("compress_list got ", n, " values but ", m,
                                 " selector entries; the lengths must be equal."));
  std::vector<T> out;
  auto s = std::ranges::begin(selector);
  for (auto const& v : values) {
    if (static_cast<bool>(*s)) out.push_back(v);
    ++s;
  }
  return out;
}

// ---- dtype sizes ----

// Bytes per element of a dtype (bool 1, f16/bf16 2, f32 4, f64 8, integers by width): the core's
// dtype_size, with an error instead of 0 for a value outside the enumeration.
inline std::size_t get_dtype_size(DType d) {
  std::size_t const bytes = dtype_size(d);
  if (bytes == 0)
    tessel::detail::throw_error(tessel::detail::sentence(
        "get_dtype_size got the value ", static_cast<int>(d), ", which is not a tessel::DType."));
  return bytes;
}

// ---- generate_pairwise_indices ----

// [begin, end) of each consecutive partition: (1, 3, 2) -> [0, 1) [1, 4) [4, 6). How the blocks of
// parameter i are found in the flat list of all blocks.
// @pre every size >= 0
template <std::ranges::input_range R>
requires std::integral<std::ranges::range_value_t<R>> std::vector<std::pair<index_t, index_t>>
generate_pairwise_indices(R const& sizes) {
  std::vector<std::pair<index_t, index_t>> out;
  index_t begin = 0;
  for (auto const s : sizes) {
    index_t const n = static_cast<index_t>(s);
    if (n < 0)
      tessel::detail::throw_error(tessel::detail::sentence(
          "generate_pairwise_indices got the negative size ", n, " at position ", out.size(), "."));
    out.emplace_back(begin, begin + n);
    begin += n;
  }
  return out;
}

// The same for a std::array, as a constant expression.
template <std::integral I, std::size_t N>
constexpr std::array<std::pair<index_t, index_t>, N> generate_pairwise_indices(
    std::array<I, N> const& sizes) {
  std::array<std::pair<index_t, index_t>, N> out{};
  index_t begin = 0;
  for (std::size_t i = 0; i < N; ++i) {
    out[i] = {begin, begin + static_cast<index_t>(sizes[i])};
    begin += static_cast<index_t>(sizes[i]);
  }
  return out;
}

// ---- batched ----

// Consecutive chunks of n elements (the last may be shorter), as subranges of `r` (Python 3.12's
// itertools.batched). No element is copied.
// @pre n >= 1, else tessel::Error
template <std::ranges::forward_range R>
requires std::ranges::borrowed_range<R> || std::is_lvalue_reference_v<R>
auto batched(R&& r, index_t n) {
  if (n < 1)
    tessel::detail::throw_error(
        tessel::detail::sentence("batched needs a batch size >= 1, got ", n, "."));
  using It = std::ranges::iterator_t<R>;
  std::vector<std::ranges::subrange<It>> out;
  auto it = std::ranges::begin(r);
  auto const end = std::ranges::end(r);
  while (it != end) {
    auto first = it;
    index_t k = 0;
    while (k < n && it != end) {
      ++it;
      ++k;
    }
    out.emplace_back(first, it);
  }
  return out;
}

// ---- zip over named ranges of equal length ----

// A range with a name, for error messages (Distributed Shampoo's DictZipIterator keys).
template <std::ranges::sized_range R>
struct Named {
  std::string_view name;
  R& range;
};

template <std::ranges::sized_range R>
Named<R> named(std::string_view name, R& range) {
  return {name, range};
}

// Iterates several ranges in lock step, yielding a tuple of references to their elements.
template <class... R>
class ZipView {
 public:
  explicit ZipView(R&... ranges) : ranges_(ranges...) {}

  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::tuple<std::ranges::range_reference_t<R>...>;
    using difference_type = std::ptrdiff_t;

    iterator() = default;
    explicit iterator(std::tuple<std::ranges::iterator_t<R>...> its) : its_(its) {}
    value_type operator*() const {
      return std::apply([](auto const&... it) { return value_type(*it...); }, its_);
    }
    iterator& operator++() {
      std::apply([](auto&... it) { (++it, ...); }, its_);
      return *this;
    }
    iterator operator++(int) {
      iterator t = *this;
      ++*this;
      return t;
    }
    // Lengths are equal, so the first iterator decides the end.
    friend bool operator==(iterator const& a, iterator const& b) {
      return std::get<0>(a.its_) == std::get<0>(b.its_);
    }

   private:
    std::tuple<std::ranges::iterator_t<R>...> its_{};
  };

  iterator begin() const {
    return iterator(std::apply(
        [](auto&... r) {
          return std::tuple<std::ranges::iterator_t<R>...>(std::ranges::begin(r)...);
        },
        ranges_));
  }
  iterator end() const {
    return iterator(std::apply(
        [](auto&... r) {
          return std::tuple<std::ranges::iterator_t<R>...>(std::ranges::end(r)...);
        },
        ranges_));
  }

 private:
  std::tuple<R&...> ranges_;
};

// Zips named ranges that must have the same length: `for (auto [f, r] : zip_named(named("factor",
// fs), named("root", rs)))`. A length mismatch is a tessel::Error naming each range and its length,
// raised before anything is visited.
template <class R0, class... R>
ZipView<R0, R...> zip_named(Named<R0> first, Named<R>... rest) {
  auto const n = std::ranges::size(first.range);
  bool const equal = ((std::ranges::size(rest.range) == n) && ...);
  if (!equal) {
    std::string lengths = tessel::detail::sentence(first.name, " has ", n);
    ((lengths += tessel::detail::sentence(", ", rest.name, " has ", std::ranges::size(rest.range))),
     ...);
    tessel::detail::throw_error(tessel::detail::sentence(
        "zip_named needs ranges of equal length, but ", lengths, " elements."));
  }
  return ZipView<R0, R...>(first.range, rest.range...);
}

// ---- enter/exit scope ----

// Calls enter(object) on construction and exit(object) on destruction, also when the scope is left
// by an exception (Distributed Shampoo's ParameterizeEnterExitContext).
// @pre exit does not throw (it runs in a destructor)
template <class T, class Enter, class Exit>
requires std::invocable<Enter&, T&> && std::invocable<Exit&, T&>
class EnterExitScope {
 public:
  EnterExitScope(T& object, Enter enter, Exit exit) : object_(&object), exit_(std::move(exit)) {
    enter(*object_);
  }
  EnterExitScope(EnterExitScope const&) = delete;
  EnterExitScope& operator=(EnterExitScope const&) = delete;
  ~EnterExitScope() { exit_(*object_); }

  T& get() const noexcept { return *object_; }

 private:
  T* object_;
  Exit exit_;
};

template <class T, class Enter, class Exit>
EnterExitScope<T, Enter, Exit> make_enter_exit_scope(T& object, Enter enter, Exit exit) {
  return EnterExitScope<T, Enter, Exit>(object, std::move(enter), std::move(exit));
}

}  // namespace tessel::shampoo
