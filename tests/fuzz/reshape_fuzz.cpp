// reshape and composition on random strided layouts, against brute force: reshape succeeds
// exactly when some flat layout of the new shape has the same offsets for every row-major index,
// and then it has those offsets; a successful composition satisfies c(i) == a(b(i)).
#include <cstdint>
#include <vector>

#include <tessel/core/composition.hpp>

#include "fuzz_input.hpp"

namespace {

using namespace tessel;

// Offsets of l for every 1-D index, or the strides of a flat layout of `shape` reproducing them.
bool flat_view_exists(std::vector<std::int64_t> const& offsets,
                      std::vector<std::int64_t> const& shape) {
  std::size_t r = shape.size();
  std::vector<std::int64_t> unit(r, 1);  // row-major weight of each mode
  for (std::size_t k = r; k-- > 1;) unit[k - 1] = unit[k] * shape[k];
  std::vector<std::int64_t> stride(r, 0);
  for (std::size_t k = 0; k < r; ++k) {
    if (shape[k] <= 1) continue;
    stride[k] = offsets[static_cast<std::size_t>(unit[k])] - offsets[0];
    if (stride[k] < 0) return false;
  }
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    std::int64_t rest = static_cast<std::int64_t>(i), o = offsets[0];
    for (std::size_t k = r; k-- > 0;) {
      o += (rest % shape[k]) * stride[k];
      rest /= shape[k];
    }
    if (o != offsets[i]) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t length) {
  fuzz::FuzzInput in(data, length);
  std::size_t rank = static_cast<std::size_t>(in.in_range(1, 3));
  DynRankTuple<3> s{}, d{};
  std::int64_t n = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    s.push_back(in.in_range(1, 6));
    d.push_back(in.flag() ? in.in_range(0, 40) : 0);
    n *= s.back();
  }
  auto a = make_layout(s, d);
  std::vector<std::int64_t> offsets;
  for (index_t i = 0; i < n; ++i) offsets.push_back(a(i));

  // A new shape: mostly a factorization of n, sometimes any size.
  std::vector<std::int64_t> target;
  std::int64_t left = n;
  std::size_t new_rank = static_cast<std::size_t>(in.in_range(1, 3));
  for (std::size_t k = 0; k + 1 < new_rank; ++k) {
    std::int64_t f = in.in_range(1, 6);
    if (left % f != 0) f = 1;
    target.push_back(f);
    left /= f;
  }
  target.push_back(in.in_range(0, 15) == 0 ? in.in_range(1, 40) : left);
  std::int64_t target_size = 1;
  for (auto t : target) target_size *= t;
  DynRankTuple<3> ts{};
  for (auto t : target) ts.push_back(t);

  // reshape takes a static-rank shape; go through each rank.
  auto try_reshape = [&](auto const& shape) {
    bool ok = true;
    try {
      auto r = reshape(a, shape);
      for (index_t i = 0; i < n; ++i) TESSEL_FUZZ_CHECK(r(i) == a(i));
    } catch (Error const&) {
      ok = false;
    }
    if (target_size != n) {
      TESSEL_FUZZ_CHECK(!ok);
    } else {
      TESSEL_FUZZ_CHECK(ok == flat_view_exists(offsets, target));
    }
  };
  if (target.size() == 1) try_reshape(make_shape(target[0]));
  if (target.size() == 2) try_reshape(make_shape(target[0], target[1]));
  if (target.size() == 3) try_reshape(make_shape(target[0], target[1], target[2]));

  // composition with a random (b0, b1):(e0, e1) within a's domain.
  index_t bs0 = in.in_range(1, 6), bs1 = in.in_range(1, 6), bd0 = in.in_range(0, 12),
          bd1 = in.in_range(0, 12);
  auto b = make_layout(make_shape(bs0, bs1), make_stride(bd0, bd1));
  if (cosize(b) <= n) {
    try {
      auto c = composition(a, b);
      for (index_t i = 0; i < size(b); ++i) TESSEL_FUZZ_CHECK(c(i) == a(b(i)));
    } catch (Error const&) {
      // refused: allowed, never a wrong answer
    }
  }
  return 0;
}
