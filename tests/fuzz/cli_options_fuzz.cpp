// The CLI's option parsing (integers and comma-separated extents) against a slow reference
// parser: it accepts exactly the strings the reference accepts, with the same values, and
// rejects the rest with a tessel::Error.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../../tools/tessel/cli_support.hpp"
#include "fuzz_input.hpp"

namespace {

// Optional '-' then one or more decimal digits, within int64.
std::optional<std::int64_t> reference_integer(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = s[0] == '-';
  std::size_t i = negative ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  __int128 v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
    if (v > (__int128{1} << 64)) return std::nullopt;
  }
  if (negative) v = -v;
  if (v > INT64_MAX || v < INT64_MIN) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

std::optional<std::vector<std::int64_t>> reference_extents(std::string_view s) {
  std::vector<std::int64_t> out;
  if (s.empty()) return out;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = s.find(',', start);
    auto item =
        s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto v = reference_integer(item);
    if (!v || *v < 0 || item[0] == '-') return std::nullopt;
    out.push_back(*v);
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t length) {
  using namespace tessel;
  std::string_view text(reinterpret_cast<char const*>(data), length);
  auto expect_integer = reference_integer(text);
  try {
    std::int64_t got = cli::parse_integer(text, "--x");
    TESSEL_FUZZ_CHECK(expect_integer && *expect_integer == got);
  } catch (Error const&) {
    TESSEL_FUZZ_CHECK(!expect_integer);
  }
  auto expect_extents = reference_extents(text);
  try {
    auto got = cli::parse_extents(text, "--shape");
    TESSEL_FUZZ_CHECK(expect_extents && *expect_extents == got);
  } catch (Error const&) {
    TESSEL_FUZZ_CHECK(!expect_extents);
  }
  return 0;
}
