// dst = src for a tensor dst: the assignment hook the tensor layer calls (found by argument-
// dependent lookup). src is an expression, a tensor or a scalar; it broadcasts to dst's shape.
// The work is done by an executor: the default host executor (exec/host.hpp, part of
// <tessel/tessel.hpp>) picks serial or OpenMP by size; tessel::assign(dst, src, executor) picks
// explicitly.
#pragma once

#include <utility>

#include "leaf.hpp"

namespace tessel {

namespace detail {

// Reached only when no executor is included; the real overloads (exec/host.hpp) are more
// specialized and are found by argument-dependent lookup where the assignment is instantiated.
template <class Dst, class Src>
void execute_default(Dst&, Src const&, ...) {
  static_assert(sizeof(Dst) == 0,
                "tessel: evaluating an assignment needs an executor: include <tessel/tessel.hpp> "
                "(or <tessel/exec/host.hpp>).");
}

}  // namespace detail

// dst = src: evaluates src (broadcast to dst's shape) into the memory dst views, in one pass.
// Throws tessel::Error before writing anything when the shapes do not match.
template <Engine E, LayoutType L, Operand Src>
void assign_expression(Tensor<E, L>& dst, Src const& src) {
  execute_default(dst, as_expr(src));
}

}  // namespace tessel
