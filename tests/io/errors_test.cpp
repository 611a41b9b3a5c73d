// Error paths of the io layer the format tests do not reach: element counts that overflow,
// invalid dtype values in hand-built arrays, and the atomic writer's file-system failures. Each
// asserts the sentence and that the destination is untouched and no temporary file is left.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <tessel/io/npy.hpp>
#include <tessel/io/safetensors.hpp>

#include "io_test_support.hpp"

namespace {

using namespace tessel;
using namespace tessel::test_support;

TEST(IoErrors, AShapeWhoseElementCountOverflowsIsRejected) {
  NpyArray a;
  a.dtype = DType::u8;
  a.shape = {std::int64_t{1} << 32, std::int64_t{1} << 32};
  EXPECT_EQ(error_of([&] { (void)a.numel(); }),
            "the number of elements of shape (4294967296, 4294967296) overflows int64.");
  EXPECT_EQ(error_of([&] { (void)a.as<float>(); }),
            "the number of elements of shape (4294967296, 4294967296) overflows int64.");
}

TEST(IoErrors, AnInvalidDTypeValueIsNamedAndNothingIsWritten) {
  TempDir dir;
  NpyArray a;
  a.dtype = static_cast<DType>(99);
  a.shape = {2};
  a.data.resize(2);
  EXPECT_EQ(error_of([&] { (void)a.as<float>(); }), "the NpyArray has an invalid dtype value 99.");
  EXPECT_EQ(error_of([&] { write_npy(dir / "a.npy", a); }),
            "the NpyArray has an invalid dtype value 99.");
  EXPECT_TRUE(dir.entries().empty());
}

TEST(IoErrors, WritingToADirectoryNameIsRejectedBeforeAnyFileIsCreated) {
  TempDir dir;
  std::vector<float> v{1, 2};
  std::string const name = (dir.path() / "").string();
  EXPECT_EQ(error_of([&] { write_npy(dir.path() / "", {2}, v); }),
            detail::sentence("cannot write ", name, ": it names a directory."));
  EXPECT_TRUE(dir.entries().empty());
}

TEST(IoErrors, AMissingParentDirectoryNamesTheTemporaryFile) {
  TempDir dir;
  std::vector<float> v{1, 2};
  auto const target = dir / "no" / "x.npy";
  std::string const e = error_of([&] { write_npy(target, {2}, v); });
  std::string const prefix =
      detail::sentence("cannot write ", target.string(), ": cannot create the temporary file ",
                       target.string(), ".tmp-");
  EXPECT_EQ(e.substr(0, prefix.size()), prefix) << e;
  EXPECT_EQ(e.substr(e.size() - 28), ": No such file or directory.") << e;
  EXPECT_TRUE(dir.entries().empty());
}

TEST(IoErrors, AFailedRenameLeavesTheDestinationAndNoTemporaryFile) {
  // The destination is a non-empty directory: the rename over it fails after the data was written
  // to the temporary file, which is then removed.
  TempDir dir;
  std::filesystem::create_directories(dir / "x.npy" / "inside");
  std::vector<float> v{1, 2};
  std::string const e = error_of([&] { write_npy(dir / "x.npy", {2}, v); });
  std::string const prefix = detail::sentence("cannot write ", (dir / "x.npy").string(),
                                              ": renaming ", (dir / "x.npy").string(), ".tmp-");
  EXPECT_EQ(e.substr(0, prefix.size()), prefix) << e;
  EXPECT_NE(e.find(" over it failed: "), std::string::npos) << e;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"x.npy"});
  EXPECT_TRUE(std::filesystem::is_directory(dir / "x.npy" / "inside"));
}

}  // namespace
