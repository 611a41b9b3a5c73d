// tessel::Error and the host-side checks that raise it with a sentence naming the offending values.
#pragma once

#include <charconv>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include "config.hpp"

namespace tessel {

// Thrown for every run-time failure; what() is a sentence that names the values involved.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

inline void append_piece(std::string& out, std::string_view s) {
  out.append(s);
}
inline void append_piece(std::string& out, char const* s) {
  out.append(s);
}
inline void append_piece(std::string& out, std::string const& s) {
  out.append(s);
}
inline void append_piece(std::string& out, char c) {
  out.push_back(c);
}
template <class T>
requires(std::is_integral_v<T> && !std::is_same_v<T, char> &&
         !std::is_same_v<T, bool>) void append_piece(std::string& out, T v) {
  out.append(std::to_string(v));
}
// Floating-point values in their shortest round-trip form in their own type ("0.99" for 0.99f,
// "1e-12", "inf", "nan"): every error sentence writes numbers the same way.
template <class T>
requires std::is_floating_point_v<T>
void append_piece(std::string& out, T v) {
  char buffer[64];
  auto const [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  out.append(buffer, ec == std::errc{} ? end : buffer);
}
inline void append_piece(std::string& out, bool b) {
  out.append(b ? "true" : "false");
}

// Builds an error sentence from pieces: strings, characters and numbers.
template <class... Pieces>
std::string sentence(Pieces const&... pieces) {
  std::string out;
  (append_piece(out, pieces), ...);
  return out;
}

[[noreturn]] inline void throw_error(std::string message) {
  throw Error(std::move(message));
}

}  // namespace detail

// Throws tessel::Error with the concatenated pieces when `ok` is false. Host only: device code
// never throws; validate on the host before launching.
template <class... Pieces>
void check(bool ok, Pieces const&... pieces) {
  if (!ok) detail::throw_error(detail::sentence(pieces...));
}

}  // namespace tessel
