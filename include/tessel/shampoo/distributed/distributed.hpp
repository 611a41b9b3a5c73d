// DistributedShampoo<T, Executor>: Shampoo's step spread over the ranks of a Communicator. The
// ranks form groups of num_trainers_per_group consecutive ranks; within a group, each rank keeps
// optimizer state only for the blocks the plan gives it (BlockPlan::rank) in a Shampoo<T> of its
// own (the same step, optimizer.hpp), computes their updates, and one all-gather per step
// exchanges every block's update as a flat buffer laid out by the plan, in the communication
// dtype; then every rank applies all updates, so all ranks end the step with the same parameters.
// Groups repeat the work independently (no traffic between groups per step). The executor decides
// where the buffers live: host executors over a host communicator (MPI), exec::Cuda over one that
// moves device memory (NCCL; <tessel/shampoo/device_distributed.cuh>); the code is the same.
//
// What is guaranteed (docs/shampoo.md, "Distribution"): the update u of each block is rounded to
// the communication dtype once, by its owner, and every rank applies w <- w - lr * u with the same
// expression as Shampoo<T>::step. Hence
//   - for any communication dtype, the parameters after any number of steps are bit for bit the
//     same on every rank, for every number of ranks and groups, including one rank;
//   - when the communication dtype holds every T exactly (f32 or f64 for float, f64 for double),
//     they are bit for bit those of the single-process Shampoo<T> on the same gradients;
//   - with bf16 or f16 they are those of Shampoo<T> whose updates are rounded to that dtype before
//     being applied (half an ulp of that dtype per element of u); an update the dtype cannot hold
//     (f16 beyond 65504) fails the step.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/float16.hpp"
#include "../../dist/communicator.hpp"
#include "../../exec/memory.hpp"
#include "../optimizer.hpp"
#include "../options.hpp"
#include "../plan/geometry.hpp"
#include "../plan/plan.hpp"
#include "../plan/segments.hpp"
#include "../state/state_dict.hpp"
#include "../step/stages.hpp"

namespace tessel::shampoo {

// How the step is spread over ranks.
struct DistributedOptions {
  // Ranks that share one copy of the work (a divisor of the number of ranks); -1: all ranks.
  index_t num_trainers_per_group = -1;
  // The dtype updates travel in: bf16, f16, f32 or f64 (see the header comment for what each
  // guarantees).
  DType communication_dtype = DType::f32;
};

// num_trainers_per_group with -1 resolved against `world_size` ranks; tessel::Error when it is not
// a divisor of world_size.
inline index_t resolved_group_size(DistributedOptions const& o, index_t world_size) {
  index_t const g = o.num_trainers_per_group == -1 ? world_size : o.num_trainers_per_group;
  if (g < 1 || g > world_size || world_size % g != 0)
    tessel::detail::throw_error(tessel::detail::sentence(
        "num_trainers_per_group must be -1 or a divisor of the number of ranks (", world_size,
        "), got ", o.num_trainers_per_group, "."));
  return g;
}

inline void validate(DistributedOptions const& o) {
  DType const d = o.communication_dtype;
  if (d != DType::bf16 && d != DType::f16 && d != DType::f32 && d != DType::f64)
    tessel::detail::throw_error(tessel::detail::sentence(
        "communication_dtype must be bf16, f16, f32 or f64, got ", dtype_name(d), "."));
}

// The same plan with its blocks distributed over `group_size` ranks (blocks, batch groups and slots
// are unchanged; only the owner ranks differ).
template <class P, class B, class G>
Plan with_group_size(BasicPlan<P, B, G> const& plan, index_t group_size) {
  std::vector<std::vector<index_t>> shapes;
  for (auto const& p : plan.params) shapes.emplace_back(p.shape.begin(), p.shape.end());
  return make_plan(
      PlanOptions<index_t, index_t>{plan.max_preconditioner_dim,
                                    plan.target_parameter_dimensionality, group_size, plan.dtype},
      shapes);
}

// The blocks of `plan` owned by `rank`, as a plan of their own: the same parameters and block
// indices (so state keys are unchanged), batch groups renumbered in plan order, slots in plan
// order, every block's rank `rank`.
template <class P, class B, class G>
Plan owned_plan(BasicPlan<P, B, G> const& plan, index_t rank) {
  Plan out = to_runtime(plan);
  out.blocks.clear();
  out.groups.clear();
  std::vector<index_t> renumber(plan.num_groups(), -1);
  for (std::size_t p = 0; p < plan.num_params(); ++p) {
    ParamPlan& pp = out.params[p];
    pp.first_block = static_cast<index_t>(out.blocks.size());
    pp.num_blocks = 0;
    for (BlockPlan b : plan.blocks_of(p)) {
      if (b.rank != rank) continue;
      auto& g = renumber[static_cast<std::size_t>(b.group)];
      if (g < 0) {
        g = static_cast<index_t>(out.groups.size());
        out.groups.push_back(plan.groups[static_cast<std::size_t>(b.group)]);
        out.groups.back().count = 0;
      }
      b.group = g;
      b.slot = out.groups[static_cast<std::size_t>(g)].count++;
      out.blocks.push_back(b);
      ++pp.num_blocks;
    }
  }
  return out;
}

namespace detail {

// Every rank throws `message` of rank `root` (which alone may know it); the text travels through
// the executor's memory, as the communicator expects.
template <class X>
[[noreturn]] void throw_shared(dist::Communicator& comm, X const& x, std::string message,
                               int root) {
  using B = exec::Memory<X>;
  std::uint64_t length = message.size();
  auto buffer = B::template allocate<std::uint64_t>(1);
  B::from_host(x, &length, 1, buffer.data());
  B::wait(x);
  comm.broadcast(std::as_writable_bytes(std::span(buffer.data(), 1)), root);
  B::to_host(x, buffer.data(), 1, &length);
  B::wait(x);
  message.resize(static_cast<std::size_t>(length));
  if (length > 0) {
    auto text = B::template allocate<char>(static_cast<index_t>(length));
    B::from_host(x, message.data(), static_cast<index_t>(length), text.data());
    B::wait(x);
    comm.broadcast(std::as_writable_bytes(std::span(text.data(), message.size())), root);
    B::to_host(x, text.data(), static_cast<index_t>(length), message.data());
    B::wait(x);
  }
  tessel::detail::throw_error(message);
}

// Runs fn on every rank of comm. When it throws tessel::Error on some ranks, every rank throws the
// error of the lowest such rank, so no rank goes on alone into a collective the others skip and all
// report the same sentence. Costs one all-reduce, and a broadcast when something failed.
template <class X, class F>
void agree(dist::Communicator& comm, X const& x, F&& fn) {
  using B = exec::Memory<X>;
  std::string message;
  std::vector<double> failed(static_cast<std::size_t>(comm.size()), 0.0);
  try {
    fn();
  } catch (Error const& e) {
    message = e.what();
    failed[static_cast<std::size_t>(comm.rank())] = 1.0;
  }
  auto const n = static_cast<index_t>(failed.size());
  auto buffer = B::template allocate<double>(n);
  B::from_host(x, failed.data(), n, buffer.data());
  B::wait(x);
  comm.all_reduce_sum(std::span<double>(buffer.data(), failed.size()));
  B::to_host(x, buffer.data(), n, failed.data());
  B::wait(x);
  auto first = std::find(failed.begin(), failed.end(), 1.0);
  if (first == failed.end()) return;
  throw_shared(comm, x, std::move(message), static_cast<int>(first - failed.begin()));
}
template <class F>
void agree(dist::Communicator& comm, F&& fn) {
  agree(comm, exec::Serial{}, std::forward<F>(fn));
}

// 1 where a finite value of T becomes Inf in the communication type U, else 0. (x - x == 0 is
// "finite" on the host and the device alike.)
template <class U>
struct NotHeldBy {
  template <class V>
  TESSEL_HOST_DEVICE int operator()(V v) const {
    auto const narrowed = tessel::load_element(tessel::store_element<U>(v));
    return v - v == V(0) && !(narrowed - narrowed == decltype(narrowed)(0)) ? 1 : 0;
  }
};

// f(U{}) with U the C++ type of a communication dtype.
template <class F>
decltype(auto) visit_communication_dtype(DType d, F&& f) {
  if (d == DType::bf16) return f(bfloat16{});
  if (d == DType::f16) return f(half{});
  if (d == DType::f32) return f(float{});
  return f(double{});
}

}  // namespace detail

template <class T, class X = exec::Auto>
requires exec::Executor<X>
class DistributedShampoo {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "tessel: DistributedShampoo<T> takes float or double parameters.");
  using B = exec::Memory<X>;
  using Local = Shampoo<T, RuntimePlan, X>;

 public:
  using value_type = T;
  using executor_type = X;

  // Collective: every rank of `world` constructs it with the same plan and options. The plan must
  // distribute its blocks over the group size (plan.group_size == num_trainers_per_group, or the
  // number of ranks for -1; with_group_size gives such a plan). Every check throws the same
  // tessel::Error on every rank. `world` must outlive the optimizer, and move the memory of the
  // executor (host memory for host executors; device memory on executor.stream for exec::Cuda).
  template <class P, class BB, class G>
  DistributedShampoo(dist::Communicator& world, BasicPlan<P, BB, G> const& plan,
                     Options options = {}, DistributedOptions distributed = {}, X executor = {})
      : world_(&world), plan_(to_runtime(plan)), distributed_(distributed), executor_(executor) {
    validate(options);
    validate(distributed_);
    index_t const group_size = resolved_group_size(distributed_, world.size());
    if (plan_.group_size != group_size)
      tessel::detail::throw_error(tessel::detail::sentence(
          "the plan distributes its blocks over ", plan_.group_size,
          " ranks but the groups here have ", group_size, " (num_trainers_per_group ",
          distributed_.num_trainers_per_group, " of ", world.size(),
          " ranks); make the plan with group size ", group_size, "."));
    group_ = world.split(world.rank() / static_cast<int>(group_size));
    detail::agree(world, executor_, [&] {
      local_ =
          std::make_unique<Local>(owned_plan(plan_, group_->rank()), std::move(options), executor_);
      local_->check_updates_express_the_step();  // exchanged updates cannot average iterates
    });
    build_layout();
  }

  DistributedShampoo(DistributedShampoo const&) = delete;
  DistributedShampoo& operator=(DistributedShampoo const&) = delete;

  // The full plan (every block, with its owner in the group).
  Plan const& plan() const noexcept { return plan_; }
  Options const& options() const noexcept { return local_->options(); }
  DistributedOptions const& distributed_options() const noexcept { return distributed_; }
  index_t step_count() const noexcept { return local_->step_count(); }
  void set_lr(double lr) { local_->set_lr(lr); }

  // Rank in the world communicator, the group it belongs to, and its rank within the group.
  int rank() const { return world_->rank(); }
  int num_ranks() const { return world_->size(); }
  int group_index() const { return world_->rank() / group_->size(); }
  int group_rank() const { return group_->rank(); }
  int group_size() const { return group_->size(); }

  // Plan indices of the blocks this rank keeps state for, in plan order.
  std::span<index_t const> owned_blocks() const noexcept { return owned_; }
  // The optimizer over this rank's blocks (its block b is owned_blocks()[b]).
  Local const& local() const noexcept { return *local_; }

  // Bytes of one step's all-gather buffer (every rank's contribution, headers included), and of
  // this rank's contribution: a rank receives exchanged_bytes() - sent_bytes() per step.
  std::size_t exchanged_bytes() const noexcept { return offsets_.back(); }
  std::size_t sent_bytes() const noexcept {
    return counts_[static_cast<std::size_t>(group_->rank())];
  }

  // One step, collective over the group: the same arguments, checks and errors as
  // Shampoo<T>::step, with the same gradients on every rank.
  // @pre every rank of the group passes the same params and grads (bit for bit, as after a
  //      data-parallel all-reduce); then every rank throws the same errors at the same points and
  //      on any error no parameter is changed.
  void step(std::span<std::span<T> const> params, std::span<std::span<T const> const> grads) {
    local_->check_step_arguments(params, grads, "a distributed step");
    auto const ptrs = Local::pointers(params, grads);
    run(ptrs.first, ptrs.second);
  }
  void step(std::vector<std::span<T>> const& params, std::vector<std::span<T const>> const& grads) {
    step(std::span<std::span<T> const>(params), std::span<std::span<T const> const>(grads));
  }
  // Bare pointers in the executor's memory (the device's spelling). @pre planned sizes
  void step(std::vector<T*> const& params, std::vector<T const*> const& grads) {
    local_->check_counts(params.size(), grads.size());
    local_->require_every_gradient(grads, "a distributed step");
    run(params, grads);
  }
  void step(std::initializer_list<T*> params, std::initializer_list<T const*> grads) {
    step(std::vector<T*>(params), std::vector<T const*>(grads));
  }

  // This rank's state: the keys Shampoo<T>::state_dict gives for its own blocks, and the steps.
  StateDict state_dict() const { return local_->state_dict(); }

 private:
  static constexpr std::size_t header_bytes = sizeof(std::int64_t);

  void run(std::vector<T*> const& params, std::vector<T const*> const& grads);

  // This rank's updates, rounded to the communication dtype, into the payload of send_; the first
  // update the dtype cannot hold (its index and value), or none.
  std::optional<std::pair<index_t, T>> pack() {
    index_t const n = local_->update_numel();
    auto const updates = B::view(local_updates_.data(), make_layout(make_shape(n)));
    std::optional<std::pair<index_t, T>> bad;
    detail::visit_communication_dtype(distributed_.communication_dtype, [&](auto u) {
      using U = decltype(u);
      assign(B::view(reinterpret_cast<U*>(send_.data() + header_bytes), make_layout(make_shape(n))),
             updates, executor_);
      if constexpr (sizeof(U) < sizeof(T)) {
        if (n == 0) return;
        assign(B::view(first_bad_.data(), make_layout(make_shape(index_t{1}))),
               argmax(map(detail::NotHeldBy<U>{}, updates), keep), executor_);
        index_t at = 0;
        B::to_host(executor_, first_bad_.data(), 1, &at);
        B::wait(executor_);
        T value{};
        B::to_host(executor_, local_updates_.data() + at, 1, &value);
        B::wait(executor_);
        if (detail::NotHeldBy<U>{}(value) != 0) bad = std::pair{at, value};
      }
    });
    return bad;
  }

  // Every block's update into the slots of its batch group of the full plan, then one
  // assignment w <- w - lr u per segment: the expression Shampoo<T>::step applies.
  void apply(std::vector<T*> const& params) {
    detail::visit_communication_dtype(distributed_.communication_dtype, [&](auto u) {
      using U = decltype(u);
      for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
        auto const r = static_cast<std::size_t>(plan_.blocks[b].rank);
        index_t const numel = plan_.group_of(b).numel();
        auto const at = offsets_[r] + header_bytes + (update_at_[b] - rank_first_[r]) * sizeof(U);
        assign(
            B::view(all_updates_.data() +
                        group_first_[static_cast<std::size_t>(plan_.blocks[b].group)] +
                        plan_.blocks[b].slot * numel,
                    make_layout(make_shape(numel))),
            B::view(reinterpret_cast<U const*>(recv_.data() + at), make_layout(make_shape(numel))),
            executor_);
      }
    });
    T const lr = T(local_->options().lr);
    for (SegmentPlan const& sp : segments_) {
      auto const seg = runtime_segment(sp, plan_.groups[static_cast<std::size_t>(sp.group)].shape);
      index_t const numel = plan_.groups[static_cast<std::size_t>(sp.group)].numel();
      stages::apply_update(
          executor_,
          B::view(params[static_cast<std::size_t>(sp.param)] + sp.offset, seg.param_layout()),
          B::view(all_updates_.data() + group_first_[static_cast<std::size_t>(sp.group)] +
                      sp.first_slot * numel,
                  seg.state_layout()),
          lr);
    }
  }

  // first: the smallest failure code of every rank (kind * blocks + block), or none (int64 max).
  // On a failure its block's owner broadcasts its message and every rank throws it; message is
  // this rank's own (used when it is the owner).
  void throw_first_failure(std::int64_t first, std::string message) {
    if (first == none) return;
    auto const nb = static_cast<std::int64_t>(plan_.num_blocks());
    int const owner = static_cast<int>(plan_.blocks[static_cast<std::size_t>(first % nb)].rank);
    detail::throw_shared(*group_, executor_, std::move(message), owner);
  }

  template <class U>
  friend void save_checkpoint(DistributedShampoo<U> const&, std::filesystem::path const&);
  template <class U>
  friend void load_checkpoint(DistributedShampoo<U>&, std::filesystem::path const&);

  static constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();

  // load_state_dict in two halves, so a checkpoint load can agree across ranks in between.
  index_t check_local_state(StateDict const& state) const {
    return local_->check_state_dict(state);
  }
  void assign_local_state(StateDict const& state, index_t step) {
    local_->assign_state_dict(state, step);
  }

  std::size_t element_bytes() const { return dtype_size(distributed_.communication_dtype); }

  // The all-gather layout: rank r's contribution is an 8-byte header and the updates of its blocks
  // in plan order (block b's at update_at_[b] - rank_first_[r] elements into it); all_updates_
  // holds them as T, group by group and slot by slot of the full plan (group_first_).
  void build_layout();

  template <class U>
  using Buffer = typename B::template Buffer<U>;

  dist::Communicator* world_;
  std::unique_ptr<dist::Communicator> group_;
  Plan plan_;
  DistributedOptions distributed_;
  X executor_;
  std::unique_ptr<Local> local_;
  std::vector<index_t> owned_;
  std::vector<std::size_t> counts_, offsets_, rank_first_, update_at_, group_first_;
  std::vector<SegmentPlan> segments_;  // of the full plan
  Buffer<T> local_updates_, all_updates_;
  Buffer<std::byte> send_, recv_;
  Buffer<std::int64_t> codes_;  // this rank's bound-check code, then every rank's
  Buffer<index_t> first_bad_;   // where the first update the communication dtype cannot hold is
};

// Out of the class, so not inline: a translation unit that declares the instantiation extern
// (TESSEL_SHAMPOO_PREBUILT, below) compiles none of the step.
template <class T, class X>
requires exec::Executor<X>
void DistributedShampoo<T, X>::run(std::vector<T*> const& params,
                                   std::vector<T const*> const& grads) {
  // A gradient that would overflow a factor is refused before anything changes, as Shampoo
  // refuses it: each rank bounds its own blocks, and one all-gather of 8 bytes per rank makes
  // every rank throw the first failure in plan order (so no rank counts the step alone).
  {
    std::int64_t code = none;
    std::string message;
    if (auto bound = local_->check_gradients_and_bounds(params, grads)) {
      code = static_cast<std::int64_t>(owned_[bound->block]);
      message = std::move(bound->message);
    }
    B::from_host(executor_, &code, 1, codes_.data());
    B::wait(executor_);
    auto const n = static_cast<std::size_t>(group_->size());
    group_->all_gather(std::as_bytes(std::span(codes_.data(), 1)),
                       std::as_writable_bytes(std::span(codes_.data() + 1, n)));
    std::vector<std::int64_t> codes(n);
    B::to_host(executor_, codes_.data() + 1, static_cast<index_t>(n), codes.data());
    B::wait(executor_);
    throw_first_failure(*std::min_element(codes.begin(), codes.end()), std::move(message));
  }
  auto failure = local_->template prepare_updates<true>(params, grads, local_updates_.data(), true);
  // The header: this rank's first failure as kind * blocks + block (accumulation failures before
  // updates that the communication dtype cannot hold, as one process meets them), or none.
  auto const nb = static_cast<std::int64_t>(plan_.num_blocks());
  std::int64_t code = none;
  std::string message;
  if (failure) {
    code = static_cast<std::int64_t>(owned_[failure->block]);
    message = std::move(failure->message);
  } else if (auto bad = pack()) {
    auto const lb =
        static_cast<std::size_t>(std::upper_bound(local_->update_offsets_.begin(),
                                                  local_->update_offsets_.end(), bad->first) -
                                 local_->update_offsets_.begin() - 1);
    BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(owned_[lb])];
    code = nb + static_cast<std::int64_t>(owned_[lb]);
    message = tessel::detail::sentence(
        "the update of ", shampoo::detail::block_name(bp.param, bp.index), " has the value ",
        bad->second, " at element ", bad->first - local_->update_offset(lb), ", which ",
        dtype_name(distributed_.communication_dtype),
        " cannot hold; choose a wider communication_dtype.");
  }
  B::from_host(executor_, reinterpret_cast<std::byte const*>(&code),
               static_cast<index_t>(header_bytes), send_.data());
  B::wait(executor_);
  group_->all_gather_v(std::span<std::byte const>(send_.data(), sent_bytes()),
                       std::span<std::byte>(recv_.data(), exchanged_bytes()), counts_);
  std::vector<std::int64_t> headers(counts_.size(), none);
  for (std::size_t r = 0; r < counts_.size(); ++r)
    B::to_host(executor_, recv_.data() + offsets_[r], static_cast<index_t>(header_bytes),
               reinterpret_cast<std::byte*>(headers.data() + r));
  B::wait(executor_);
  std::int64_t const first = *std::min_element(headers.begin(), headers.end());
  throw_first_failure(first, std::move(message));
  local_->commit_momentum();
  apply(params);
}

template <class T, class X>
requires exec::Executor<X>
void DistributedShampoo<T, X>::build_layout() {
  auto const G = static_cast<std::size_t>(group_->size());
  counts_.assign(G, header_bytes);
  rank_first_.assign(G + 1, 0);
  std::vector<index_t> numel(G, 0);
  for (auto const& b : plan_.blocks)
    numel[static_cast<std::size_t>(b.rank)] +=
        plan_.groups[static_cast<std::size_t>(b.group)].numel();
  for (std::size_t r = 0; r < G; ++r) {
    counts_[r] += static_cast<std::size_t>(numel[r]) * element_bytes();
    rank_first_[r + 1] = rank_first_[r] + static_cast<std::size_t>(numel[r]);
  }
  offsets_.assign(G + 1, 0);
  for (std::size_t r = 0; r < G; ++r) offsets_[r + 1] = offsets_[r] + counts_[r];
  std::vector<std::size_t> next(rank_first_.begin(), rank_first_.end() - 1);
  update_at_.resize(plan_.num_blocks());
  for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
    auto const r = static_cast<std::size_t>(plan_.blocks[b].rank);
    update_at_[b] = next[r];
    next[r] += static_cast<std::size_t>(plan_.group_of(b).numel());
    if (plan_.blocks[b].rank == group_->rank()) owned_.push_back(static_cast<index_t>(b));
  }
  group_first_.assign(plan_.num_groups() + 1, 0);
  for (std::size_t g = 0; g < plan_.num_groups(); ++g)
    group_first_[g + 1] =
        group_first_[g] + static_cast<std::size_t>(plan_.groups[g].count * plan_.groups[g].numel());
  segments_ = segments(plan_);
  local_updates_ = B::template allocate<T>(local_->update_numel());
  all_updates_ = B::template allocate<T>(static_cast<index_t>(group_first_.back()));
  send_ = B::template allocate<std::byte>(static_cast<index_t>(sent_bytes()));
  recv_ = B::template allocate<std::byte>(static_cast<index_t>(exchanged_bytes()));
  codes_ = B::template allocate<std::int64_t>(static_cast<index_t>(G + 1));
  first_bad_ = B::template allocate<index_t>(1);
  local_->prepare_staging();
}

}  // namespace tessel::shampoo

// Compiled once in the tessel::shampoo_prebuilt library (see the end of shampoo/optimizer.hpp).
#if defined(TESSEL_SHAMPOO_PREBUILT)
namespace tessel::shampoo {
extern template class DistributedShampoo<float>;
extern template class DistributedShampoo<double>;
}  // namespace tessel::shampoo
#endif
