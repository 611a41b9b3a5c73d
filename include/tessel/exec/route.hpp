// The front end every executor shares: `dst = node` is validated and routed to one of the
// executor's passes by the node's kind, before anything is written or queued. An executor brings
// its passes as a small policy object (host: exec/host.hpp, CUDA: exec/cuda.cuh):
//   check(dst)           compile-time checks of the destination (memory space, constness)
//   elementwise(dst, n)  one pass over an elementwise expression
//   reduction(dst, n)    a reduction node whose shape is the destination's
//   row_op(dst, n)       a softmax-like row node whose shape is the destination's
//   materialize(n)       the node evaluated into a compact temporary; view(t) is its view
// A reduction or row node broadcast into a larger destination is materialized, then assigned.
#pragma once

#include <cstddef>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../expr/expression.hpp"
#include "../expr/leaf.hpp"
#include "lower.hpp"

namespace tessel::exec::detail {

template <class Passes, class DV, class Node>
void route_assignment(Passes const& passes, DV const& dst, Node const& node) {
  passes.check(dst);
  auto const dshape = tessel::detail::logical_shape(dst);
  if (!tessel::detail::broadcasts_to(node.shape(), dshape))
    throw_error(sentence("cannot assign an expression of shape ",
                         tessel::detail::shape_text(node.shape()), " to a tensor of shape ",
                         tessel::detail::shape_text(dshape), "."));
  if constexpr (Node::rank > tessel::detail::tensor_rank<DV>()) {
    return;  // unreachable: broadcasts_to is false when the expression has more modes
  } else if constexpr (materialized_v<Node>) {
    bool exact = Node::rank == dshape.size();
    for (std::size_t k = 0; exact && k != Node::rank; ++k) exact = node.shape()[k] == dshape[k];
    if (!exact) {
      auto tmp = passes.materialize(node);
      route_assignment(passes, dst,
                       tessel::detail::TensorLeaf<decltype(passes.view(tmp))>(passes.view(tmp)));
    } else if constexpr (is_reduce<Node>::value) {
      passes.reduction(dst, node);
    } else {
      passes.row_op(dst, node);
    }
  } else {
    passes.elementwise(dst, node);
  }
}

}  // namespace tessel::exec::detail
