// Tensor = engine (a pointer into host or device memory, or owned host storage) + Layout.
// Element access t(i, j, ...) returns a reference; slicing with `_` / range(b, e) returns a view.
// Views write through: assigning to a view writes into the memory it views, as an Eigen::Map does.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include "../core/composition.hpp"
#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "element_iterator.hpp"
#include "engine.hpp"
#include "memory_space.hpp"
#include "slicer.hpp"

namespace tessel {

template <Engine E, LayoutType L>
class Tensor;

namespace detail {
template <class T>
struct is_tensor : std::false_type {};
template <class E, class L>
struct is_tensor<Tensor<E, L>> : std::true_type {};
}  // namespace detail

// Any tessel::Tensor (view or owning).
template <class T>
concept TensorType = detail::is_tensor<std::remove_cvref_t<T>>::value;

// A tensor that owns its storage (views of it must not outlive it).
template <class T>
concept OwningTensor = TensorType<T> && std::remove_cvref_t<T>::owning;

// Assignment of anything to a tensor is implemented by the expression layer (tessel/expr), found
// by argument-dependent lookup. This fallback only explains what is missing.
template <class Dst, class Src>
void assign_expression(Dst&, Src const&, ...) {
  static_assert(sizeof(Dst) == 0,
                "tessel: assigning to a tensor needs the expression layer: include "
                "<tessel/tessel.hpp> (or <tessel/expr/assign.hpp>).");
}

template <Engine E, LayoutType L>
class Tensor {
 public:
  using engine_type = E;
  using layout_type = L;
  using element_type = typename E::value_type;  // may be const
  using value_type = std::remove_cv_t<element_type>;
  using pointer = element_type*;
  using reference = element_type&;
  using space = typename E::space;
  static constexpr bool owning = E::owning;

  constexpr Tensor() = default;
  TESSEL_HOST_DEVICE constexpr Tensor(E engine, L layout)
      : engine_(std::move(engine)), layout_(layout) {}

  Tensor(Tensor const&) = default;
  Tensor(Tensor&&) noexcept = default;

  // Writes src's elements into the viewed memory (src broadcast to this shape); a move-assigned
  // owning tensor takes the other's storage instead.
  Tensor& operator=(Tensor const& src) {
    if (this != &src) assign_expression(*this, src);
    return *this;
  }
  Tensor& operator=(Tensor&& src) noexcept(owning) {
    if constexpr (owning) {
      engine_ = std::move(src.engine_);
      layout_ = src.layout_;
    } else if (this != &src) {
      assign_expression(*this, src);
    }
    return *this;
  }
  template <class Src>
  requires(!std::is_same_v<std::remove_cvref_t<Src>, Tensor>) Tensor& operator=(Src const& src) {
    assign_expression(*this, src);
    return *this;
  }

  TESSEL_HOST_DEVICE constexpr pointer data() const noexcept { return engine_.data(); }
  TESSEL_HOST_DEVICE constexpr L const& layout() const noexcept { return layout_; }
  TESSEL_HOST_DEVICE constexpr decltype(auto) shape() const { return layout_.shape(); }
  TESSEL_HOST_DEVICE constexpr decltype(auto) stride() const { return layout_.stride(); }
  TESSEL_HOST_DEVICE constexpr E const& engine() const noexcept { return engine_; }

  // Number of modes, number of elements, and 1 + the largest offset (sparsekit's View names).
  TESSEL_HOST_DEVICE constexpr auto ndim() const { return tessel::rank(layout_); }
  TESSEL_HOST_DEVICE constexpr auto numel() const { return tessel::size(layout_); }
  TESSEL_HOST_DEVICE constexpr auto cosize() const { return tessel::cosize(layout_); }

  // t(i, j, ...) is a reference to the element; with `_` or range(b, e) among the coordinates it
  // is a view of the kept modes (host only, bounds-checked). With TESSEL_CHECK_BOUNDS (on in
  // unoptimized builds without NDEBUG; see core/config.hpp) integer coordinates are checked on the
  // host too.
  template <class... C>
  TESSEL_HOST_DEVICE constexpr decltype(auto) operator()(C const&... c) const {
    if constexpr ((Slicer<C> || ...)) {
      return slice_view(c...);
    } else {
#if TESSEL_CHECK_BOUNDS && !TESSEL_DEVICE_PASS
      if constexpr ((Integer<C> && ...))
        if (!std::is_constant_evaluated()) check_bounds(c...);
#endif
      return data()[layout_(c...)];
    }
  }

  // Element at 1-D row-major index i (checked like operator() under TESSEL_CHECK_BOUNDS).
  TESSEL_HOST_DEVICE constexpr reference operator[](index_t i) const {
#if TESSEL_CHECK_BOUNDS && !TESSEL_DEVICE_PASS
    if (!std::is_constant_evaluated()) check_bounds(i);
#endif
    return data()[layout_(i)];
  }

  // Bounds-checked element access (host), whatever TESSEL_CHECK_BOUNDS says: tessel::Error naming
  // the coordinate and the shape.
  template <Integer... C>
  reference at(C const&... c) const {
    check_bounds(c...);
    return data()[layout_(c...)];
  }

  // Throws tessel::Error unless c is a coordinate of this tensor (one integer per mode, or one
  // 1-D index in [0, size)).
  template <Integer... C>
  void check_bounds(C const&... c) const {
    auto extents = to_vector(product_each(layout_.shape()));
    std::int64_t coords[] = {to_index(c)...};
    bool ok = true;
    if (sizeof...(C) == 1 && extents.size() != 1) {
      ok = coords[0] >= 0 && coords[0] < to_index(tessel::size(layout_));
    } else {
      ok = sizeof...(C) == extents.size();
      for (std::size_t k = 0; ok && k < sizeof...(C); ++k)
        ok = coords[k] >= 0 && coords[k] < extents[k];
    }
    if (!ok)
      detail::throw_error(
          detail::sentence("coordinate ", tessel::detail::shape_text(make_tuple(to_index(c)...)),
                           " is out of bounds for a tensor of shape ",
                           tessel::detail::shape_text(product_each(layout_.shape())), "."));
  }

  // The elements in logical row-major order, as t[i] visits them: `for (float& x : t)`. Host
  // tensors only (device memory is not readable here).
  ElementIterator<Tensor> begin() const requires std::is_same_v<space, HostSpace> {
    return {this, 0};
  }
  ElementIterator<Tensor> end() const requires std::is_same_v<space, HostSpace> {
    return {this, to_index(tessel::size(layout_))};
  }

  // A non-owning view of the same elements (bounded by the storage when that is known).
  TESSEL_HOST_DEVICE constexpr auto view() const {
    using T = element_type;
    if constexpr (owning) {
      return Tensor<ViewEngine<T, space>, L>(
          ViewEngine<T, space>{engine_.data(), engine_.data(), engine_.size()}, layout_);
    } else {
      return *this;
    }
  }

  // Points this view at other's memory and layout (the one way to re-seat a view; `=` writes).
  template <class E2>
  void rebind(Tensor<E2, L> const& other) requires(!owning) {
    engine_ = other.view().engine();
    layout_ = other.layout();
  }

 private:
  template <class... C>
  auto slice_view(C const&... c) const;

  [[no_unique_address]] E engine_{};
  [[no_unique_address]] L layout_{};
};

// ---- queries as free functions ----

template <TensorType T>
TESSEL_HOST_DEVICE constexpr decltype(auto) shape(T const& t) {
  return t.shape();
}
template <TensorType T>
TESSEL_HOST_DEVICE constexpr decltype(auto) stride(T const& t) {
  return t.stride();
}
template <TensorType T>
TESSEL_HOST_DEVICE constexpr auto rank(T const& t) {
  return rank(t.layout());
}
template <TensorType T>
TESSEL_HOST_DEVICE constexpr auto size(T const& t) {
  return size(t.layout());
}
template <TensorType T>
TESSEL_HOST_DEVICE constexpr auto cosize(T const& t) {
  return cosize(t.layout());
}

// ---- making views ----

namespace detail {

// A view of parent's storage at ptr with layout l, checked against the storage bound when known.
template <TensorType P, class T, LayoutType L>
auto make_view(P const& parent, T* ptr, L const& l) {
  auto e = parent.view().engine();
  using Space = typename std::remove_cvref_t<P>::space;
  if (e.bounded()) {
    index_t offset = static_cast<index_t>(ptr - e.storage);
    index_t extent = to_index(cosize(l));
    if (offset < 0 || (extent > 0 && offset + extent > e.storage_size))
      throw_error(sentence("a view with layout ", tessel::detail::shape_text(l.shape()), ":",
                           tessel::detail::shape_text(l.stride()), " at element ", offset,
                           " reaches element ", offset + extent, " of storage that holds ",
                           e.storage_size, " elements."));
  }
  return Tensor<ViewEngine<T, Space>, L>(ViewEngine<T, Space>{ptr, e.storage, e.storage_size}, l);
}

template <class Mode>
index_t mode_extent(Mode const& m) {
  return to_index(size(m));
}

}  // namespace detail

template <Engine E, LayoutType L>
template <class... C>
auto Tensor<E, L>::slice_view(C const&... c) const {
  static_assert(!DynRank<decltype(layout_.shape())>,
                "tessel: slicing needs a tensor whose rank is known at compile time.");
  constexpr std::size_t r = tuple_size_v<std::remove_cvref_t<decltype(layout_.shape())>>;
  static_assert(sizeof...(C) == r, "tessel: a slice takes one coordinate, `_` or range per mode.");
  auto const& s = layout_.shape();
  auto const& d = layout_.stride();
  index_t offset = 0;
  auto coords = make_tuple(c...);
  auto kept = [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&](auto i) {
      constexpr std::size_t k = decltype(i)::value;
      auto const& ck = get<k>(coords);
      using Ck = std::remove_cvref_t<decltype(ck)>;
      auto sk = get<k>(s);
      auto dk = get<k>(d);
      index_t extent = detail::mode_extent(sk);
      if constexpr (std::is_same_v<Ck, Underscore>) {
        return make_tuple(make_tuple(sk), make_tuple(dk));
      } else if constexpr (Slicer<Ck>) {
        static_assert(
            Integer<decltype(sk)>,
            "tessel: range(b, e) applies to flat modes; slice hierarchical modes with _.");
        index_t b = to_index(ck.begin), e = to_index(ck.end);
        if (b < 0 || b > e || e > extent)
          detail::throw_error(detail::sentence("range(", b, ", ", e, ") is out of bounds for mode ",
                                               k, " of extent ", extent, "."));
        offset += b * to_index(dk);
        return make_tuple(make_tuple(ck.end - ck.begin), make_tuple(dk));
      } else {
        index_t x = to_index(ck);
        if (x < 0 || x >= extent)
          detail::throw_error(detail::sentence("index ", x, " is out of bounds for mode ", k,
                                               " of extent ", extent, "."));
        offset += to_index(crd2idx(x, sk, dk));
        return make_tuple(tuple<>{}, tuple<>{});
      }
    };
    auto parts = make_tuple(one(std::integral_constant<std::size_t, I>{})...);
    auto join = [](auto acc, auto p) { return concat(acc, p); };
    return make_tuple(fold(make_tuple(get<0>(get<I>(parts))...), tuple<>{}, join),
                      fold(make_tuple(get<1>(get<I>(parts))...), tuple<>{}, join));
  }
  (std::make_index_sequence<r>{});
  return detail::make_view(*this, data() + offset, Layout(get<0>(kept), get<1>(kept)));
}

// A non-owning host tensor over ptr with the given layout (or the compact layout of a shape).
// The storage extent is unknown, so views of it are not bounds-checked; prefer the std::span
// overload when the extent is known.
template <class T, class LayoutOrShape>
TESSEL_HOST_DEVICE constexpr auto make_tensor(T* ptr, LayoutOrShape const& l) {
  auto layout = make_layout(l);
  return Tensor<ViewEngine<T, HostSpace>, decltype(layout)>(ViewEngine<T, HostSpace>{ptr, ptr, -1},
                                                            layout);
}

// A non-owning host tensor over the elements of storage; throws tessel::Error when the layout
// reaches past the end of the span.
template <class T, std::size_t N, class LayoutOrShape>
auto make_tensor(std::span<T, N> storage, LayoutOrShape const& l) {
  auto layout = make_layout(l);
  index_t extent = to_index(cosize(layout));
  index_t available = static_cast<index_t>(storage.size());
  if (extent > available)
    detail::throw_error(
        detail::sentence("a tensor with layout ", tessel::detail::shape_text(layout.shape()), ":",
                         tessel::detail::shape_text(layout.stride()), " needs ", extent,
                         " elements but its storage holds ", available, "."));
  return Tensor<ViewEngine<T, HostSpace>, decltype(layout)>(
      ViewEngine<T, HostSpace>{storage.data(), storage.data(), available}, layout);
}

// A non-owning view of device memory (for kernels and the CUDA executor; never dereferenced on
// the host).
template <class T, class LayoutOrShape>
TESSEL_HOST_DEVICE constexpr auto make_device_tensor(T* ptr, LayoutOrShape const& l) {
  auto layout = make_layout(l);
  return Tensor<ViewEngine<T, DeviceSpace>, decltype(layout)>(
      ViewEngine<T, DeviceSpace>{ptr, ptr, -1}, layout);
}

}  // namespace tessel
