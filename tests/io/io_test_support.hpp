// Helpers for the io tests: a private temporary directory per test (ctest runs tests in
// parallel), whole-file reads, byte-string builders and the text of a thrown tessel::Error.
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

namespace tessel::test_support {

class TempDir {
 public:
  TempDir() {
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "tessel-";
    name += info ? std::string(info->test_suite_name()) + "-" + info->name() : "test";
    // Appended piece by piece: g++ 12 at -O3 reports a false -Wrestrict for "-" + std::string.
    name += '-';
    name += std::to_string(std::random_device{}());
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(TempDir const&) = delete;
  TempDir& operator=(TempDir const&) = delete;

  std::filesystem::path const& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

  // The names in the directory, sorted: shows leftover temporary files.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (auto const& e : std::filesystem::directory_iterator(path_)) {
      names.push_back(e.path().filename().string());
    }
    std::ranges::sort(names);
    return names;
  }

 private:
  std::filesystem::path path_;
};

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
