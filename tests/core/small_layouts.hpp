// Every small flat layout (rank 1..3, extents 0..4, strides from a few values), for checking the
// algebra's post-conditions over every coordinate, and what the algebra's tests over them share:
// a layout's text, its sorted offsets and injectivity.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <tessel/core/layout.hpp>
#include <tessel/core/print.hpp>

namespace tessel::test_support {

struct SmallLayout {
  std::vector<index_t> shape;
  std::vector<index_t> stride;

  DynRankTuple<3> shape_values() const {
    DynRankTuple<3> s{};
    for (index_t x : shape) s.push_back(x);
    return s;
  }
  DynRankTuple<3> stride_values() const {
    DynRankTuple<3> d{};
    for (index_t x : stride) d.push_back(x);
    return d;
  }
  // As a run-time-rank layout.
  auto layout() const { return make_layout(shape_values(), stride_values()); }
};

// "(2,3):(1,2)", for failure messages.
inline std::string text(SmallLayout const& l) {
  return to_string(l.layout());
}

// The offsets of every 1-D index of l, sorted.
std::vector<index_t> sorted_offsets(auto const& l) {
  std::vector<index_t> out;
  for (index_t k = 0; k < size(l); ++k) out.push_back(l(k));
  std::sort(out.begin(), out.end());
  return out;
}

bool injective(auto const& l) {
  auto o = sorted_offsets(l);
  return std::adjacent_find(o.begin(), o.end()) == o.end();
}
inline bool injective(SmallLayout const& l) {
  return injective(l.layout());
}

inline std::vector<SmallLayout> small_layouts(bool with_zero_extents = true) {
  std::vector<index_t> extents = {1, 2, 3, 4};
  if (with_zero_extents) extents.insert(extents.begin(), 0);
  std::vector<index_t> strides = {0, 1, 2, 3, 4, 6, 12};
  std::vector<SmallLayout> out;
  for (std::size_t r = 1; r <= 3; ++r) {
    std::vector<std::size_t> ei(r, 0), si(r, 0);
    // Odometer over extents x strides.
    std::size_t combos = 1;
    for (std::size_t k = 0; k < r; ++k) combos *= extents.size() * strides.size();
    for (std::size_t c = 0; c < combos; ++c) {
      std::size_t rest = c;
      SmallLayout l;
      for (std::size_t k = 0; k < r; ++k) {
        l.shape.push_back(extents[rest % extents.size()]);
        rest /= extents.size();
        l.stride.push_back(strides[rest % strides.size()]);
        rest /= strides.size();
      }
      out.push_back(l);
    }
  }
  return out;
}

// small_layouts(false) without the rank-3 layouts that use the strides 3 or 6: the divides' and
// products' exhaustive tests stay under a second.
inline std::vector<SmallLayout> tiling_layouts() {
  std::vector<SmallLayout> out;
  for (auto const& small : small_layouts(false)) {
    if (small.shape.size() == 3 && std::any_of(small.stride.begin(), small.stride.end(),
                                               [](index_t d) { return d == 3 || d == 6; }))
      continue;
    out.push_back(small);
  }
  return out;
}

}  // namespace tessel::test_support
