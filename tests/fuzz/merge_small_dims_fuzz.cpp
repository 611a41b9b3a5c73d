// merge_small_dims on run-time shapes against a literal transcription of Distributed Shampoo's
// rule, plus its post-conditions.
#include <cstdint>
#include <vector>

#include <tessel/core/merge_small_dims.hpp>

#include "fuzz_input.hpp"

namespace {

using namespace tessel;

std::vector<std::int64_t> reference(std::vector<std::int64_t> const& shape, std::int64_t threshold,
                                    std::int64_t target) {
  for (auto d : shape)
    if (d == 0) return {0};
  std::vector<std::int64_t> squeezed;
  for (auto d : shape)
    if (d != 1) squeezed.push_back(d);
  if (squeezed.empty()) return {1};
  std::vector<std::int64_t> out{squeezed.back()};
  for (std::size_t i = squeezed.size() - 1; i-- > 0;) {
    std::int64_t remaining = static_cast<std::int64_t>(i) + 1;
    __int128 product = static_cast<__int128>(out.back()) * squeezed[i];
    if (static_cast<std::int64_t>(out.size()) + remaining > target && product <= threshold)
      out.back() = static_cast<std::int64_t>(product);
    else
      out.push_back(squeezed[i]);
  }
  return {out.rbegin(), out.rend()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t length) {
  fuzz::FuzzInput in(data, length);
  std::size_t rank = static_cast<std::size_t>(in.in_range(0, 6));
  std::vector<std::int64_t> shape;
  DynRankTuple<6> dyn{};
  for (std::size_t k = 0; k < rank; ++k) {
    std::int64_t e =
        in.flag() ? in.in_range(0, 8) : in.in_range(0, std::int64_t{1} << in.in_range(0, 40));
    shape.push_back(e);
    dyn.push_back(e);
  }
  std::int64_t threshold = in.flag() ? in.in_range(-4, 1 << 16) : in.any_int64();
  std::int64_t target = in.in_range(-2, 8);

  auto got = to_vector(merge_small_dims(dyn, threshold, target));
  TESSEL_FUZZ_CHECK(got == reference(shape, threshold, target));
  TESSEL_FUZZ_CHECK(!got.empty() && got.size() <= (rank == 0 ? 1 : rank));
  // Same number of elements, compared while the products fit comfortably in 128 bits.
  auto product = [](std::vector<std::int64_t> const& v, bool& huge) {
    __int128 p = 1;
    for (auto d : v) {
      if (d != 0 && p > (__int128{1} << 62)) {
        huge = true;
        return p;
      }
      p *= d;
    }
    return p;
  };
  bool huge = false;
  __int128 before = product(shape, huge);
  __int128 after = product(got, huge);
  if (!huge) TESSEL_FUZZ_CHECK(before == after);
  if (got.size() > 1)
    for (auto d : got) TESSEL_FUZZ_CHECK(d != 1 && d != 0);
  return 0;
}
