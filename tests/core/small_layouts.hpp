// Every small flat layout (rank 1..3, extents 0..4, strides from a few values), for checking the
// algebra's post-conditions over every coordinate.
#pragma once

#include <vector>

#include <tessel/core/layout.hpp>

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

}  // namespace tessel::test_support
