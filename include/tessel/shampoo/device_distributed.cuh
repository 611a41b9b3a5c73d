// DeviceDistributedShampoo: DistributedShampoo's step (tessel/shampoo/distributed/distributed.hpp)
// for float parameters in device memory, over NCCL. It is DistributedShampoo<float, exec::Cuda> on
// the communicator's stream: each rank runs the device Shampoo (device_shampoo.cuh) on the blocks
// it owns, rounds their updates to the communication dtype with one assignment, and one NCCL
// all-gather exchanges the flat buffer laid out by the plan; every rank then applies all updates
// with the host optimizer's expression, one assignment per segment. The buffer layout, the failure
// protocol, the checks and the guarantees are the host optimizer's, because the code is.
#pragma once

#include <utility>

#include <tessel/dist/nccl.hpp>

#include "device_shampoo.cuh"
#include "distributed/distributed.hpp"

namespace tessel::shampoo {

class DeviceDistributedShampoo : public DistributedShampoo<float, exec::Cuda> {
 public:
  // Collective over `world` (one GPU per rank), with the host optimizer's checks and sentences;
  // the work is queued on world.stream(). `world` must outlive the optimizer.
  template <class P, class B, class G>
  DeviceDistributedShampoo(dist::NcclCommunicator& world, BasicPlan<P, B, G> const& plan,
                           Options options = {}, DistributedOptions distributed = {})
      : DistributedShampoo<float, exec::Cuda>(world, plan, std::move(options), distributed,
                                              exec::Cuda{world.stream()}) {}
};

}  // namespace tessel::shampoo

// Compiled once in tessel_shampoo_cuda_prebuilt (device_shampoo.cuh says which programs link it).
#if defined(TESSEL_SHAMPOO_CUDA_PREBUILT)
namespace tessel::shampoo {
extern template class DistributedShampoo<float, exec::Cuda>;
}  // namespace tessel::shampoo
#endif
