// What a Shampoo optimizer keeps per batch group whatever its preconditioner family, in the memory
// of its executor (exec::Memory<X>, exec/memory.hpp): the filtered gradient, momentum, grafting
// accumulator and iterate-averaging sequence, (count, block...) each when in use, and the step's
// scratch (gathered gradients, the direction and two preconditioning buffers). Also the host-side
// bookkeeping: the plan block of each slot, failed amortized computations in a row, this step's
// errors, the segments. A family keeps its own buffers beside these (its State,
// preconditioners/preconditioner.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../exec/memory.hpp"
#include "../plan/plan.hpp"
#include "../plan/segments.hpp"

namespace tessel::shampoo {

template <class T, class X>
struct GroupState {
  template <class U>
  using Buffer = typename exec::Memory<X>::template Buffer<U>;

  Extents shape;
  index_t count = 0;
  index_t numel = 0;
  Buffer<T> filtered, momentum, grafting;  // count * numel each, when in use
  Buffer<T> z;                             // iterate averaging: the descent sequence z
  Buffer<T> staged_momentum;               // a distributed step's momentum until it commits
  Buffer<T> grad, direction, search, spare;
  Buffer<T> scale;                  // per slot: the grafting rescale
  Buffer<double> per_slot;          // per slot and mode: the bound inputs, then the norms
  Buffer<double> row_norms;         // per mode and slot: the overflow pre-check's r_i
  std::vector<index_t> blocks;      // plan block of each slot
  std::vector<index_t> failures;    // consecutive failed amortized computations, per slot
  std::vector<std::string> errors;  // this step's, per slot
  std::vector<SegmentPlan> segments;

  // Whether the group has anything to step.
  bool empty() const noexcept { return count == 0 || numel == 0; }
};

}  // namespace tessel::shampoo
