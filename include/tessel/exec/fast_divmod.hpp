// Division by a run-time divisor as a multiply-high and a shift (Granlund and Montgomery's
// round-up method), for the CUDA kernels that turn a flat index into loop coordinates: integer
// division is a ~20-instruction sequence on the GPU, a multiply-high is one or two. CCCL has one
// (cub::detail::fast_div_mod) but only in a detail namespace, so tessel keeps its own; it is
// host-device, and the host tests check it against `/` and `%`.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"

namespace tessel::exec {

// Divides non-negative dividends below 2^(bits(U) - 1) by a fixed divisor d >= 1.
// With l = ceil(log2 d) and p = bits(U) - 1 + l, m = ceil(2^p / d) fits U and
// floor(n * m / 2^p) == floor(n / d) for every n < 2^(bits(U) - 1): the error m * d - 2^p is
// below d <= 2^l, so it shifts n * m / 2^p by less than n * 2^l / 2^p < 1 / d.
// @pre d >= 1 and every dividend < 2^(bits(U) - 1)
template <class U>
class FastDivmod {
  static_assert(std::is_same_v<U, std::uint32_t> || std::is_same_v<U, std::uint64_t>,
                "tessel: FastDivmod divides 32- or 64-bit unsigned indices.");
  static constexpr int bits = static_cast<int>(sizeof(U) * 8);

 public:
  FastDivmod() = default;
  // Host-side set-up (the kernels receive it by value).
  explicit FastDivmod(U d) : divisor_(d) {
    if (d <= 1) return;  // d == 1: the quotient is the dividend (shift_ 0, multiplier_ unused)
    int l = 0;
    while ((U{1} << l) < d) ++l;  // l = ceil(log2 d), 1 <= l < bits
    // m = ceil(2^p / d) with p = bits - 1 + l <= 2 * bits - 2, computed in a 2 * bits-bit type.
    multiplier_ = ceil_pow2_div(bits - 1 + l, d);
    shift_ = l - 1;
  }

  TESSEL_HOST_DEVICE U divisor() const { return divisor_; }

  TESSEL_HOST_DEVICE U div(U n) const {
    if (divisor_ == 1) return n;
    return mulhi(n, multiplier_) >> shift_;
  }
  // The quotient; the remainder in r.
  TESSEL_HOST_DEVICE U divmod(U n, U& r) const {
    U const q = div(n);
    r = n - q * divisor_;
    return q;
  }

 private:
  TESSEL_HOST_DEVICE static U mulhi(U a, U b) {
    if constexpr (sizeof(U) == 4) {
#if TESSEL_DEVICE_PASS
      return __umulhi(a, b);
#else
      return static_cast<U>((std::uint64_t{a} * b) >> 32);
#endif
    } else {
#if TESSEL_DEVICE_PASS
      return __umul64hi(a, b);
#else
      return static_cast<U>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
    }
  }

  // ceil(2^p / d) for bits <= p < 2 * bits - 1 and 2 <= d, which is below 2^bits.
  static U ceil_pow2_div(int p, U d) {
    using W = std::conditional_t<sizeof(U) == 4, std::uint64_t, unsigned __int128>;
    W const num = W{1} << p;
    return static_cast<U>((num + d - 1) / d);
  }

  U divisor_ = 1;
  U multiplier_ = 0;
  int shift_ = 0;
};

}  // namespace tessel::exec
