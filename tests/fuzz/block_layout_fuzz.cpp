// block_layout in all three orders on random strided layouts: every (grid, in-block) coordinate
// addresses element (grid * block + in-block) of the original; non-dividing blocks are errors.
#include <cstdint>
#include <string>

#include <tessel/core/block_layout.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t length) {
  using namespace tessel;
  fuzz::FuzzInput in(data, length);
  index_t s0 = in.in_range(0, 12), s1 = in.in_range(0, 12);
  index_t d0 = in.in_range(0, 40), d1 = in.in_range(0, 40);
  index_t b0 = in.in_range(0, 12), b1 = in.in_range(0, 12);
  int order = static_cast<int>(in.in_range(0, 2));
  auto base = make_layout(make_shape(s0, s1), make_stride(d0, d1));
  bool valid = b0 > 0 && b1 > 0 && s0 % b0 == 0 && s1 % b1 == 0;
  auto check = [&](auto blocked, auto address) {
    for (index_t i = 0; i < s0 / b0; ++i)
      for (index_t j = 0; j < s1 / b1; ++j)
        for (index_t r = 0; r < b0; ++r)
          for (index_t c = 0; c < b1; ++c)
            TESSEL_FUZZ_CHECK(address(blocked, i, j, r, c) == base(i * b0 + r, j * b1 + c));
    TESSEL_FUZZ_CHECK(size(blocked) == s0 * s1);
  };
  try {
    if (order == 0) {
      check(
          block_layout(base, make_shape(b0, b1), BlockOrder::interleaved),
          [](auto const& l, index_t i, index_t j, index_t r, index_t c) { return l(i, r, j, c); });
    } else if (order == 1) {
      check(
          block_layout(base, make_shape(b0, b1), BlockOrder::reordered),
          [](auto const& l, index_t i, index_t j, index_t r, index_t c) { return l(i, j, r, c); });
    } else {
      check(block_layout(base, make_shape(b0, b1), BlockOrder::merged),
            [b1](auto const& l, index_t i, index_t j, index_t r, index_t c) {
              return l(i, j, r * b1 + c);
            });
    }
    TESSEL_FUZZ_CHECK(valid);
  } catch (Error const& e) {
    TESSEL_FUZZ_CHECK(!valid);
    std::string what = e.what();
    TESSEL_FUZZ_CHECK(what.find("does not divide") != std::string::npos ||
                      what.find("must be > 0") != std::string::npos);
  }
  return 0;
}
