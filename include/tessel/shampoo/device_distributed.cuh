// DeviceDistributedShampoo: DistributedShampoo's step (tessel/shampoo/distributed.hpp) for float
// parameters in device memory, over NCCL. Each rank runs DeviceShampoo on the blocks it owns,
// rounds their updates to the communication dtype on the device, and one NCCL all-gather (a
// grouped broadcast per rank, as NcclCommunicator::all_gather_v does) exchanges the flat buffer
// laid out by the plan; every rank then applies all updates with the host's apply_update body.
// The buffer layout, the failure protocol and the guarantees are the host optimizer's; the device
// step matches the host step within float tolerance (cuBLAS and cuSOLVER round differently).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <tessel/core/float16.hpp>
#include <tessel/dist/nccl.hpp>
#include <tessel/shampoo/distributed.hpp>

#include "device_shampoo.cuh"

namespace tessel::shampoo {

class DeviceDistributedShampoo {
 public:
  // Collective over `world` (one GPU per rank), with the host optimizer's checks and sentences.
  // `world` must outlive the optimizer.
  template <class P, class B, class G>
  DeviceDistributedShampoo(dist::NcclCommunicator& world, BasicPlan<P, B, G> const& plan,
                           Options options = {}, DistributedOptions distributed = {})
      : stream_(world.stream()), plan_(to_runtime(plan)), distributed_(distributed) {
    validate(options);
    validate(distributed_);
    index_t const group_size = resolved_group_size(distributed_, world.size());
    if (plan_.group_size != group_size)
      tessel::detail::throw_error(tessel::detail::sentence(
          "the plan distributes its blocks over ", plan_.group_size,
          " ranks but the groups here have ", group_size, " (num_trainers_per_group ",
          distributed_.num_trainers_per_group, " of ", world.size(),
          " ranks); make the plan with group size ", group_size, "."));
    // Options every rank can check for every block shape, so no rank fails alone below.
    Shampoo<float> probe(one_block_per_group(plan_), options);
    group_ = world.split(world.rank() / static_cast<int>(group_size));
    local_ = std::make_unique<DeviceShampoo>(owned_plan(plan_, group_->rank()), options);
    build_layout();
  }

  Plan const& plan() const noexcept { return plan_; }
  index_t step_count() const noexcept { return local_->step_count(); }
  std::span<index_t const> owned_blocks() const noexcept { return owned_; }
  std::size_t exchanged_bytes() const noexcept { return offsets_.back(); }
  std::size_t sent_bytes() const noexcept {
    return counts_[static_cast<std::size_t>(group_->rank())];
  }
  // This rank's state (copied to the host), under the host optimizer's keys.
  StateDict state_dict() const { return local_->state_dict(); }

  // params[i] and grads[i] in device memory, the same on every rank of the group; the same
  // semantics and errors as DistributedShampoo<float>::step, except that (as in DeviceShampoo) a
  // gradient that would overflow a factor is found after the factors were accumulated.
  void step(std::vector<float*> const& params, std::vector<float const*> const& grads) {
    auto failure = local_->prepare_updates(params, grads, local_updates_.data(), true);
    auto const nb = static_cast<std::int64_t>(plan_.num_blocks());
    std::int64_t code = std::numeric_limits<std::int64_t>::max();
    std::string message;
    DType const dtype = distributed_.communication_dtype;
    std::byte* payload = send_.data() + header_bytes;
    if (failure) {
      code = static_cast<std::int64_t>(owned_[failure->first]);
      message = std::move(failure->second);
    } else if (local_updates_.size() != 0) {
      auto const n = static_cast<index_t>(local_updates_.size());
      unsigned long long const none = std::numeric_limits<unsigned long long>::max();
      first_bad_.upload(&none, 1);
      unsigned const grid = kernels::grid_for(n);
      float const* in = local_updates_.data();
      switch (dtype) {
        case DType::bf16:
          kernels::pack_kernel<<<grid, kernels::threads_per_block>>>(
              in, n, reinterpret_cast<bfloat16*>(payload), first_bad_.data());
          break;
        case DType::f16:
          kernels::pack_kernel<<<grid, kernels::threads_per_block>>>(
              in, n, reinterpret_cast<half*>(payload), first_bad_.data());
          break;
        case DType::f32:
          kernels::pack_kernel<<<grid, kernels::threads_per_block>>>(
              in, n, reinterpret_cast<float*>(payload), first_bad_.data());
          break;
        default:
          kernels::pack_kernel<<<grid, kernels::threads_per_block>>>(
              in, n, reinterpret_cast<double*>(payload), first_bad_.data());
          break;
      }
      unsigned long long const bad = first_bad_.download()[0];
      if (bad != none) {
        auto const lb = local_block_of(static_cast<index_t>(bad));
        BlockPlan const& bp = plan_.blocks[static_cast<std::size_t>(owned_[lb])];
        float value = 0.0f;
        detail::cuda_check(cudaMemcpy(&value, in + bad, sizeof value, cudaMemcpyDeviceToHost),
                           "reading an update");
        code = nb + static_cast<std::int64_t>(owned_[lb]);
        message = tessel::detail::sentence(
            "the update of ", shampoo::detail::block_name(bp.param, bp.index), " has the value ",
            shampoo::detail::format_number(static_cast<double>(value)), " at element ",
            static_cast<index_t>(bad) - local_->update_offset(lb), ", which ", dtype_name(dtype),
            " cannot hold; choose a wider communication_dtype.");
      }
    }
    detail::cuda_check(cudaMemcpy(send_.data(), &code, sizeof code, cudaMemcpyHostToDevice),
                       "writing the exchange header");
    detail::cuda_check(cudaDeviceSynchronize(), "packing the updates");
    group_->all_gather_v(std::span<std::byte const>(send_.data(), send_.size()),
                         std::span<std::byte>(recv_.data(), recv_.size()), counts_);
    detail::cuda_check(cudaStreamSynchronize(stream_), "the all-gather of the updates");
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    for (std::size_t r = 0; r < counts_.size(); ++r) {
      std::int64_t c = 0;
      detail::cuda_check(
          cudaMemcpy(&c, recv_.data() + offsets_[r], sizeof c, cudaMemcpyDeviceToHost),
          "reading an exchange header");
      first = std::min(first, c);
    }
    if (first != std::numeric_limits<std::int64_t>::max()) {
      int const owner = static_cast<int>(plan_.blocks[static_cast<std::size_t>(first % nb)].rank);
      throw_shared_message(message, owner);
    }
    local_->commit_momentum();
    for (std::size_t r = 0; r < counts_.size(); ++r) {
      auto const n = static_cast<index_t>((counts_[r] - header_bytes) / dtype_size(dtype));
      if (n == 0) continue;
      std::byte const* in = recv_.data() + offsets_[r] + header_bytes;
      float* out = all_updates_.data() + rank_first_[r];
      unsigned const grid = kernels::grid_for(n);
      switch (dtype) {
        case DType::bf16:
          kernels::unpack_kernel<<<grid, kernels::threads_per_block>>>(
              reinterpret_cast<bfloat16 const*>(in), n, out);
          break;
        case DType::f16:
          kernels::unpack_kernel<<<grid, kernels::threads_per_block>>>(
              reinterpret_cast<half const*>(in), n, out);
          break;
        case DType::f32:
          kernels::unpack_kernel<<<grid, kernels::threads_per_block>>>(
              reinterpret_cast<float const*>(in), n, out);
          break;
        default:
          kernels::unpack_kernel<<<grid, kernels::threads_per_block>>>(
              reinterpret_cast<double const*>(in), n, out);
          break;
      }
    }
    float const lr = static_cast<float>(local_->options().lr);
    for (auto& g : apply_) {
      std::vector<float*> ptrs(g.params.size());
      for (std::size_t s = 0; s < ptrs.size(); ++s)
        ptrs[s] = params[static_cast<std::size_t>(g.params[s])];
      g.param_ptrs.upload(ptrs.data(), ptrs.size());
      dim3 const grid(kernels::grid_for(g.numel), static_cast<unsigned>(ptrs.size()));
      kernels::apply_update_kernel<<<grid, kernels::threads_per_block>>>(
          g.geometry.data(), g.param_ptrs.data(), all_updates_.data(), g.offsets.data(), lr);
    }
    detail::cuda_check(cudaDeviceSynchronize(), "applying the updates");
  }

 private:
  static constexpr std::size_t header_bytes = sizeof(std::int64_t);

  // Blocks of one shape in the full plan, for the apply kernel.
  struct ApplyGroup {
    index_t numel = 0;
    std::vector<index_t> params;  // per slot
    DeviceBuffer<BlockGeometry> geometry;
    DeviceBuffer<index_t> offsets;  // per slot, into all_updates_
    DeviceBuffer<float*> param_ptrs;
  };

  // The first block of each batch group: enough for the checks that depend on block shapes.
  static Plan one_block_per_group(Plan const& plan) {
    Plan out = plan;
    out.blocks.clear();
    for (auto& g : out.groups) g.count = 0;
    for (auto& p : out.params) p.num_blocks = 0;
    for (BlockPlan b : plan.blocks) {
      auto& g = out.groups[static_cast<std::size_t>(b.group)];
      if (g.count != 0) continue;
      b.slot = g.count++;
      auto& p = out.params[static_cast<std::size_t>(b.param)];
      if (p.num_blocks++ == 0) p.first_block = static_cast<index_t>(out.blocks.size());
      out.blocks.push_back(b);
    }
    return out;
  }

  std::size_t local_block_of(index_t element) const {
    std::size_t b = 0;
    while (b + 1 < owned_.size() && local_->update_offset(b + 1) <= element) ++b;
    return b;
  }

  // Every rank throws the message of `owner` (which alone knows it).
  [[noreturn]] void throw_shared_message(std::string message, int owner) {
    DeviceBuffer<std::uint64_t> length(1);
    std::uint64_t n = message.size();
    length.upload(&n, 1);
    group_->broadcast(std::as_writable_bytes(std::span(length.data(), 1)), owner);
    detail::cuda_check(cudaStreamSynchronize(stream_), "sharing an error");
    n = length.download()[0];
    DeviceBuffer<char> text(static_cast<std::size_t>(n));
    message.resize(static_cast<std::size_t>(n));
    if (n != 0) {
      if (group_->rank() == owner) text.upload(message.data(), message.size());
      group_->broadcast(std::as_writable_bytes(std::span(text.data(), message.size())), owner);
      detail::cuda_check(cudaStreamSynchronize(stream_), "sharing an error");
      auto const got = text.download();
      message.assign(got.begin(), got.end());
    }
    tessel::detail::throw_error(message);
  }

  void build_layout() {
    auto const G = static_cast<std::size_t>(group_->size());
    std::size_t const element = dtype_size(distributed_.communication_dtype);
    counts_.assign(G, header_bytes);
    rank_first_.assign(G + 1, 0);
    std::vector<index_t> numel(G, 0);
    for (auto const& b : plan_.blocks)
      numel[static_cast<std::size_t>(b.rank)] +=
          plan_.groups[static_cast<std::size_t>(b.group)].numel();
    for (std::size_t r = 0; r < G; ++r) {
      counts_[r] += static_cast<std::size_t>(numel[r]) * element;
      rank_first_[r + 1] = rank_first_[r] + static_cast<std::size_t>(numel[r]);
    }
    offsets_.assign(G + 1, 0);
    for (std::size_t r = 0; r < G; ++r) offsets_[r + 1] = offsets_[r] + counts_[r];
    std::vector<std::size_t> next(rank_first_.begin(), rank_first_.end() - 1);
    std::vector<std::vector<BlockGeometry>> geometry(plan_.num_groups());
    std::vector<std::vector<index_t>> at(plan_.num_groups());
    apply_.resize(plan_.num_groups());
    for (std::size_t b = 0; b < plan_.num_blocks(); ++b) {
      auto const r = static_cast<std::size_t>(plan_.blocks[b].rank);
      auto const g = static_cast<std::size_t>(plan_.blocks[b].group);
      apply_[g].numel = plan_.groups[g].numel();
      apply_[g].params.push_back(plan_.blocks[b].param);
      geometry[g].push_back(block_geometry(plan_, b));
      at[g].push_back(static_cast<index_t>(next[r]));
      next[r] += static_cast<std::size_t>(plan_.groups[g].numel());
      if (plan_.blocks[b].rank == group_->rank()) owned_.push_back(static_cast<index_t>(b));
    }
    for (std::size_t g = 0; g < apply_.size(); ++g) {
      apply_[g].geometry = DeviceBuffer<BlockGeometry>(geometry[g].size());
      apply_[g].geometry.upload(geometry[g].data(), geometry[g].size());
      apply_[g].offsets = DeviceBuffer<index_t>(at[g].size());
      apply_[g].offsets.upload(at[g].data(), at[g].size());
      apply_[g].param_ptrs = DeviceBuffer<float*>(at[g].size());
    }
    local_updates_ = DeviceBuffer<float>(static_cast<std::size_t>(local_->update_numel()));
    all_updates_ = DeviceBuffer<float>(rank_first_.back());
    send_ = DeviceBuffer<std::byte>(counts_[static_cast<std::size_t>(group_->rank())]);
    recv_ = DeviceBuffer<std::byte>(offsets_.back());
    first_bad_ = DeviceBuffer<unsigned long long>(1);
  }

  cudaStream_t stream_;
  std::unique_ptr<dist::Communicator> group_;
  Plan plan_;
  DistributedOptions distributed_;
  std::unique_ptr<DeviceShampoo> local_;
  std::vector<index_t> owned_;
  std::vector<std::size_t> counts_, offsets_, rank_first_;
  std::vector<ApplyGroup> apply_;
  DeviceBuffer<float> local_updates_, all_updates_;
  DeviceBuffer<std::byte> send_, recv_;
  DeviceBuffer<unsigned long long> first_bad_;
};

}  // namespace tessel::shampoo
