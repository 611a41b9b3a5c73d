// multi_dim_split on run-time shapes: every element covered exactly once, blocks in row-major
// block order, extents within the split size, and errors for non-positive split sizes.
#include <cstdint>
#include <vector>

#include <tessel/core/multi_dim_split.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t length) {
  using namespace tessel;
  fuzz::FuzzInput in(data, length);
  std::size_t rank = static_cast<std::size_t>(in.in_range(0, 4));
  DynRankTuple<4> shape{};
  std::int64_t elements = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    shape.push_back(in.in_range(0, 12));
    elements *= shape.back();
  }
  std::int64_t split = in.in_range(-2, 14);
  if (split <= 0) {
    bool threw = false;
    try {
      (void)multi_dim_split(shape, split);
    } catch (Error const&) {
      threw = true;
    }
    TESSEL_FUZZ_CHECK(threw);
    return 0;
  }
  auto blocks = multi_dim_split(shape, split);
  std::int64_t expect_blocks = 1;
  for (std::size_t k = 0; k < rank; ++k)
    expect_blocks *= shape[k] == 0 ? 1 : (shape[k] + split - 1) / split;
  TESSEL_FUZZ_CHECK(static_cast<std::int64_t>(blocks.size()) == expect_blocks);

  std::vector<int> covered(static_cast<std::size_t>(elements), 0);
  std::vector<std::int64_t> previous;
  for (auto const& b : blocks) {
    auto offset = to_vector(b.offset);
    auto extent = to_vector(b.shape);
    TESSEL_FUZZ_CHECK(offset.size() == rank && extent.size() == rank);
    TESSEL_FUZZ_CHECK(previous.empty() || previous < offset);  // row-major block order
    previous = offset;
    std::int64_t count = 1;
    for (std::size_t k = 0; k < rank; ++k) {
      TESSEL_FUZZ_CHECK(extent[k] <= split && offset[k] % split == 0);
      TESSEL_FUZZ_CHECK(shape[k] == 0 ? extent[k] == 0
                                      : extent[k] > 0 && offset[k] + extent[k] <= shape[k]);
      count *= extent[k];
    }
    // Mark every element of the block (odometer over its extents).
    std::vector<std::int64_t> c(rank, 0);
    for (std::int64_t n = 0; n < count; ++n) {
      std::int64_t linear = 0;
      for (std::size_t k = 0; k < rank; ++k) linear = linear * shape[k] + offset[k] + c[k];
      covered[static_cast<std::size_t>(linear)]++;
      for (std::size_t k = rank; k-- > 0;) {
        if (++c[k] < extent[k]) break;
        c[k] = 0;
      }
    }
  }
  for (int c : covered) TESSEL_FUZZ_CHECK(c == 1);
  return 0;
}
