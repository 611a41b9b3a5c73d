// Error paths of the io layer the format tests do not reach: element counts that overflow,
// invalid dtype values in hand-built arrays, the atomic writer's file-system failures, and the
// file reader's open and read failures. Each asserts the sentence and that the destination is
// untouched and no temporary file is left (readers: that no array is returned).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/resource.h>  // setrlimit
#include <unistd.h>        // dup, close
#define TESSEL_TEST_HAS_RLIMIT 1
#else
#define TESSEL_TEST_HAS_RLIMIT 0
#endif

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
            "the number of elements of shape (4294967296,4294967296) overflows int64.");
  EXPECT_EQ(error_of([&] { (void)a.as<float>(); }),
            "the number of elements of shape (4294967296,4294967296) overflows int64.");
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

// The first `taken` temporary names a writer seeded with `seed` tries for `target`, created.
std::vector<std::string> take_temporary_names(std::filesystem::path const& target,
                                              std::uint64_t seed, int taken) {
  std::mt19937_64 names(seed);
  std::vector<std::string> out;
  for (int i = 0; i < taken; ++i) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, ".tmp-%016llx", static_cast<unsigned long long>(names()));
    auto p = target;
    p += suffix;
    std::ofstream(p) << "taken";
    out.push_back(p.filename().string());
  }
  std::ranges::sort(out);
  return out;
}

TEST(IoErrors, WhenEveryTemporaryNameIsTakenTheWriterGivesUpAndTouchesNothing) {
  TempDir dir;
  auto const target = dir / "x.npy";
  std::uint64_t const seed = 20261121;
  auto const taken = take_temporary_names(target, seed, 100);
  EXPECT_EQ(error_of([&] { detail::io::AtomicFileWriter writer(target, seed); }),
            detail::sentence("cannot write ", target.string(),
                             ": every temporary file name tried already exists."));
  EXPECT_EQ(dir.entries(), taken);  // no destination, no new file
  for (auto const& name : taken) {
    std::ifstream in(dir / name);
    std::string text;
    in >> text;
    EXPECT_EQ(text, "taken") << name;
  }
}

TEST(IoErrors, ATakenTemporaryNameIsSkippedNotTruncated) {
  TempDir dir;
  auto const target = dir / "x.npy";
  std::uint64_t const seed = 7;
  auto const taken = take_temporary_names(target, seed, 99);  // the 100th name is free
  {
    detail::io::AtomicFileWriter writer(target, seed);
    EXPECT_EQ(dir.entries().size(), 100u);
  }  // never committed: its temporary is removed
  EXPECT_EQ(dir.entries(), taken);
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

#if TESSEL_TEST_HAS_RLIMIT
// Lowers the soft limit on open files to the lowest free descriptor, so that the next open()
// fails with EMFILE (root included: the limit is not a permission); restores it on destruction.
class NoMoreFileDescriptors {
 public:
  NoMoreFileDescriptors() {
    ok_ = ::getrlimit(RLIMIT_NOFILE, &old_) == 0;
    int const lowest_free = ::dup(0);
    if (lowest_free >= 0) ::close(lowest_free);
    rlimit lowered = old_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free);
    ok_ = ok_ && lowest_free >= 0 && ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~NoMoreFileDescriptors() { ::setrlimit(RLIMIT_NOFILE, &old_); }
  NoMoreFileDescriptors(NoMoreFileDescriptors const&) = delete;
  NoMoreFileDescriptors& operator=(NoMoreFileDescriptors const&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  bool ok_ = false;
};

TEST(IoErrors, AFileThatExistsButCannotBeOpenedIsNamed) {
  // The file's size is known (stat needs no descriptor), then opening it fails. A socket or a
  // FIFO would not get this far: the size query already refuses them ("Operation not
  // supported"), and root ignores permission bits, so the descriptor limit makes open() fail.
  TempDir dir;
  std::vector<float> v{1, 2, 3};
  write_npy(dir / "x.npy", {3}, v);
  SafetensorsFile f;
  f.tensors.push_back(make_safetensors_entry("w", {3}, v));
  write_safetensors(dir / "x.safetensors", f);
  // Read both and catch a reader's error once first: UndefinedBehaviorSanitizer checks the
  // dynamic types of the streams and of the exception and caches the result; a first check under
  // the lowered limit would need a pipe to probe memory, fail to create it, and report a bogus
  // invalid vptr.
  ASSERT_EQ(read_npy(dir / "x.npy").numel(), 3);
  ASSERT_EQ(read_safetensors(dir / "x.safetensors").tensors.size(), 1u);
  ASSERT_NE(error_of([&] { (void)read_npy(dir / "missing.npy"); }), "no error");
  std::string npy_error, safetensors_error;
  {
    NoMoreFileDescriptors limit;
    ASSERT_TRUE(limit.ok());
    npy_error = error_of([&] { (void)read_npy(dir / "x.npy"); });
    safetensors_error = error_of([&] { (void)read_safetensors(dir / "x.safetensors"); });
  }
  EXPECT_EQ(npy_error, "cannot open " + (dir / "x.npy").string() + ": Too many open files.");
  EXPECT_EQ(safetensors_error,
            "cannot open " + (dir / "x.safetensors").string() + ": Too many open files.");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"x.npy", "x.safetensors"}));
}
#endif

// A byte source over a real file that truncates the file just before its `shrink_at`-th read: a
// file that another process shortens between the reader's size check and its data read.
class ShrinkingFile {
 public:
  ShrinkingFile(std::filesystem::path path, int shrink_at)
      : source_(path), path_(std::move(path)), shrink_at_(shrink_at) {}
  std::uint64_t size() const { return source_.size(); }
  void read(std::uint64_t offset, void* dst, std::size_t n) {
    if (++reads_ == shrink_at_) std::filesystem::resize_file(path_, offset);
    source_.read(offset, dst, n);
  }

 private:
  detail::io::FileSource source_;
  std::filesystem::path path_;
  int shrink_at_;
  int reads_ = 0;
};

TEST(IoErrors, AFileThatShrinksWhileItIsReadIsAnErrorNotPartOfAnArray) {
  // read_npy reads the preamble, the header, then the data (read 3); read_safetensors reads the
  // 8-byte length, the header, then the data (read 3). The files are cut at the data's offset.
  TempDir dir;
  std::vector<float> v(100, 1.5f);
  write_npy(dir / "x.npy", {100}, v);
  std::string const npy = (dir / "x.npy").string();
  ShrinkingFile npy_source(dir / "x.npy", 3);
  EXPECT_EQ(error_of([&] { (void)detail::io::read_npy_from(npy_source, npy); }),
            "cannot read " + npy +
                ": reading 400 bytes at offset 128 failed (was the file changed while it was "
                "being read?).");
  EXPECT_EQ(std::filesystem::file_size(dir / "x.npy"), 128u);

  SafetensorsFile f;
  f.tensors.push_back(make_safetensors_entry("w", {100}, v));
  write_safetensors(dir / "x.safetensors", f);
  auto const full = std::filesystem::file_size(dir / "x.safetensors");
  std::string const st = (dir / "x.safetensors").string();
  ShrinkingFile st_source(dir / "x.safetensors", 3);
  EXPECT_EQ(error_of([&] { (void)detail::io::read_safetensors_from(st_source, st); }),
            detail::sentence("cannot read ", st, ": reading 400 bytes at offset ", full - 400,
                             " failed (was the file changed while it was being read?)."));
}

TEST(IoErrors, AReadPastTheEndOfAnInMemoryBufferIsRefusedWithoutCopying) {
  // The readers check offsets against size() first; SpanSource re-checks so that a reader bug
  // cannot become an out-of-bounds read. Fed directly, including an offset + n that would wrap.
  std::array<std::byte, 8> bytes{};
  detail::io::SpanSource const source(bytes);
  std::array<std::byte, 4> dst{std::byte{7}, std::byte{7}, std::byte{7}, std::byte{7}};
  EXPECT_EQ(error_of([&] { source.read(6, dst.data(), 4); }),
            "tessel internal error: read of 4 bytes at offset 6 past the end of a 8-byte buffer.");
  EXPECT_EQ(error_of([&] { source.read(~std::uint64_t{0}, dst.data(), 2); }),
            "tessel internal error: read of 2 bytes at offset 18446744073709551615 past the end of "
            "a 8-byte buffer.");
  for (std::byte b : dst) EXPECT_EQ(b, std::byte{7});
  EXPECT_EQ(error_of([&] { source.read(4, dst.data(), 4); }), "no error");
}

}  // namespace
