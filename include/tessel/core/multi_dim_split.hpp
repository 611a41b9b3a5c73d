// multi_dim_split(shape, split_size): cut a tensor into blocks of at most split_size per mode, in
// row-major block order (Distributed Shampoo's blocking). A zero extent gives one empty block along
// that mode; rank 0 gives one block. Run-time arguments give a random-access range of blocks;
// all-static arguments give a constexpr sequence whose blocks are types.
#pragma once

#include <cstddef>
#include <iterator>

#include "error.hpp"
#include "int_tuple.hpp"
#include "shape.hpp"
#include "static_lift.hpp"

namespace tessel {

// One block of a split: where it starts and how large it is, both flat IntTuples of the
// tensor's rank.
template <class Offset, class Extent>
struct Block {
  Offset offset;
  Extent shape;

  template <class O2, class E2>
  TESSEL_HOST_DEVICE friend constexpr bool operator==(Block const& a, Block<O2, E2> const& b) {
    return equal(a.offset, b.offset) && equal(a.shape, b.shape);
  }
};

namespace detail {

template <std::size_t R>
struct RepeatIndex {
  template <std::size_t... I>
  static auto make(std::index_sequence<I...>) -> tuple<decltype((void)I, index_t{})...>;
  using type = decltype(make(std::make_index_sequence<R>{}));
};

}  // namespace detail

// The blocks of a split, computed on demand: block i is the i-th in row-major block order.
// FixedRank: blocks are tuple<index_t x R> (the rank was static); otherwise DynRankTuple<R>.
template <std::size_t R, bool FixedRank>
class BlockGrid {
 public:
  using coord_type =
      std::conditional_t<FixedRank, typename detail::RepeatIndex<R>::type, DynRankTuple<R>>;
  using value_type = Block<coord_type, coord_type>;

  constexpr BlockGrid() = default;
  // @pre split_size > 0, extents >= 0
  TESSEL_HOST_DEVICE constexpr BlockGrid(DynRankTuple<R> const& extents, index_t split_size)
      : extents_(extents), split_(split_size) {
    count_ = 1;
    for (index_t k = 0; k < extents_.rank(); ++k) {
      index_t n = extents_[k] == 0 ? 1 : (extents_[k] + split_ - 1) / split_;
      per_mode_.push_back(n);
      count_ *= n;
    }
  }

  TESSEL_HOST_DEVICE constexpr std::size_t size() const noexcept {
    return static_cast<std::size_t>(count_);
  }
  TESSEL_HOST_DEVICE constexpr index_t split_size() const noexcept { return split_; }
  // Number of blocks along each mode.
  TESSEL_HOST_DEVICE constexpr DynRankTuple<R> const& blocks_per_mode() const noexcept {
    return per_mode_;
  }

  TESSEL_HOST_DEVICE constexpr value_type operator[](std::size_t i) const {
    DynRankTuple<R> offset{};
    DynRankTuple<R> extent{};
    offset.count = extent.count = extents_.rank();
    index_t rest = static_cast<index_t>(i);
    for (index_t k = extents_.rank() - 1; k >= 0; --k) {
      index_t j = rest % per_mode_[k];
      rest /= per_mode_[k];
      offset[k] = j * split_;
      index_t left = extents_[k] - offset[k];
      extent[k] = left < split_ ? left : split_;
    }
    if constexpr (FixedRank) {
      return value_type{to_fixed(offset), to_fixed(extent)};
    } else {
      return value_type{offset, extent};
    }
  }

  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = BlockGrid::value_type;
    using difference_type = std::ptrdiff_t;
    using reference = value_type;
    using pointer = void;

    constexpr iterator() = default;
    TESSEL_HOST_DEVICE constexpr iterator(BlockGrid const* grid, std::size_t i)
        : grid_(grid), i_(i) {}
    TESSEL_HOST_DEVICE constexpr value_type operator*() const { return (*grid_)[i_]; }
    TESSEL_HOST_DEVICE constexpr value_type operator[](difference_type n) const {
      return (*grid_)[i_ + static_cast<std::size_t>(n)];
    }
    TESSEL_HOST_DEVICE constexpr iterator& operator++() {
      ++i_;
      return *this;
    }
    TESSEL_HOST_DEVICE constexpr iterator operator++(int) {
      iterator t = *this;
      ++i_;
      return t;
    }
    TESSEL_HOST_DEVICE constexpr iterator& operator--() {
      --i_;
      return *this;
    }
    TESSEL_HOST_DEVICE constexpr iterator operator--(int) {
      iterator t = *this;
      --i_;
      return t;
    }
    TESSEL_HOST_DEVICE constexpr iterator& operator+=(difference_type n) {
      i_ += static_cast<std::size_t>(n);
      return *this;
    }
    TESSEL_HOST_DEVICE constexpr iterator& operator-=(difference_type n) {
      i_ -= static_cast<std::size_t>(n);
      return *this;
    }
    TESSEL_HOST_DEVICE friend constexpr iterator operator+(iterator it, difference_type n) {
      return it += n;
    }
    TESSEL_HOST_DEVICE friend constexpr iterator operator+(difference_type n, iterator it) {
      return it += n;
    }
    TESSEL_HOST_DEVICE friend constexpr iterator operator-(iterator it, difference_type n) {
      return it -= n;
    }
    TESSEL_HOST_DEVICE friend constexpr difference_type operator-(iterator a, iterator b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    TESSEL_HOST_DEVICE friend constexpr bool operator==(iterator a, iterator b) {
      return a.i_ == b.i_;
    }
    TESSEL_HOST_DEVICE friend constexpr auto operator<=>(iterator a, iterator b) {
      return a.i_ <=> b.i_;
    }

   private:
    BlockGrid const* grid_ = nullptr;
    std::size_t i_ = 0;
  };

  TESSEL_HOST_DEVICE constexpr iterator begin() const { return iterator(this, 0); }
  TESSEL_HOST_DEVICE constexpr iterator end() const { return iterator(this, size()); }

 private:
  TESSEL_HOST_DEVICE static constexpr coord_type to_fixed(DynRankTuple<R> const& v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return coord_type(v[static_cast<index_t>(I)]...);
    }
    (std::make_index_sequence<R>{});
  }

  DynRankTuple<R> extents_{};
  DynRankTuple<R> per_mode_{};
  index_t split_ = 1;
  index_t count_ = 1;
};

namespace detail {

template <class S, class Split>
struct SplitStatic {
  static constexpr BlockGrid<max_leaves_v<S>, false> grid{leaf_values(S{}), Split::value};
  template <std::size_t I>
  struct Offset {
    static constexpr auto value = grid[I].offset;
  };
  template <std::size_t I>
  struct Extent {
    static constexpr auto value = grid[I].shape;
  };
};

template <index_t Split>
struct StaticSplitCheck {
  static_assert(Split > 0, "tessel: multi_dim_split needs a split size > 0.");
  static constexpr bool ok = true;
};

}  // namespace detail

// The blocks of a static split; every block is a type, and the sequence is also a range of
// run-time blocks for ordinary loops.
template <class S, class Split>
class StaticBlockSequence {
  using Plan = detail::SplitStatic<S, Split>;

 public:
  static constexpr std::size_t size() noexcept { return Plan::grid.size(); }

  // Block I with Int<...> offsets and extents.
  template <std::size_t I>
  static constexpr auto get() {
    static_assert(I < size(), "tessel: block index past the end of the split.");
    return Block<decltype(detail::lift_flat<typename Plan::template Offset<I>>()),
                 decltype(detail::lift_flat<typename Plan::template Extent<I>>())>{};
  }

  // f(block) for every block, each with its own static type.
  template <class F>
  static constexpr void for_each(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (f(get<I>()), ...);
    }
    (std::make_index_sequence<size()>{});
  }

  TESSEL_HOST_DEVICE constexpr auto operator[](std::size_t i) const { return grid()[i]; }
  TESSEL_HOST_DEVICE constexpr auto begin() const { return grid().begin(); }
  TESSEL_HOST_DEVICE constexpr auto end() const { return grid().end(); }

 private:
  static constexpr auto const& grid() { return Plan::grid; }
};

template <std::size_t I, class S, class Split>
constexpr auto get(StaticBlockSequence<S, Split> const&) {
  return StaticBlockSequence<S, Split>::template get<I>();
}

// @pre split_size > 0 (tessel::Error or static_assert otherwise); shape flat with extents >= 0
// @post the blocks tile the shape exactly, in row-major block order; each extent <= split_size
template <FlatIntTuple S, Integer Split>
TESSEL_HOST_DEVICE constexpr auto multi_dim_split(S const& shape, Split split_size) {
  if constexpr (is_static_v<S> && StaticInt<Split>) {
    static_assert(detail::StaticSplitCheck<Split::value>::ok);
    check_extents(shape);
    return StaticBlockSequence<S, Split>{};
  } else {
#if !TESSEL_DEVICE_PASS
    if (to_index(split_size) <= 0)
      detail::throw_error(detail::sentence("multi_dim_split needs a split size > 0, got ",
                                           to_index(split_size), " for shape ",
                                           detail::shape_text(shape), "."));
#endif
    check_extents(shape);
    constexpr bool fixed = !DynRank<S>;
    return BlockGrid<max_leaves_v<S>, fixed>(leaf_values(shape), to_index(split_size));
  }
}

}  // namespace tessel
