// Allocation errors of owning host tensors: a negative element count, and one whose size in bytes
// would wrap around size_t (before the check, 2^61 doubles allocated 64 bytes and the tensor
// believed it held 2^61 elements).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <tessel/tensor/host_tensor.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;

using tessel::test::error_of;

TEST(TensorErrors, ANegativeElementCountIsRejected) {
  EXPECT_EQ(error_of([] { HostArrayEngine<float> e(-3); }),
            "cannot allocate a tensor of -3 elements.");
}

TEST(TensorErrors, AByteCountThatWrapsAroundIsRejectedNotAllocatedSmall) {
  index_t const n = index_t{1} << 61;  // 2^61 * 8 bytes = 2^64: wraps to 0
  EXPECT_EQ(error_of([&] { HostArrayEngine<double> e(n); }),
            "cannot allocate a tensor of 2305843009213693952 elements.");
  EXPECT_EQ(error_of([] {
              (void)make_host_tensor<double>(make_shape(index_t{1} << 31, index_t{1} << 30));
            }),
            "cannot allocate a tensor of 2305843009213693952 elements.");
}

}  // namespace
