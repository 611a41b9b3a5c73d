// Memory spaces: where a tensor's elements live. Host memory is dereferenced by the host executor;
// device memory only by kernels (tessel never dereferences a device pointer on the host).
#pragma once

#include <concepts>
#include <type_traits>

namespace tessel {

struct HostSpace {
  static constexpr char const* name = "host";
};
struct DeviceSpace {
  static constexpr char const* name = "device";
};

template <class S>
concept MemorySpace = std::same_as<S, HostSpace> || std::same_as<S, DeviceSpace>;

}  // namespace tessel
