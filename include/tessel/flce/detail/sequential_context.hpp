// STAND-IN for the exec layer's SequentialContext (branch `expr`, not merged yet): the execution
// context a kernel body sees when the host runs it. Replace every use with exec's context when it
// lands; the interface is the same (lane(), lanes(), reduce(partial, combine)).
#pragma once

#include "../../core/config.hpp"
#include "../../core/int.hpp"

namespace tessel::flce::detail {

// One lane: a body's loops `for (j = lane(); j < n; j += lanes())` become plain unit-stride
// loops (lane and lanes are static), and a reduction over lanes is the lane's own partial.
struct SequentialContext {
  TESSEL_HOST_DEVICE static constexpr Int<0> lane() noexcept { return {}; }
  TESSEL_HOST_DEVICE static constexpr Int<1> lanes() noexcept { return {}; }

  // @post every lane gets the combination of all lanes' partials (here: the one partial).
  template <class T, class Combine>
  TESSEL_HOST_DEVICE constexpr T reduce(T partial, Combine const&) const {
    return partial;
  }
};

}  // namespace tessel::flce::detail
