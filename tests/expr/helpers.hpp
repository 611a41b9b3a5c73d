// Test helpers for expressions: random tensors, element lists in row-major order, and NumPy
// broadcasting of reference coordinates. Shared by tests/expr, tests/exec and tests/interop.
#pragma once

#include <cstdint>
#include <random>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <tessel/tensor/host_tensor.hpp>

namespace tessel::test {

// Row-major coordinates of flat index i in shape.
inline std::vector<index_t> unravel(index_t i, std::vector<index_t> const& shape) {
  std::vector<index_t> c(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    c[k] = i % shape[k];
    i /= shape[k];
  }
  return c;
}

// Flat index, into an operand of shape `from` (aligned at the last mode, extent-1 modes
// broadcast), of coordinate c of the result.
inline index_t broadcast_index(std::vector<index_t> const& c, std::vector<index_t> const& from) {
  index_t flat = 0;
  std::size_t const off = c.size() - from.size();
  for (std::size_t k = 0; k < from.size(); ++k)
    flat = flat * from[k] + (from[k] == 1 ? 0 : c[k + off]);
  return flat;
}

inline index_t product(std::vector<index_t> const& s) {
  index_t n = 1;
  for (index_t x : s) n *= x;
  return n;
}

// A host tensor of shape s with uniform random values in [lo, hi] (integers for integer T).
template <class T, class Shape>
auto random_tensor(Shape const& s, double lo, double hi, unsigned seed) {
  auto t = make_host_tensor<T>(s);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  index_t const n = to_index(size(t.layout()));
  for (index_t i = 0; i < n; ++i) {
    double v = dist(gen);
    if constexpr (std::is_integral_v<T>) v = static_cast<double>(static_cast<long long>(v));
    t[i] = static_cast<T>(static_cast<float>(v));
  }
  return t;
}

// The elements of t in row-major order of its (logical) modes, as doubles.
template <class Tn>
std::vector<double> elements(Tn const& t) {
  index_t const n = to_index(size(t.layout()));
  std::vector<double> v(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<double>(load_element(t[i]));
  return v;
}

// A zero-filled compact host tensor shaped like expression e, of e's compute type (or T).
template <class T = void, class E>
auto make_like(E const& e) {
  using V = std::conditional_t<std::is_void_v<T>, typename E::value_type, T>;
  auto const s = e.shape();
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_host_tensor<V>(make_shape(s[I]...));
  }
  (std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<decltype(s)>>>{});
}

}  // namespace tessel::test
