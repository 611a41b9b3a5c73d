// cast<T>(e): each element converted to T (rounded to nearest even for half / bfloat16, C++'s
// conversion otherwise) and then computed in T's compute type.
#pragma once

#include <utility>

#include "map.hpp"

namespace tessel {

namespace ops {

template <Element T>
struct Cast {
  template <class A>
  TESSEL_HOST_DEVICE constexpr compute_t<T> operator()(A a) const {
    return load_element(store_element<T>(a));
  }
};

}  // namespace ops

template <Element T, ArrayOperand A>
auto cast(A&& a) {
  return detail::make_map(ops::Cast<T>{}, std::forward<A>(a));
}

}  // namespace tessel
