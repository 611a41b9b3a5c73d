// Execution contexts for kernel bodies. A body loops `for (i = ctx.lane(); i < n; i +=
// ctx.lanes())` and combines per-lane partials with ctx.reduce(partial, combine); the same body
// runs on the host with SequentialContext (one lane) and in a CUDA kernel with a context whose
// lanes are the threads of a block and whose reduce is a block reduction.
#pragma once

#include <concepts>

#include "../../core/config.hpp"
#include "../../core/int.hpp"

namespace tessel::exec {

// The host twin's context: a single lane, so reduce is the identity. lane() and lanes() are static
// integers, so a body's strided loops become plain unit-stride loops the compiler vectorizes.
struct SequentialContext {
  TESSEL_HOST_DEVICE static constexpr Int<0> lane() noexcept { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<1> lanes() noexcept { return {}; }
  // @post every lane receives the combination of all lanes' partials (here: the one partial)
  template <class T, class Combine>
  TESSEL_HOST_DEVICE constexpr T reduce(T partial, Combine const&) const {
    return partial;
  }
};

// What a body needs of its context.
template <class C>
concept ExecutionContext = requires(C const& c) {
  { c.lane() } -> std::convertible_to<index_t>;
  { c.lanes() } -> std::convertible_to<index_t>;
};

}  // namespace tessel::exec
