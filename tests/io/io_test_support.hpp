// Helpers for the io tests: whole-file reads, byte-string builders and the text of a thrown
// tessel::Error.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <tessel/core/error.hpp>

#include "support/error_of.hpp"
#include "support/temp_dir.hpp"

namespace tessel::test_support {

using test::TempDir;

inline std::vector<std::byte> to_bytes(std::string_view s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

inline std::string to_string(std::span<std::byte const> b) {
  return std::string(reinterpret_cast<char const*>(b.data()), b.size());
}

inline std::string read_file(std::filesystem::path const& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(std::filesystem::path const& p, std::string_view content) {
  std::ofstream out(p, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
}

// The little-endian bytes of values of T.
template <class T>
std::string le(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
  }
  return out;
}

// The big-endian bytes of values of T.
template <class T>
std::string be(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    std::reverse(b, b + sizeof(T));
    out.append(b, sizeof(T));
  }
  return out;
}

using tessel::test::error_of;

}  // namespace tessel::test_support
