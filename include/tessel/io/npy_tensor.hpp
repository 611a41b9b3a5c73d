// Tensors to and from .npy files: load_npy<T>(path) reads an array into an owning host tensor
// (its rank known at run time, or fixed by load_npy<T, Rank>), converting its elements to T as
// NpyArray::as does; save_npy(path, tensor) writes any host tensor — a view, strided, transposed
// — as the C-order array of its logical shape, as np.save would.
#pragma once

#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/dyn_rank_tuple.hpp"
#include "../core/error.hpp"
#include "../tensor/host_tensor.hpp"
#include "npy.hpp"

namespace tessel {

// Tensors of run-time rank hold at most this many modes (NumPy's own limit is 64).
inline constexpr std::size_t npy_max_rank = 8;

namespace detail::io {

template <std::size_t... I>
auto static_rank_shape(std::vector<std::int64_t> const& s, std::index_sequence<I...>) {
  return make_shape(static_cast<index_t>(s[I])...);
}

}  // namespace detail::io

// The array in `path` as an owning host tensor of T with the file's shape, compact row-major.
// Rank < 0: the rank is the file's (a DynRankTuple shape, at most npy_max_rank modes); Rank >= 0:
// a shape of Rank run-time extents, and a file of another rank is an error.
// Throws tessel::Error for a file read_npy refuses, a rank that does not fit, or an element T
// cannot hold (see NpyArray::as).
template <HasDType T, int Rank = -1>
auto load_npy(std::filesystem::path const& path) {
  NpyArray const a = read_npy(path);
  auto const rank = a.shape.size();
  if constexpr (Rank < 0) {
    if (rank > npy_max_rank)
      detail::throw_error(detail::sentence(path.string(), " holds an array of rank ", rank,
                                           "; load_npy reads arrays of rank <= ", npy_max_rank,
                                           "."));
  } else {
    if (rank != static_cast<std::size_t>(Rank))
      detail::throw_error(detail::sentence(path.string(), " holds an array of shape ",
                                           tessel::detail::shape_text(a.shape), " but load_npy<",
                                           dtype_name(dtype_of_v<T>), ", ", Rank,
                                           "> reads arrays of rank ", Rank, "."));
  }
  std::vector<T> values = a.as<T>();
  auto shape = [&] {
    if constexpr (Rank < 0) {
      DynRankTuple<npy_max_rank> s{};
      for (std::int64_t e : a.shape) s.push_back(e);
      return s;
    } else {
      return detail::io::static_rank_shape(a.shape, std::make_index_sequence<Rank>{});
    }
  }();
  auto t = make_host_tensor<T>(shape);
  for (std::size_t i = 0; i < values.size(); ++i) t.data()[i] = values[i];
  return t;
}

// Writes host tensor t to `path` as the C-order .npy array of its logical shape (hierarchical
// modes flattened to their sizes), atomically as write_npy does. Throws tessel::Error, with no
// file written, for what write_npy refuses (bf16 elements, a path that cannot be written).
template <TensorType T>
void save_npy(std::filesystem::path const& path, T const& t) {
  using V = typename T::value_type;
  static_assert(std::is_same_v<typename T::space, HostSpace>,
                "tessel: save_npy writes host tensors; copy a device tensor to the host first.");
  static_assert(HasDType<V>, "tessel: save_npy writes tensors of a tessel DType.");
  std::vector<std::int64_t> shape;
  for (index_t e : to_vector(product_each(t.shape()))) shape.push_back(e);
  index_t const n = to_index(size(t.layout()));
  if constexpr (std::is_same_v<V, bool>) {
    // std::vector<bool> has no data(): write bools through their bytes.
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) bytes[static_cast<std::size_t>(i)] = t[i] ? 1 : 0;
    write_npy(path, DType::bool_, shape, bytes.data());
  } else {
    std::vector<V> values(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = t[i];
    write_npy(path, shape, values);
  }
}

}  // namespace tessel
