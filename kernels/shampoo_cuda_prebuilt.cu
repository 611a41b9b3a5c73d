// tessel_shampoo_cuda_prebuilt (CMake, CUDA builds only): the device Shampoo step compiled once
// for the project's CUDA and NCCL tests, as tessel::shampoo_prebuilt does for the host's. Each
// compiled the device step (and the host step they compare against) itself, minutes
// of nvcc each; linked to this library they see TESSEL_SHAMPOO_CUDA_PREBUILT and the
// matching `extern template` declarations (shampoo/device_shampoo.cuh,
// shampoo/device_distributed.cuh). Not installed: tessel stays header-only for users.
#include <tessel/shampoo/device_shampoo.cuh>
#include <tessel/shampoo/distributed/distributed.hpp>

namespace tessel::shampoo {

template class StepCore<float, exec::Cuda>;
template class ShampooStep<float, AnyPreconditioner, exec::Cuda>;
template class BasicShampoo<float, AnyPreconditioner, RuntimePlan, exec::Cuda>;
template class DistributedShampoo<float, exec::Cuda>;

}  // namespace tessel::shampoo
