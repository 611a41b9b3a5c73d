// The front end every executor shares: `dst = node` is validated and routed to one of the
// executor's passes by the node's kind, before anything is written or queued. An executor brings
// its passes as a small policy object (host: exec/host.hpp, CUDA: exec/cuda.cuh):
//   check(dst)           compile-time checks of the destination (memory space, constness)
//   elementwise(dst, n)  one pass over an elementwise expression
//   reduction(dst, n)    a reduction node whose shape is the destination's
//   row_op(dst, n)       a softmax-like row node whose shape is the destination's
//   materialize(n)       the node evaluated into a compact temporary; view(t) is its view
//   temporary<T>(shape)  a compact temporary of T in the executor's memory
// prepare_reduction is both executors' handling of reductions over nothing.
// A reduction or row node broadcast into a larger destination is materialized, then assigned.
// write_through is the passes' common ending: in place, or through a temporary.
#pragma once

#include <cstddef>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../expr/expression.hpp"
#include "../expr/leaf.hpp"
#include "../expr/reduce.hpp"
#include "body/reduce_ops.hpp"
#include "lower.hpp"

namespace tessel::exec::detail {

// What both executors do before lowering a reduction. Returns false when nothing is left to
// launch: an empty output, or reduced modes that are all empty, whose value (sum 0, mean NaN,
// logsumexp -inf) `fill(value_leaf)` assigns. max, min and argmax of nothing have no value: they
// throw before anything is written.
template <class Node, class Fill>
bool prepare_reduction(Node const& node, Fill&& fill) {
  using Kind = typename Node::kind;
  using In = typename Node::input_type;
  using Op = reduce_op_t<Kind, typename In::value_type>;
  auto const shape = node.input.shape();
  if (tessel::detail::shape_size(node.shape()) == 0) return false;
  if (tessel::detail::shape_size(shape) != 0) return true;
  if constexpr (!Kind::defined_when_empty) {
    if constexpr (Node::over_all) {
      throw_error(sentence("cannot take the ", Kind::name, " of an empty expression of shape ",
                           tessel::detail::shape_text(shape), "."));
    } else {
      throw_error(sentence("cannot take the ", Kind::name, " over mode ", Node::axis,
                           " of an expression of shape ", tessel::detail::shape_text(shape),
                           ", which has extent 0."));
    }
  } else {
    Op const op{};
    fill(tessel::detail::ScalarLeaf<typename Node::value_type>(op.finalize(op.identity(), 0)));
  }
  return false;
}

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

// Runs pass(data) with dst's data, or, when the lowered nest cannot write dst in place
// (Binder::needs_temporary: dst overlaps an operand so that the pass would read elements it has
// already written), with a compact temporary of `shape` (T elements, its modes related to the
// nest's by output_map), which is then assigned to dst.
template <class T, class Passes, class Binder, class Nest, class DV, class Shape, class Map,
          class Pass>
void write_through(Passes const& passes, Binder& b, Nest& nest, bool elementwise, DV const& dst,
                   Shape const& shape, Map const& output_map, Pass const& pass) {
  if (!b.needs_temporary(nest, elementwise)) {
    pass(dst.data());
    return;
  }
  auto tmp = passes.template temporary<T>(shape);
  auto const view = passes.view(tmp);
  b.set_destination(view, output_map);
  nest = b.lower();
  pass(view.data());
  route_assignment(passes, dst, tessel::detail::TensorLeaf<decltype(view)>(view));
}

}  // namespace tessel::exec::detail
