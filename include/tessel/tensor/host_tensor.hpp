// Owning host tensors: zero-initialized, 64-byte-aligned storage sized to the layout's cosize.
// Move-only; take views with .view() or any view function.
#pragma once

#include "../core/layout.hpp"
#include "engine.hpp"
#include "tensor.hpp"

namespace tessel {

template <class T, LayoutType L>
using HostTensor = Tensor<HostArrayEngine<T>, L>;

// A zero-filled host tensor with the compact row-major layout of shape, or with the given layout
// (storage covers its cosize).
template <class T, class LayoutOrShape>
auto make_host_tensor(LayoutOrShape const& l) {
  auto layout = make_layout(l);
  return HostTensor<T, decltype(layout)>(HostArrayEngine<T>(to_index(cosize(layout))), layout);
}

}  // namespace tessel
