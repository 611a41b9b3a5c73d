// Device memory: owning device tensors, streams and copies. Without a GPU, allocation must fail
// with a clear tessel::Error (checked here); with one, data round-trips (skipped without a GPU).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <tessel/exec/cuda/device_memory.hpp>
#include <tessel/exec/cuda/stream.hpp>
#include <tessel/tensor/host_tensor.hpp>

namespace {

using namespace tessel;

bool have_device() {
  return gpu::device_count() > 0;
}

TEST(DeviceMemory, WithoutADeviceAllocationIsAClearError) {
  if (have_device())
    GTEST_SKIP() << "a CUDA device is present; this test checks the no-device path";
  try {
    auto t = make_device_tensor<float>(make_shape(10, 10));
    FAIL() << "allocation without a device must throw";
  } catch (Error const& e) {
    std::string what = e.what();
    EXPECT_EQ(
        what.rfind("allocating 400 bytes of device memory: cudaMalloc failed with cudaError", 0),
        0u)
        << what;
  }
}

TEST(DeviceMemory, ElementCountsWhoseByteSizeWrapsAreRefusedBeforeAnyCudaCall) {
  // 2^61 doubles are 2^64 bytes: the byte count would wrap to 0 and allocate almost nothing.
  index_t const huge = index_t{1} << 61;
  try {
    auto t = make_device_tensor<double>(make_shape(huge));
    FAIL() << "a wrapping byte count must be refused";
  } catch (Error const& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot allocate a device tensor of " + std::to_string(huge) + " elements.");
  }
}

TEST(DeviceMemory, CopiesCheckShapesBeforeTouchingMemory) {
  // Fake device pointers are fine: validation fails before any CUDA call.
  float* fake = reinterpret_cast<float*>(std::uintptr_t{256});
  auto host = make_host_tensor<float>(make_shape(3, 4));
  try {
    gpu::copy_to_device(make_device_tensor(fake, make_shape(4, 3)), host, nullptr);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot copy to the device: the destination has shape (4,3) but the source has "
                 "shape (3,4).");
  }
  try {
    gpu::copy_to_host(
        host, make_device_tensor(fake, make_layout(make_shape(3, 4), make_stride(1, 3))), nullptr);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot copy to the host between non-compact tensors (layouts (3,4):(4,1) and "
                 "(3,4):(1,3)); "
                 "copy into a compact tensor first.");
  }
}

TEST(DeviceMemory, RoundTripThroughTheDevice) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine: device round trip not run";
  gpu::Stream stream;
  auto host = make_host_tensor<float>(make_shape(64, 33));
  for (index_t i = 0; i < size(host); ++i) host[i] = static_cast<float>(i) * 0.5f;
  auto dev = make_device_tensor<float>(make_shape(64, 33));
  auto back = make_host_tensor<float>(make_shape(64, 33));
  gpu::copy_to_device(dev, host, stream);
  gpu::copy_to_host(back, dev, stream);
  stream.synchronize();
  for (index_t i = 0; i < size(host); ++i) ASSERT_EQ(back[i], host[i]);
}

TEST(DeviceMemory, NewDeviceTensorsAreZeroed) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device on this machine";
  gpu::Stream stream;
  auto dev = make_device_tensor<int>(make_shape(1000));
  auto back = make_host_tensor<int>(make_shape(1000));
  for (index_t i = 0; i < 1000; ++i) back[i] = 7;
  gpu::copy_to_host(back, dev, stream);
  stream.synchronize();
  for (index_t i = 0; i < 1000; ++i) ASSERT_EQ(back[i], 0);
}

}  // namespace
