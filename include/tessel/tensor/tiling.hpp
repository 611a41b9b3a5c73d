// Tensors tiled by the layout algebra: zipped/tiled/flat_divide of a tensor, local_tile (one tile)
// and local_partition (the elements one thread owns), all views of the same memory that write
// through; and identity tensors, whose element at each coordinate is that coordinate, for
// predicating the ragged edges of a tiling.
//
// Row-major, as divide.hpp: a divide is ((rest), (tile)), the tile grid outer. With per-mode
// tile extents (T0, T1) on a tensor of shape (M, N):
// local_tile(t, (T0, T1), (b0, b1))(i, j) is t(b0 * T0 + i, b1 * T1 + j), and
// local_partition(t, threads, k)(j0, j1) is t(j0 * P0 + c0, j1 * P1 + c1), where (P0, P1) is the
// thread layout's shape and (c0, c1) is thread k's coordinate in it, the coordinate the thread
// layout maps to k. local_tile is CuTe's local_tile (the tile at coordinate coord of
// zipped_divide), local_partition CuTe's local_partition with the thread layout as the tile
// (outer_partition at the thread's coordinate: thread k owns the element at its coordinate in every
// tile, the grid of tiles is the result). The difference is the numbering: a shape as thread layout
// is row-major here, (4, 8) numbers thread k at (k / 8, k % 8), where CuTe's default column-major
// (4, 8) puts it at (k % 4, k / 4); a thread layout with column-major strides, (4, 8):(1, 4), gives
// CuTe's assignment. A 1-D tile coordinate is a row-major index into the tile grid.
//
// Identity tensors: the tensor layer's elements are memory, so a coordinate tensor is its own
// type, IdentityTensor: a layout over the row-major 1-D indices of a coordinate space, whose
// element is the coordinate that index stands for. Every function here applies to it the way it
// applies to a tensor, so local_tile(identity, tile, b)(i, j) is the coordinate of element (i, j)
// of the tile in the whole. Divides need tiles that divide the shape: for a ragged tensor (M, N),
// tile a padded buffer and an identity tensor of the padded shape the same way, and write
// element (i, j) only where elem_less(coordinate(i, j), make_shape(M, N)).
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "../core/divide.hpp"
#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../core/layout.hpp"
#include "tensor.hpp"
#include "views.hpp"

namespace tessel {

// ---- identity tensors ----

// The coordinates of the flat shape S: element c of the view is the coordinate of S whose
// row-major 1-D index is base + layout(c). Made by make_identity_tensor; the tiling functions
// give views of it with other layouts and bases.
template <FlatIntTuple S, LayoutType L>
class IdentityTensor {
 public:
  using space_shape_type = S;
  using layout_type = L;

  constexpr IdentityTensor() = default;
  TESSEL_HOST_DEVICE constexpr IdentityTensor(S const& space, index_t base, L const& layout)
      : space_(space), base_(base), layout_(layout) {}

  TESSEL_HOST_DEVICE constexpr L const& layout() const noexcept { return layout_; }
  TESSEL_HOST_DEVICE constexpr decltype(auto) shape() const { return layout_.shape(); }
  TESSEL_HOST_DEVICE constexpr decltype(auto) stride() const { return layout_.stride(); }
  // The whole coordinate space (what make_identity_tensor was given) and this view's first index.
  TESSEL_HOST_DEVICE constexpr S const& space_shape() const noexcept { return space_; }
  TESSEL_HOST_DEVICE constexpr index_t base() const noexcept { return base_; }
  TESSEL_HOST_DEVICE constexpr auto ndim() const { return tessel::rank(layout_); }
  TESSEL_HOST_DEVICE constexpr auto numel() const { return tessel::size(layout_); }

  // The coordinate (a flat tuple of index_t, one per mode of the space) at c: one coordinate per
  // mode of the layout, or a 1-D row-major index.
  template <class... C>
  TESSEL_HOST_DEVICE constexpr auto operator()(C const&... c) const {
    return coordinate_of(base_ + to_index(layout_(c...)));
  }
  TESSEL_HOST_DEVICE constexpr auto operator[](index_t i) const {
    return coordinate_of(base_ + to_index(layout_(i)));
  }

 private:
  // The row-major decoding of index k in the space (an index past the end extends along mode 0).
  TESSEL_HOST_DEVICE constexpr auto coordinate_of(index_t k) const {
    auto strides = make_layout(space_).stride();
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_tuple((I == 0 ? k / to_index(get<I>(strides))
                                : k / to_index(get<I>(strides)) % to_index(get<I>(space_)))...);
    }
    (std::make_index_sequence<tuple_size_v<S>>{});
  }

  [[no_unique_address]] S space_{};
  index_t base_ = 0;
  [[no_unique_address]] L layout_{};
};

namespace detail {
template <class T>
struct is_identity_tensor : std::false_type {};
template <class S, class L>
struct is_identity_tensor<IdentityTensor<S, L>> : std::true_type {};
}  // namespace detail

template <class T>
concept IdentityTensorType = detail::is_identity_tensor<std::remove_cvref_t<T>>::value;

// What the tiling functions take: a tensor or an identity tensor.
template <class T>
concept TileableTensor = TensorType<T> || IdentityTensorType<T>;

// The identity tensor of a flat shape: element (i, j, ...) is the tuple (i, j, ...).
// @post shape(result) == shape; result(c) == c for every coordinate c of shape
template <FlatIntTuple S>
TESSEL_HOST_DEVICE constexpr auto make_identity_tensor(S const& shape) {
  static_assert(!DynRank<S>, "tessel: an identity tensor needs a rank known at compile time.");
  auto layout = make_layout(shape);
  return IdentityTensor<S, decltype(layout)>(shape, 0, layout);
}

template <IdentityTensorType T>
TESSEL_HOST_DEVICE constexpr decltype(auto) shape(T const& t) {
  return t.shape();
}
template <IdentityTensorType T>
TESSEL_HOST_DEVICE constexpr auto rank(T const& t) {
  return rank(t.layout());
}
template <IdentityTensorType T>
TESSEL_HOST_DEVICE constexpr auto size(T const& t) {
  return size(t.layout());
}

// True when every element of a is less than the element of b in the same place: integers, or
// tuples of the same rank (nested alike). elem_less(coordinate, shape): the coordinate is inside.
template <class A, class B>
TESSEL_HOST_DEVICE constexpr bool elem_less(A const& a, B const& b) {
  if constexpr (Integer<A> && Integer<B>) {
    return to_index(a) < to_index(b);
  } else {
    static_assert(Tuple<A> && Tuple<B> && tuple_size_v<A> == tuple_size_v<B>,
                  "tessel: elem_less compares two integers or two tuples of the same rank.");
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (true && ... && elem_less(get<I>(a), get<I>(b)));
    }
    (std::make_index_sequence<tuple_size_v<A>>{});
  }
}

// ---- views with another layout ----

namespace detail {

// t's elements seen through layout l from t's offset `offset` on: a tensor view of the same
// memory (checked against the storage on the host, when its extent is known), or an identity
// tensor over the same space.
template <TileableTensor T, LayoutType L>
TESSEL_HOST_DEVICE constexpr auto rebased(T const& t, index_t offset, L const& l) {
  if constexpr (IdentityTensorType<T>) {
    return IdentityTensor<std::remove_cvref_t<decltype(t.space_shape())>, L>(t.space_shape(),
                                                                             t.base() + offset, l);
  } else {
#if TESSEL_DEVICE_PASS
    auto e = t.view().engine();
    using Space = typename std::remove_cvref_t<T>::space;
    using Elem = typename std::remove_cvref_t<T>::element_type;
    return Tensor<ViewEngine<Elem, Space>, L>(
        ViewEngine<Elem, Space>{t.data() + offset, e.storage, e.storage_size}, l);
#else
    return make_view(t, t.data() + offset, l);
#endif
  }
}

template <class T>
TESSEL_HOST_DEVICE constexpr void refuse_owning_temporary_view() {
  if constexpr (TensorType<T>) refuse_owning_temporary<T>();
}

// A thread layout as a layout: a shape numbers its threads row-major.
template <class P>
TESSEL_HOST_DEVICE constexpr auto thread_layout_of(P const& p) {
  if constexpr (LayoutType<P>) {
    return p;
  } else {
    return make_layout(p);
  }
}

}  // namespace detail

// The tensor (or identity tensor) t viewed through zipped_divide / tiled_divide / flat_divide of
// its layout: the same elements, no copy, writes land in t. Divide errors are the divides' own.
// @post result(j, i) is the element of t at zipped_divide(t.layout(), tiler)(j, i)
template <TileableTensor T, Tiler Til>
TESSEL_HOST_DEVICE constexpr auto zipped_divide(T&& t, Til const& tiler) {
  detail::refuse_owning_temporary_view<T>();
  return detail::rebased(t, 0, zipped_divide(t.layout(), tiler));
}

template <TileableTensor T, Tiler Til>
TESSEL_HOST_DEVICE constexpr auto tiled_divide(T&& t, Til const& tiler) {
  detail::refuse_owning_temporary_view<T>();
  return detail::rebased(t, 0, tiled_divide(t.layout(), tiler));
}

template <TileableTensor T, Tiler Til>
TESSEL_HOST_DEVICE constexpr auto flat_divide(T&& t, Til const& tiler) {
  detail::refuse_owning_temporary_view<T>();
  return detail::rebased(t, 0, flat_divide(t.layout(), tiler));
}

namespace detail {

// Throws tessel::Error unless coord is a coordinate of the grid `extents` (one integer per mode,
// or a 1-D row-major index into it). context names the tensor and the tiles.
template <class C, IntTuple G>
void check_grid_coordinate(C const& coord, G const& extents, std::string const& context) {
  bool ok = true;
  if constexpr (Integer<C>) {
    ok = to_index(coord) >= 0 && to_index(coord) < to_index(size(extents));
  } else {
    static_assert(tuple_size_v<C> == tuple_size_v<G>,
                  "tessel: a tile coordinate has one integer per mode of the tile grid.");
    auto c = to_array(coord);
    auto e = to_array(extents);
    for (std::size_t k = 0; k < c.size(); ++k) ok = ok && c[k] >= 0 && c[k] < e[k];
  }
  if (!ok) {
    std::string c;
    if constexpr (Integer<C>) {
      c = sentence(to_index(coord));
    } else {
      c = shape_text(coord);
    }
    throw_error(sentence("tile coordinate ", c, " is out of range: ", context,
                         " has a tile grid of ", shape_text(extents), "."));
  }
}

}  // namespace detail

// The tile at coord of t cut into tiles of tile_shape (a tuple of per-mode tilers, one per mode
// of t; usually a shape): a view of those elements, writing through. coord is one integer per
// mode of the tile grid, or a 1-D row-major index into it. Static tile extents give static
// extents. Throws tessel::Error when the tiles do not divide t (the divide's sentence) or coord
// is outside the tile grid (host; not checked in device code).
// @post local_tile(t, (T0, T1), (b0, b1))(i, j) is t(b0 * T0 + i, b1 * T1 + j);
//       shape(result) == tile_shape for integer tilers
template <TileableTensor T, Tuple Til, class C>
TESSEL_HOST_DEVICE constexpr auto local_tile(T&& t, Til const& tile_shape, C const& coord) {
  detail::refuse_owning_temporary_view<T>();
  auto divided = zipped_divide(t.layout(), tile_shape);
  auto rest = get<0>(divided);
#if !TESSEL_DEVICE_PASS
  if (!std::is_constant_evaluated())
    detail::check_grid_coordinate(
        coord, product_each(rest.shape()),
        detail::sentence("shape ", detail::shape_text(product_each(t.shape())), " in tiles of ",
                         detail::tiler_text(tile_shape)));
#endif
  return detail::rebased(t, to_index(rest(coord)), get<1>(divided));
}

namespace detail {

// Throws tessel::Error unless the flat layout p numbers its size(p) threads 0, 1, ... one to one
// (its modes of extent > 1, by increasing stride, have strides 1, e0, e0 * e1, ...) and
// 0 <= index < size(p).
template <LayoutType P>
void check_thread_layout(P const& p, index_t index) {
  auto s = to_array(p.shape());
  auto d = to_array(p.stride());
  index_t threads = to_index(size(p));
  index_t due = 1;
  unsigned long long taken = 0;
  for (std::size_t n = 0; n < s.size(); ++n) {
    index_t best = -1;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] <= 1 || ((taken >> i) & 1ull)) continue;
      if (best < 0 || d[i] < d[static_cast<std::size_t>(best)]) best = static_cast<index_t>(i);
    }
    if (best < 0) break;
    taken |= 1ull << best;
    auto b = static_cast<std::size_t>(best);
    if (d[b] != due)
      throw_error(sentence("thread layout ", layout_text(p), " does not number its ", threads,
                           " threads one to one: its mode ", best, " has stride ", d[b], " where ",
                           due,
                           " was due (modes by increasing stride must have "
                           "strides 1, then the product of the extents before them)."));
    due *= s[b];
  }
  if (index < 0 || index >= threads)
    throw_error(sentence("thread index ", index, " is out of range for thread layout ",
                         layout_text(p), " of ", threads, " threads."));
}

// The coordinate of thread `index` in the flat one-to-one layout p: mode k is
// (index / stride_k) % extent_k.
template <LayoutType P>
TESSEL_HOST_DEVICE constexpr auto thread_coordinate(P const& p, index_t index) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_tuple(index / to_index(get<I>(p.stride())) % to_index(get<I>(p.shape()))...);
  }
  (std::make_index_sequence<tuple_size_v<std::remove_cvref_t<decltype(p.shape())>>>{});
}

}  // namespace detail

// A thread arrangement for local_partition: a flat shape, or a layout with a flat shape.
template <class P>
concept ThreadLayout = FlatIntTuple<P> ||
    (LayoutType<P>&& FlatIntTuple<std::remove_cvref_t<decltype(std::declval<P>().shape())>>);

// The elements of t that thread `index` owns when the thread arrangement is tiled over t:
// threads is a flat shape (threads numbered row-major) or a flat layout numbering its threads one
// to one, of t's rank; t is cut into tiles of threads' shape (P0, P1, ...), and thread k, at
// coordinate (c0, c1, ...) of the arrangement (threads(c) == k), owns the element at that
// coordinate in every tile. The result is the grid of tiles, a view that writes through. Throws
// tessel::Error when the arrangement does not divide t (the divide's sentence), does not number
// its threads one to one, or index is not one of its threads (host only).
// @post local_partition(t, (P0, P1), k)(j0, j1) is t(j0 * P0 + k / P1, j1 * P1 + k % P1);
//       shape(result) == (M / P0, N / P1) for t of shape (M, N)
template <TileableTensor T, ThreadLayout P>
TESSEL_HOST_DEVICE constexpr auto local_partition(T&& t, P const& threads, index_t index) {
  detail::refuse_owning_temporary_view<T>();
  auto p = detail::thread_layout_of(threads);
#if !TESSEL_DEVICE_PASS
  if (!std::is_constant_evaluated()) detail::check_thread_layout(p, index);
#endif
  auto divided = zipped_divide(t.layout(), p.shape());
  auto tile = get<1>(divided);
  return detail::rebased(t, to_index(tile(detail::thread_coordinate(p, index))), get<0>(divided));
}

}  // namespace tessel
