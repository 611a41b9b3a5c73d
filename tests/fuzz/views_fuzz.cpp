// Tensor views on random shapes: slices, ranges, transposes and block views address the same
// elements as index arithmetic on the original, and writes through a view land there.
#include <cstdint>
#include <vector>

#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/views.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t length) {
  using namespace tessel;
  fuzz::FuzzInput in(data, length);
  index_t rows = in.in_range(1, 9), cols = in.in_range(1, 9);
  auto t = make_host_tensor<std::int32_t>(make_shape(rows, cols));
  for (index_t i = 0; i < rows * cols; ++i) t[i] = static_cast<std::int32_t>(i);
  auto base = in.flag() ? t.view() : transpose(transpose(t));
  for (int step = 0; step < 4; ++step) {
    switch (in.in_range(0, 4)) {
      case 0: {  // range x range
        index_t r0 = in.in_range(0, rows), r1 = in.in_range(0, rows);
        index_t c0 = in.in_range(0, cols), c1 = in.in_range(0, cols);
        bool valid = r0 <= r1 && c0 <= c1;
        try {
          auto v = base(range(r0, r1), range(c0, c1));
          TESSEL_FUZZ_CHECK(valid);
          for (index_t i = 0; i < r1 - r0; ++i)
            for (index_t j = 0; j < c1 - c0; ++j) TESSEL_FUZZ_CHECK(&v(i, j) == &t(r0 + i, c0 + j));
        } catch (Error const&) {
          TESSEL_FUZZ_CHECK(!valid);
        }
        break;
      }
      case 1: {  // a row or a column
        index_t k = in.in_range(0, 10);
        bool row = in.flag();
        try {
          if (row) {
            auto v = base(k, _);
            for (index_t j = 0; j < cols; ++j) TESSEL_FUZZ_CHECK(&v(j) == &t(k, j));
          } else {
            auto v = base(_, k);
            for (index_t i = 0; i < rows; ++i) TESSEL_FUZZ_CHECK(&v(i) == &t(i, k));
          }
          TESSEL_FUZZ_CHECK(k < (row ? rows : cols));
        } catch (Error const&) {
          TESSEL_FUZZ_CHECK(k >= (row ? rows : cols));
        }
        break;
      }
      case 2: {  // transpose
        auto v = transpose(base);
        for (index_t i = 0; i < cols; ++i)
          for (index_t j = 0; j < rows; ++j) TESSEL_FUZZ_CHECK(&v(i, j) == &t(j, i));
        break;
      }
      case 3: {  // merged block view of the transpose, written through
        index_t b0 = in.in_range(1, 9), b1 = in.in_range(1, 9);
        auto tr = transpose(base);
        bool valid = cols % b0 == 0 && rows % b1 == 0;
        try {
          auto v = block_view(tr, make_shape(b0, b1), BlockOrder::merged);
          TESSEL_FUZZ_CHECK(valid);
          for (index_t i = 0; i < cols / b0; ++i)
            for (index_t j = 0; j < rows / b1; ++j)
              for (index_t e = 0; e < b0 * b1; ++e)
                TESSEL_FUZZ_CHECK(&v(i, j, e) == &t(j * b1 + e % b1, i * b0 + e / b1));
          v(0, 0, 0) += 0;  // a write through the view
        } catch (Error const&) {
          TESSEL_FUZZ_CHECK(!valid);
        }
        break;
      }
      default: {  // reshape of the contiguous tensor
        index_t f = in.in_range(1, 9);
        try {
          auto v = reshape(t, make_shape(f, (rows * cols) / f));
          TESSEL_FUZZ_CHECK((rows * cols) % f == 0);
          for (index_t i = 0; i < rows * cols; ++i) TESSEL_FUZZ_CHECK(&v[i] == &t[i]);
        } catch (Error const&) {
          TESSEL_FUZZ_CHECK((rows * cols) % f != 0);
        }
      }
    }
  }
  return 0;
}
