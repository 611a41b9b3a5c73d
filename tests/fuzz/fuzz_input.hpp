// Reads typed values from a fuzzer's byte string; past the end every read returns 0, so every
// input is a valid (if short) program for the target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tessel::fuzz {

class FuzzInput {
 public:
  FuzzInput(std::uint8_t const* data, std::size_t size) : data_(data), size_(size) {}

  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // A value in [lo, hi].
  std::int64_t in_range(std::int64_t lo, std::int64_t hi) {
    std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    std::uint64_t v = 0;
    for (int i = 0; i < 8 && (span >> (8 * i)) != 0; ++i) v = (v << 8) | byte();
    return lo + static_cast<std::int64_t>(v % span);
  }
  std::int64_t any_int64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
    return static_cast<std::int64_t>(v);
  }
  bool flag() { return (byte() & 1) != 0; }
  std::string_view rest() {
    std::string_view r(reinterpret_cast<char const*>(data_ + pos_),
                       pos_ < size_ ? size_ - pos_ : 0);
    pos_ = size_;
    return r;
  }

 private:
  std::uint8_t const* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// Aborts with a message: a finding (libFuzzer reports the crash and saves the input).
[[noreturn]] void finding(char const* what);

}  // namespace tessel::fuzz

#define TESSEL_FUZZ_CHECK(cond)                                                            \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::tessel::fuzz::finding(#cond " failed at " __FILE__ ":" TESSEL_FUZZ_STR(__LINE__)); \
  } while (0)
#define TESSEL_FUZZ_STR2(x) #x
#define TESSEL_FUZZ_STR(x) TESSEL_FUZZ_STR2(x)
