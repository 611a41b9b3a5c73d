// Allocation failures of the host allocators: a request the allocator refuses (2^60 bytes, more
// than any address space holds, but below the byte-count overflow checks) throws tessel::Error
// with the byte count instead of handing out a null buffer. Its own test program, because under
// AddressSanitizer such a request aborts unless ASAN_OPTIONS has allocator_may_return_null=1,
// which tests/CMakeLists.txt sets for this program's tests only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include <tessel/exec/memory.hpp>
#include <tessel/flce/forward.hpp>
#include <tessel/tensor/host_tensor.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;

using tessel::test::error_of;

// Under ASan a refused allocation aborts the program unless allocator_may_return_null=1.
bool allocator_may_return_null() {
  if (!TESSEL_ADDRESS_SANITIZER) return true;
  char const* options = std::getenv("ASAN_OPTIONS");
  return options != nullptr &&
         std::string_view(options).find("allocator_may_return_null=1") != std::string_view::npos;
}

constexpr index_t huge_bytes = index_t{1} << 60;

TEST(AllocationFailure, AHostTensorTheAllocatorRefusesIsAnErrorNamingTheBytes) {
  if (!allocator_may_return_null())
    GTEST_SKIP() << "AddressSanitizer aborts on this allocation without "
                    "ASAN_OPTIONS=allocator_may_return_null=1 (ctest sets it).";
  index_t const n = huge_bytes / index_t{sizeof(float)};
  EXPECT_EQ(error_of([&] { HostArrayEngine<float> e(n); }),
            "cannot allocate 1152921504606846976 bytes of host memory for a tensor.");
  EXPECT_EQ(error_of([] {
              (void)make_host_tensor<double>(make_shape(index_t{1} << 27, index_t{1} << 30));
            }),
            "cannot allocate 1152921504606846976 bytes of host memory for a tensor.");
}

TEST(AllocationFailure, ScratchTheAllocatorRefusesIsAnErrorNamingTheBytes) {
  // Executor scratch (FLCE's, Shampoo's) is bounded by its plan (a chunk of rows at a time), so no
  // plausible call asks for 2^60 bytes without first holding inputs of that size: the allocator is
  // called directly.
  if (!allocator_may_return_null())
    GTEST_SKIP() << "AddressSanitizer aborts on this allocation without "
                    "ASAN_OPTIONS=allocator_may_return_null=1 (ctest sets it).";
  auto const scratch = [](char const* what) {
    return [what] { (void)exec::Memory<exec::Serial>::scratch<std::byte>({}, huge_bytes, what); };
  };
  EXPECT_EQ(error_of(scratch("FLCE")),
            "cannot allocate 1152921504606846976 bytes of FLCE scratch memory.");
  EXPECT_EQ(error_of(scratch(nullptr)),
            "cannot allocate 1152921504606846976 bytes of scratch memory.");
}

}  // namespace
