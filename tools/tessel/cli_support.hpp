// Shared pieces of the tessel CLI: parsing option values into integers and shapes with sentence
// errors, and printing JSON on one line the way Python's json.dumps does (or indented, on request).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <tessel/core/dyn_rank_tuple.hpp>
#include <tessel/core/error.hpp>

namespace tessel::cli {

// The most extents a shape given on the command line may have.
inline constexpr std::size_t max_cli_rank = 16;

// A whole decimal integer, or tessel::Error naming the option and the text.
inline std::int64_t parse_integer(std::string_view text, std::string_view option) {
  std::int64_t value = 0;
  auto const* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) {
    if (ec == std::errc::result_out_of_range)
      detail::throw_error(
          detail::sentence(option, ": \"", text, "\" does not fit in a 64-bit integer."));
    detail::throw_error(detail::sentence(option, ": \"", text, "\" is not an integer."));
  }
  return value;
}

// Whether text is a whole decimal number (value set), a number outside a double's range (1e400,
// 1e-400), or not a number at all.
enum class NumberText { number, out_of_range, not_a_number };

inline NumberText read_number(std::string_view text, double& value) {
  auto const* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ptr != end) return NumberText::not_a_number;
  if (ec == std::errc::result_out_of_range) return NumberText::out_of_range;
  return ec == std::errc{} ? NumberText::number : NumberText::not_a_number;
}

[[noreturn]] inline void throw_out_of_range(std::string_view text, std::string_view option) {
  detail::throw_error(detail::sentence(option, ": ", text,
                                       " is outside the range of a 64-bit float (nonzero "
                                       "magnitudes from 2.2e-308 to 1.8e308)."));
}

// A whole decimal number, or tessel::Error naming the option and the text.
inline double parse_number(std::string_view text, std::string_view option) {
  double value = 0;
  switch (read_number(text, value)) {
    case NumberText::number:
      return value;
    case NumberText::out_of_range:
      throw_out_of_range(text, option);
    case NumberText::not_a_number:
      detail::throw_error(detail::sentence(option, ": \"", text, "\" is not a number."));
  }
  return value;  // unreachable: every case returns or throws
}

// "32,3,64,64" -> {32, 3, 64, 64}; every item a non-negative integer.
inline std::vector<std::int64_t> parse_extents(std::string_view text, std::string_view option) {
  std::vector<std::int64_t> out;
  if (text.empty()) return out;  // rank 0
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::int64_t v = 0;
    auto const* end = item.data() + item.size();
    auto [ptr, ec] = std::from_chars(item.data(), end, v);
    if (item.empty() || item.front() == '-' || ec != std::errc{} || ptr != end || v < 0)
      detail::throw_error(detail::sentence(option, ": \"", item, "\" in \"", text,
                                           "\" is not a non-negative integer."));
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// A shape of at most max_cli_rank extents as a run-time-rank tuple.
inline DynRankTuple<max_cli_rank> to_dyn_rank(std::vector<std::int64_t> const& extents,
                                              std::string_view option) {
  if (extents.size() > max_cli_rank)
    detail::throw_error(detail::sentence(option, " has ", extents.size(),
                                         " extents; the tessel CLI takes at most ", max_cli_rank,
                                         "."));
  DynRankTuple<max_cli_rank> t{};
  for (auto e : extents) t.push_back(e);
  return t;
}

// One line of JSON with ", " and ": " separators (Python's json.dumps style), so output is both
// machine-readable and easy on the eye.
inline void append_json(std::string& out, nlohmann::json const& j) {
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += nlohmann::json(it.key()).dump();
      out += ": ";
      append_json(out, it.value());
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    bool first = true;
    for (auto const& v : j) {
      if (!first) out += ", ";
      first = false;
      append_json(out, v);
    }
    out += ']';
  } else {
    out += j.dump();
  }
}

inline std::string json_line(nlohmann::json const& j) {
  std::string out;
  append_json(out, j);
  return out;
}

// JSON over several lines, `indent` spaces per level (`--indent N`): a container of scalars stays
// on one line as json_line writes it ("shape": [4, 3]); any other puts each member on a line.
// @post parsing the result gives j (the same document as json_line(j))
inline void append_json_indented(std::string& out, nlohmann::json const& j, std::size_t indent,
                                 std::size_t depth) {
  bool const flat = !j.is_structured() || std::none_of(j.begin(), j.end(), [](auto const& v) {
    return v.is_structured();
  });
  if (flat) {
    append_json(out, j);
    return;
  }
  out += j.is_object() ? '{' : '[';
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += first ? "\n" : ",\n";
    first = false;
    out.append((depth + 1) * indent, ' ');
    if (j.is_object()) {
      out += nlohmann::json(it.key()).dump();
      out += ": ";
    }
    append_json_indented(out, it.value(), indent, depth + 1);
  }
  out += '\n';
  out.append(depth * indent, ' ');
  out += j.is_object() ? '}' : ']';
}

inline std::string json_indented(nlohmann::json const& j, std::size_t indent) {
  std::string out;
  append_json_indented(out, j, indent, 0);
  return out;
}

}  // namespace tessel::cli
