// Segments of a Shampoo plan: the blocks of one parameter that share a block shape, as one box of
// the parameter's merged shape. Along each mode a parameter's blocks have the split size except
// the last, so the blocks of one shape take, per mode, either every index, all but the last, or
// only the last: a sub-grid, visited in row-major order by fill_plan (plan.hpp), which gives them
// consecutive slots of their batch group. A segment is therefore one strided view of the parameter,
// (grid..., block...) with strides (block * parameter stride..., parameter stride...), against one
// contiguous run of slots of the group's state, and each elementwise stage moves a segment in one
// assignment. A plan whose blocks of one shape do not fill their sub-grid (a distributed rank's
// owned_plan keeps only some blocks) gets one segment per block. Constexpr: a static plan's
// segments are computed by the compiler (static_plan.hpp makes types of them).
#pragma once

#include <cstddef>
#include <vector>

#include "../../core/config.hpp"
#include "plan.hpp"

namespace tessel::shampoo {

struct SegmentPlan {
  index_t param = 0;       // the parameter
  index_t group = 0;       // the batch group of its blocks (the block shape is the group's)
  index_t first_slot = 0;  // its blocks are slots [first_slot, first_slot + count) of the group
  index_t count = 0;       // blocks in the segment: the product of grid
  index_t offset = 0;      // element of the parameter where its first block starts
  Extents grid;            // blocks per mode, row-major
  Extents param_stride;    // strides of the parameter's merged shape (row-major)

  friend constexpr bool operator==(SegmentPlan const&, SegmentPlan const&) = default;
};

namespace detail {

constexpr Extents row_major_strides(Extents const& shape) {
  Extents s{};
  s.count = shape.rank();
  index_t stride = 1;
  for (index_t k = shape.rank() - 1; k >= 0; --k) {
    s[k] = stride;
    stride *= shape[k];
  }
  return s;
}

// Blocks per mode of the sub-grid of blocks of shape `block` in a parameter with grid g.
constexpr Extents sub_grid(GridModes const& g, Extents const& block) {
  Extents n{};
  for (index_t k = 0; k < g.rank; ++k) {
    if (g.last[k] == g.split) n.push_back(g.count[k]);                   // every index
    else if (block[k] == g.split) n.push_back(g.count[k] - 1);           // all but the last
    else n.push_back(1);                                                 // the last one
  }
  return n;
}

constexpr index_t dot(Extents const& a, Extents const& b) {
  index_t s = 0;
  for (index_t k = 0; k < a.rank(); ++k) s += a[k] * b[k];
  return s;
}

// Calls emit(segment) for every segment of `plan`, parameters in order and, within one, segments
// in the order of their first block.
template <class P, class B, class G, class Emit>
constexpr void visit_segments(BasicPlan<P, B, G> const& plan, Emit&& emit) {
  for (std::size_t p = 0; p < plan.num_params(); ++p) {
    ParamPlan const& pp = plan.params[p];
    GridModes const grid = grid_modes(pp.merged_shape, plan.max_preconditioner_dim);
    Extents const strides = row_major_strides(pp.merged_shape);
    auto const blocks = plan.blocks_of(p);
    // Groups of this parameter in order of first appearance (at most 2^rank of them).
    index_t seen[1u << max_param_rank]{};
    std::size_t num_seen = 0;
    for (BlockPlan const& b : blocks) {
      bool found = false;
      for (std::size_t i = 0; i < num_seen; ++i) found = found || seen[i] == b.group;
      if (!found) seen[num_seen++] = b.group;
    }
    for (std::size_t i = 0; i < num_seen; ++i) {
      index_t const group = seen[i];
      Extents const& shape = plan.groups[static_cast<std::size_t>(group)].shape;
      Extents const n = sub_grid(grid, shape);
      index_t box = 1;
      for (index_t k = 0; k < n.rank(); ++k) box *= n[k];
      index_t count = 0, first = -1, first_slot = 0;
      bool consecutive = true;
      for (std::size_t j = 0; j < blocks.size(); ++j) {
        if (blocks[j].group != group) continue;
        if (first < 0) {
          first = static_cast<index_t>(j);
          first_slot = blocks[j].slot;
        }
        consecutive = consecutive && blocks[j].slot == first_slot + count;
        ++count;
      }
      auto const offset_of = [&](std::size_t j) {
        return dot(plan.block_offset(static_cast<std::size_t>(pp.first_block) + j), strides);
      };
      if (count == box && consecutive) {
        emit(SegmentPlan{static_cast<index_t>(p), group, first_slot, count,
                         offset_of(static_cast<std::size_t>(first)), n, strides});
        continue;
      }
      Extents ones{};
      for (index_t k = 0; k < n.rank(); ++k) ones.push_back(1);
      for (std::size_t j = 0; j < blocks.size(); ++j)
        if (blocks[j].group == group)
          emit(SegmentPlan{static_cast<index_t>(p), group, blocks[j].slot, 1, offset_of(j), ones,
                           strides});
    }
  }
}

}  // namespace detail

// Block b alone as a segment (grid of ones): where one block's elements are in its parameter.
template <class P, class B, class G>
constexpr SegmentPlan block_segment(BasicPlan<P, B, G> const& plan, std::size_t b) {
  BlockPlan const& bp = plan.blocks[b];
  Extents const& merged = plan.params[static_cast<std::size_t>(bp.param)].merged_shape;
  Extents const strides = detail::row_major_strides(merged);
  Extents ones{};
  for (index_t k = 0; k < merged.rank(); ++k) ones.push_back(1);
  return SegmentPlan{bp.param, bp.group, bp.slot, 1, detail::dot(plan.block_offset(b), strides),
                     ones, strides};
}

// The number of segments of a plan.
template <class P, class B, class G>
constexpr std::size_t count_segments(BasicPlan<P, B, G> const& plan) {
  std::size_t n = 0;
  detail::visit_segments(plan, [&](SegmentPlan const&) { ++n; });
  return n;
}

// The segments of a plan, parameters in order (see the header comment).
// @post every block of the plan is in exactly one segment; a segment's blocks are consecutive slots
//       of its group, in the row-major order of its grid
template <class P, class B, class G>
std::vector<SegmentPlan> segments(BasicPlan<P, B, G> const& plan) {
  std::vector<SegmentPlan> out;
  detail::visit_segments(plan, [&](SegmentPlan const& s) { out.push_back(s); });
  return out;
}

}  // namespace tessel::shampoo
