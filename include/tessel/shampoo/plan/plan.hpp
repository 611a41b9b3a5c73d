// The Shampoo blocking plan: for a list of parameter shapes, each parameter's merged shape
// (merge_small_dims), its blocks of at most max_preconditioner_dim per mode (multi_dim_split), each
// block's factor dimensions, buffer bytes and owner rank (distribute_buffer_sizes), and the batch
// groups of equal-shaped blocks that the step lowers to one batched call each. Static shapes and
// static max_preconditioner_dim / target dimensionality give a constexpr plan whose sizes are
// template arguments; run-time arguments give the same plan, from the same code, in vectors.
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/dyn_rank_tuple.hpp"
#include "../../core/error.hpp"
#include "../../core/int.hpp"
#include "../../core/int_tuple.hpp"
#include "../../core/merge_small_dims.hpp"
#include "../../core/multi_dim_split.hpp"
#include "distribute.hpp"

namespace tessel::shampoo {

// Distributed Shampoo's math.inf for max_preconditioner_dim (no blocking, no merge limit) and for
// target_parameter_dimensionality (keep each parameter's shape exactly as it is).
inline constexpr index_t infinite = std::numeric_limits<index_t>::max();

// Parameters of higher rank are refused (PyTorch's largest common parameters are 5-D).
inline constexpr std::size_t max_param_rank = 8;

using Extents = DynRankTuple<max_param_rank>;

// What a plan is computed from. MaxDim and TargetDims decide how many blocks there are, so they
// must be static for a static plan; group_size and dtype only decide values.
template <Integer MaxDim = Int<1024>, Integer TargetDims = Int<1>>
struct PlanOptions {
  MaxDim max_preconditioner_dim{};
  TargetDims target_parameter_dimensionality{};
  index_t group_size = 1;    // ranks the blocks are distributed over
  DType dtype = DType::f32;  // element type of the block buffers whose bytes are balanced
};

// plan_options(1024_c, 1_c, 8) or plan_options(max_dim, target_dims, ranks) at run time.
template <Integer MaxDim = Int<1024>, Integer TargetDims = Int<1>>
constexpr PlanOptions<MaxDim, TargetDims> plan_options(MaxDim max_dim = {}, TargetDims target = {},
                                                       index_t group_size = 1,
                                                       DType dtype = DType::f32) {
  return {max_dim, target, group_size, dtype};
}

// One parameter of the plan.
struct ParamPlan {
  Extents shape;         // as given
  Extents merged_shape;  // after merge_small_dims; the blocks tile this shape
  index_t first_block = 0;
  index_t num_blocks = 0;

  friend constexpr bool operator==(ParamPlan const&, ParamPlan const&) = default;
};

// Blocks of one shape, in plan order: one batched call per group. A block's shape is also its
// factor dimensions (factor k is shape[k] x shape[k]).
struct BatchGroup {
  Extents shape;
  index_t count = 0;
  index_t bytes = 0;          // numel * dtype size: the buffer that rank assignment balances
  index_t aligned_bytes = 0;  // bytes rounded up to a multiple of 64

  constexpr index_t numel() const {
    index_t n = 1;
    for (index_t e : shape) n *= e;
    return n;
  }
  // Elements of all factor matrices of one block (the sum of d^2 over its modes).
  constexpr index_t factor_numel() const {
    index_t n = 0;
    for (index_t e : shape) n += e * e;
    return n;
  }

  friend constexpr bool operator==(BatchGroup const&, BatchGroup const&) = default;
};

// One block: a box of its parameter's merged shape. Only what differs between blocks of one group
// is stored, so the plan of a large model stays small enough for the compiler to build quickly;
// shapes, bytes and offsets are derived (BasicPlan::block_shape, block_offset, ...).
struct BlockPlan {
  index_t param = 0;  // index of its parameter
  index_t index = 0;  // position among its parameter's blocks: the state key "block_<index>"
  index_t group = 0;  // batch group (blocks of equal shape)
  index_t slot = 0;   // position within the batch group
  index_t rank = 0;   // owner in the group of ranks

  friend constexpr bool operator==(BlockPlan const&, BlockPlan const&) = default;
};

namespace detail {

TESSEL_HOST_DEVICE constexpr Extents to_extents(DynRankTuple<max_param_rank> const& v) {
  return v;
}

// Merged shape following Distributed Shampoo: an empty parameter becomes (0); target_dims infinite
// keeps the shape as it is; otherwise the core's merge_small_dims.
constexpr Extents merged_shape_of(Extents const& shape, index_t max_dim, index_t target_dims) {
  for (index_t e : shape)
    if (e == 0) return Extents{0};
  if (target_dims == infinite) return shape;
  auto merged = tessel::detail::merge_small_dims_values(shape, max_dim, target_dims);
  Extents out{};
  for (index_t e : merged) out.push_back(e);
  return out;
}

// The split size that gives the same blocks without overflowing the grid arithmetic when
// max_dim is infinite.
constexpr index_t effective_split(Extents const& merged, index_t max_dim) {
  index_t largest = 1;
  for (index_t e : merged) largest = e > largest ? e : largest;
  return max_dim < largest ? max_dim : largest;
}

// A parameter's block grid, mode by mode: how many blocks, and the extent of the last one (the
// others have the split size). A block's shape depends only on which of its modes are last.
struct GridModes {
  index_t rank = 0;
  index_t split = 1;
  index_t count[max_param_rank]{};
  index_t last[max_param_rank]{};
  index_t blocks = 1;
};

constexpr GridModes grid_modes(Extents const& merged, index_t max_dim) {
  GridModes g{};
  g.rank = merged.rank();
  g.split = effective_split(merged, max_dim);
  for (index_t k = 0; k < g.rank; ++k) {
    // A zero extent gives one empty block along that mode, as multi_dim_split does.
    g.count[k] = merged[k] == 0 ? 1 : (merged[k] + g.split - 1) / g.split;
    g.last[k] = merged[k] - (g.count[k] - 1) * g.split;
    g.blocks *= g.count[k];
  }
  return g;
}

// Bit k of a mask: the block is the last one along mode k.
constexpr Extents mask_shape(GridModes const& g, unsigned mask) {
  Extents e{};
  for (index_t k = 0; k < g.rank; ++k) e.push_back(((mask >> k) & 1u) ? g.last[k] : g.split);
  return e;
}

constexpr unsigned first_mask(GridModes const& g) {
  unsigned mask = 0;
  for (index_t k = 0; k < g.rank; ++k)
    if (g.count[k] == 1) mask |= 1u << k;
  return mask;
}

// Advances a row-major block index (last mode fastest) and its mask.
constexpr void next_block(GridModes const& g, index_t* idx, unsigned& mask) {
  for (index_t k = g.rank - 1; k >= 0; --k) {
    if (++idx[k] < g.count[k]) {
      if (idx[k] == g.count[k] - 1) mask |= 1u << k;
      return;
    }
    idx[k] = 0;
    if (g.count[k] != 1) mask &= ~(1u << k);
  }
}

// The sizes of a plan, from a first pass over the shapes.
struct PlanCounts {
  std::size_t blocks = 0;
  std::size_t groups = 0;
};

constexpr PlanCounts count_plan(Extents const* shapes, std::size_t n, index_t max_dim,
                                index_t target_dims) {
  PlanCounts c{};
  std::vector<Extents> seen;
  for (std::size_t p = 0; p < n; ++p) {
    GridModes const g = grid_modes(merged_shape_of(shapes[p], max_dim, target_dims), max_dim);
    c.blocks += static_cast<std::size_t>(g.blocks);
    unsigned const always = first_mask(g);
    for (unsigned mask = 0; mask < (1u << g.rank); ++mask) {
      if ((mask & always) != always) continue;  // a mode with one block is always "last"
      Extents const e = mask_shape(g, mask);
      bool found = false;
      for (auto const& x : seen) found = found || x == e;
      if (!found) seen.push_back(e);
    }
  }
  c.groups = seen.size();
  return c;
}

// Distributes the blocks over the ranks exactly as distribute_buffer_sizes does, in O(blocks):
// a block's aligned bytes depend only on its group, so a counting sort over the groups' distinct
// sizes gives the visiting order (size descending, ties in plan order).
template <class BlockSeq, class GroupSeq>
constexpr void assign_ranks(BlockSeq& blocks, std::size_t nb, GroupSeq const& groups,
                            std::size_t ng, index_t group_size) {
  std::vector<index_t> sizes;  // distinct aligned sizes, descending
  for (std::size_t g = 0; g < ng; ++g) {
    index_t const s = groups[g].aligned_bytes;
    std::size_t pos = 0;
    while (pos < sizes.size() && sizes[pos] > s) ++pos;
    if (pos == sizes.size() || sizes[pos] != s)
      sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(pos), s);
  }
  std::vector<std::size_t> bucket_of_group = filled_vector(ng, std::size_t{0});
  std::vector<std::size_t> start = filled_vector(sizes.size() + 1, std::size_t{0});
  std::vector<std::size_t> order = filled_vector(nb, std::size_t{0});
  for (std::size_t g = 0; g < ng; ++g) {
    std::size_t b = 0;
    while (sizes[b] != groups[g].aligned_bytes) ++b;
    bucket_of_group[g] = b;
  }
  for (std::size_t i = 0; i < nb; ++i)
    ++start[bucket_of_group[static_cast<std::size_t>(blocks[i].group)] + 1];
  for (std::size_t b = 0; b < sizes.size(); ++b) start[b + 1] += start[b];
  for (std::size_t i = 0; i < nb; ++i)
    order[start[bucket_of_group[static_cast<std::size_t>(blocks[i].group)]]++] = i;
  std::vector<index_t> load = filled_vector(static_cast<std::size_t>(group_size), index_t{0});
  for (std::size_t k = 0; k < nb; ++k) {
    auto& block = blocks[order[k]];
    std::size_t best = 0;
    for (std::size_t r = 1; r < load.size(); ++r)
      if (load[r] < load[best]) best = r;
    load[best] += groups[static_cast<std::size_t>(block.group)].aligned_bytes;
    block.rank = static_cast<index_t>(best);
  }
}

// Fills a plan whose containers already hold counts.blocks / counts.groups entries.
template <class ParamSeq, class BlockSeq, class GroupSeq>
constexpr void fill_plan(Extents const* shapes, std::size_t n, index_t max_dim, index_t target_dims,
                         index_t group_size, DType dtype, ParamSeq& params, BlockSeq& blocks,
                         GroupSeq& groups) {
  std::size_t nb = 0;
  std::size_t ng = 0;
  index_t const element_bytes = static_cast<index_t>(dtype_size(dtype));
  for (std::size_t p = 0; p < n; ++p) {
    ParamPlan& pp = params[p];
    pp.shape = shapes[p];
    pp.merged_shape = merged_shape_of(shapes[p], max_dim, target_dims);
    GridModes const g = grid_modes(pp.merged_shape, max_dim);
    pp.first_block = static_cast<index_t>(nb);
    pp.num_blocks = g.blocks;
    // Group of each mask, found when the mask first occurs (so groups number in plan order).
    index_t group_of_mask[1u << max_param_rank];
    for (unsigned m = 0; m < (1u << g.rank); ++m) group_of_mask[m] = -1;
    index_t idx[max_param_rank]{};
    unsigned mask = first_mask(g);
    for (index_t i = 0; i < g.blocks; ++i) {
      if (group_of_mask[mask] < 0) {
        Extents const e = mask_shape(g, mask);
        std::size_t k = 0;
        while (k < ng && !(groups[k].shape == e)) ++k;
        if (k == ng) {
          groups[k].shape = e;
          groups[k].count = 0;
          groups[k].bytes = groups[k].numel() * element_bytes;
          groups[k].aligned_bytes = align_up(groups[k].bytes);
          ++ng;
        }
        group_of_mask[mask] = static_cast<index_t>(k);
      }
      BlockPlan& bp = blocks[nb++];
      bp.param = static_cast<index_t>(p);
      bp.index = i;
      bp.group = group_of_mask[mask];
      bp.slot = groups[static_cast<std::size_t>(bp.group)].count++;
      next_block(g, idx, mask);
    }
  }
  assign_ranks(blocks, nb, groups, ng, group_size);
}

inline void check_plan_arguments(std::span<Extents const> shapes, index_t max_dim,
                                 index_t target_dims, index_t group_size) {
  if (max_dim < 1)
    tessel::detail::throw_error(
        tessel::detail::sentence("max_preconditioner_dim must be >= 1, got ", max_dim, "."));
  if (target_dims < 1)
    tessel::detail::throw_error(tessel::detail::sentence(
        "target_parameter_dimensionality must be >= 1, got ", target_dims, "."));
  if (group_size < 1)
    tessel::detail::throw_error(
        tessel::detail::sentence("the group size must be >= 1, got ", group_size, "."));
  for (std::size_t p = 0; p < shapes.size(); ++p)
    for (index_t e : shapes[p])
      if (e < 0)
        tessel::detail::throw_error(tessel::detail::sentence("parameter ", p, " has shape ",
                                                             tessel::detail::shape_text(shapes[p]),
                                                             " with a negative extent."));
}

template <index_t MaxDim, index_t TargetDims>
struct StaticPlanCheck {
  static_assert(MaxDim >= 1, "tessel: max_preconditioner_dim must be >= 1.");
  static_assert(TargetDims >= 1, "tessel: target_parameter_dimensionality must be >= 1.");
  static constexpr bool ok = true;
};

template <class S>
struct StaticRankCheck {
  static_assert(FlatIntTuple<S>, "tessel: a Shampoo parameter shape must be a flat shape.");
  static_assert(max_leaves_v<S> <= max_param_rank,
                "tessel: Shampoo plans take parameters of rank <= 8.");
  static constexpr bool ok = true;
};

template <IntTuple S>
constexpr Extents extents_of(S const& s) {
  Extents out{};
  for_each_leaf(s, [&](auto v) { out.push_back(to_index(v)); });
  return out;
}

}  // namespace detail

// A blocking plan. ParamSeq, BlockSeq and GroupSeq are std::array (static plans) or std::vector
// (run-time plans); both answer the same questions and compare equal when their contents agree.
template <class ParamSeq, class BlockSeq, class GroupSeq>
struct BasicPlan {
  index_t max_preconditioner_dim = 1024;
  index_t target_parameter_dimensionality = 1;
  index_t group_size = 1;
  DType dtype = DType::f32;
  ParamSeq params{};
  BlockSeq blocks{};
  GroupSeq groups{};

  constexpr std::size_t num_params() const { return params.size(); }
  constexpr std::size_t num_blocks() const { return blocks.size(); }
  constexpr std::size_t num_groups() const { return groups.size(); }

  // The blocks of parameter p, in row-major block order.
  constexpr std::span<BlockPlan const> blocks_of(std::size_t p) const {
    return std::span<BlockPlan const>(blocks.data() + params[p].first_block,
                                      static_cast<std::size_t>(params[p].num_blocks));
  }
  constexpr BatchGroup const& group_of(std::size_t b) const {
    return groups[static_cast<std::size_t>(blocks[b].group)];
  }
  // Extents of block b; factor k of the block is block_shape(b)[k] squared.
  constexpr Extents const& block_shape(std::size_t b) const { return group_of(b).shape; }
  // Where block b starts in its parameter's merged shape.
  constexpr Extents block_offset(std::size_t b) const {
    ParamPlan const& p = params[static_cast<std::size_t>(blocks[b].param)];
    index_t const split = detail::effective_split(p.merged_shape, max_preconditioner_dim);
    index_t rest = blocks[b].index;
    Extents offset{};
    offset.count = p.merged_shape.rank();
    for (index_t k = p.merged_shape.rank() - 1; k >= 0; --k) {
      index_t const n = p.merged_shape[k] == 0 ? 1 : (p.merged_shape[k] + split - 1) / split;
      offset[k] = rest % n * split;
      rest /= n;
    }
    return offset;
  }
  // Total aligned bytes owned by rank r.
  constexpr index_t rank_bytes(index_t r) const {
    index_t total = 0;
    for (std::size_t b = 0; b < blocks.size(); ++b)
      if (blocks[b].rank == r) total += group_of(b).aligned_bytes;
    return total;
  }

  template <class P2, class B2, class G2>
  constexpr bool operator==(BasicPlan<P2, B2, G2> const& o) const {
    if (max_preconditioner_dim != o.max_preconditioner_dim ||
        target_parameter_dimensionality != o.target_parameter_dimensionality ||
        group_size != o.group_size || dtype != o.dtype || params.size() != o.params.size() ||
        blocks.size() != o.blocks.size() || groups.size() != o.groups.size())
      return false;
    for (std::size_t i = 0; i < params.size(); ++i)
      if (!(params[i] == o.params[i])) return false;
    for (std::size_t i = 0; i < blocks.size(); ++i)
      if (!(blocks[i] == o.blocks[i])) return false;
    for (std::size_t i = 0; i < groups.size(); ++i)
      if (!(groups[i] == o.groups[i])) return false;
    return true;
  }
};

// A plan computed at run time.
using Plan = BasicPlan<std::vector<ParamPlan>, std::vector<BlockPlan>, std::vector<BatchGroup>>;

// A plan computed by the compiler: P parameters, B blocks, G batch groups.
template <std::size_t P, std::size_t B, std::size_t G>
using StaticPlan =
    BasicPlan<std::array<ParamPlan, P>, std::array<BlockPlan, B>, std::array<BatchGroup, G>>;

// Any plan as a run-time plan (what the optimizer keeps).
template <class P, class B, class G>
Plan to_runtime(BasicPlan<P, B, G> const& plan) {
  Plan out;
  out.max_preconditioner_dim = plan.max_preconditioner_dim;
  out.target_parameter_dimensionality = plan.target_parameter_dimensionality;
  out.group_size = plan.group_size;
  out.dtype = plan.dtype;
  out.params.assign(plan.params.begin(), plan.params.end());
  out.blocks.assign(plan.blocks.begin(), plan.blocks.end());
  out.groups.assign(plan.groups.begin(), plan.groups.end());
  return out;
}

// The plan for run-time shapes (each a list of extents).
// @pre max_dim >= 1, target_dims >= 1 (or infinite), group_size >= 1, extents >= 0, rank <= 8
inline Plan make_plan(PlanOptions<index_t, index_t> const& options,
                      std::span<std::vector<index_t> const> shapes) {
  std::vector<Extents> ext;
  for (std::size_t p = 0; p < shapes.size(); ++p) {
    if (shapes[p].size() > max_param_rank)
      tessel::detail::throw_error(tessel::detail::sentence(
          "parameter ", p, " has rank ", shapes[p].size(),
          "; Shampoo plans take parameters of rank <= ", max_param_rank, "."));
    Extents e{};
    for (index_t x : shapes[p]) e.push_back(x);
    ext.push_back(e);
  }
  index_t const max_dim = options.max_preconditioner_dim;
  index_t const target = options.target_parameter_dimensionality;
  detail::check_plan_arguments(ext, max_dim, target, options.group_size);
  auto counts = detail::count_plan(ext.data(), ext.size(), max_dim, target);
  Plan plan;
  plan.max_preconditioner_dim = max_dim;
  plan.target_parameter_dimensionality = target;
  plan.group_size = options.group_size;
  plan.dtype = options.dtype;
  plan.params.resize(ext.size());
  plan.blocks.resize(counts.blocks);
  plan.groups.resize(counts.groups);
  detail::fill_plan(ext.data(), ext.size(), max_dim, target, options.group_size, options.dtype,
                    plan.params, plan.blocks, plan.groups);
  return plan;
}

inline Plan make_plan(PlanOptions<index_t, index_t> const& options,
                      std::vector<std::vector<index_t>> const& shapes) {
  return make_plan(options, std::span<std::vector<index_t> const>(shapes));
}

namespace detail {

template <index_t MaxDim, index_t TargetDims, class... Shapes>
struct StaticPlanShape {
  static constexpr std::array<Extents, sizeof...(Shapes)> shapes{extents_of(Shapes{})...};
  static constexpr PlanCounts counts = count_plan(shapes.data(), shapes.size(), MaxDim, TargetDims);
};

}  // namespace detail

// The plan for parameter shapes given as tessel shapes: make_plan(plan_options(1024_c, 1_c, 8),
// make_shape(4096_c, 11008_c), make_shape(11008_c)). When every shape and both MaxDim and
// TargetDims are static, the result is a StaticPlan, usable in constant expressions.
template <Integer MaxDim, Integer TargetDims, IntTuple... Shapes>
constexpr auto make_plan(PlanOptions<MaxDim, TargetDims> const& options, Shapes const&... shapes) {
  static_assert((detail::StaticRankCheck<Shapes>::ok && ...));
  if constexpr (StaticInt<MaxDim> && StaticInt<TargetDims> && (is_static_v<Shapes> && ...)) {
    static_assert(detail::StaticPlanCheck<MaxDim::value, TargetDims::value>::ok);
    using Shape = detail::StaticPlanShape<MaxDim::value, TargetDims::value, Shapes...>;
    StaticPlan<sizeof...(Shapes), Shape::counts.blocks, Shape::counts.groups> plan{};
    if (!std::is_constant_evaluated() && options.group_size < 1)
      tessel::detail::throw_error(
          tessel::detail::sentence("the group size must be >= 1, got ", options.group_size, "."));
    plan.max_preconditioner_dim = MaxDim::value;
    plan.target_parameter_dimensionality = TargetDims::value;
    plan.group_size = options.group_size;
    plan.dtype = options.dtype;
    detail::fill_plan(Shape::shapes.data(), Shape::shapes.size(), MaxDim::value, TargetDims::value,
                      options.group_size, options.dtype, plan.params, plan.blocks, plan.groups);
    return plan;
  } else {
    std::vector<std::vector<index_t>> v{to_vector(shapes)...};
    return make_plan(
        PlanOptions<index_t, index_t>{to_index(options.max_preconditioner_dim),
                                      to_index(options.target_parameter_dimensionality),
                                      options.group_size, options.dtype},
        v);
  }
}

}  // namespace tessel::shampoo
