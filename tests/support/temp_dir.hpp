// A private temporary directory per test, removed with everything in it when the test ends.
// ctest runs test programs in parallel, so the name carries the test's own name and a random
// number.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace tessel::test {

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

}  // namespace tessel::test
