// What a preconditioner family sees of the optimizer while it steps a batch group: the executor,
// the options, the plan (to name a slot's block in a sentence), the step number, and the views
// every stage takes of a group's flat buffers. Built by the step for each call (StepCore::context),
// so it never outlives the optimizer it points into.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/dtype.hpp"

#include "../../core/layout.hpp"
#include "../../exec/memory.hpp"
#include "../options.hpp"
#include "../plan/plan.hpp"
#include "../state/group_state.hpp"
#include "bounds.hpp"

namespace tessel::shampoo {

// One buffer of a state (a family's or the step's own): slot s holds the bytes
// [data + s * slot_bytes, data + (s + 1) * slot_bytes), saved under the key
// [param, "block_i", tail...] as `dtype` with shape `saved`. Its shape in memory is `shape`; the
// two differ only for a symmetric matrix saved as its upper triangle.
struct StateBuffer {
  std::byte* data = nullptr;
  index_t slot_bytes = 0;
  std::vector<std::string> tail;
  DType dtype = DType::f32;
  std::vector<index_t> shape, saved;

  template <class Buf>
  StateBuffer(Buf const& buffer, index_t bytes, std::vector<std::string> key, DType type,
              std::vector<index_t> in_memory, std::vector<index_t> as_saved)
      : data(reinterpret_cast<std::byte*>(buffer.data())),
        slot_bytes(bytes),
        tail(std::move(key)),
        dtype(type),
        shape(std::move(in_memory)),
        saved(std::move(as_saved)) {}
};

template <class T, class X>
struct StepContext {
  using B = exec::Memory<X>;
  using Group = GroupState<T, X>;
  using Scratch = decltype(B::template scratch<T>(std::declval<X const&>(), 0));
  template <class U>
  using Buffer = typename B::template Buffer<U>;

  X const& executor;
  Options const& options;
  Plan const& plan;
  std::vector<index_t> const& keys;  // the caller's index of each parameter (empty: p is p)
  index_t step;                      // the step in progress (or the last one taken)

  // The index parameter p has in sentences and state keys (ParamKeys).
  index_t key_of(index_t p) const { return keys.empty() ? p : keys[static_cast<std::size_t>(p)]; }
  // The plan block behind slot `slot` of group g.
  BlockPlan const& block_of(Group const& g, index_t slot) const {
    return plan.blocks[static_cast<std::size_t>(g.blocks[static_cast<std::size_t>(slot)])];
  }
  // "parameter p, block i" for slot `slot` of group g.
  std::string block_name(Group const& g, index_t slot) const {
    BlockPlan const& bp = block_of(g, slot);
    return detail::block_name(key_of(bp.param), bp.index);
  }

  // n elements at data as one contiguous vector (the flat path of the host executor).
  template <class U>
  static auto flat(U* data, index_t n) {
    return B::view(data, make_layout(make_shape(n)));
  }
  // A group buffer as (count, numel) rows, one per slot.
  template <class U>
  static auto rows(U* data, Group const& g) {
    return B::view(data, make_layout(make_shape(g.count, g.numel)));
  }
};

}  // namespace tessel::shampoo
