// Shared by the io readers and writers: byte sources (a span, or a file read piece by piece so
// that its data is copied once, straight into the result) and an atomic file writer (a
// temporary file in the destination's directory, renamed over the destination on success).
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "../../core/error.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>  // fsync
#define TESSEL_HAS_FSYNC 1
#else
#define TESSEL_HAS_FSYNC 0
#endif

namespace tessel::detail::io {

// Bytes already in memory.
class SpanSource {
 public:
  explicit SpanSource(std::span<std::byte const> bytes) : bytes_(bytes) {}

  std::uint64_t size() const { return bytes_.size(); }

  // @pre offset + n <= size() (callers check against size() first; this re-checks so that a
  // reader bug cannot become an out-of-bounds read)
  void read(std::uint64_t offset, void* dst, std::size_t n) const {
    if (offset > bytes_.size() || n > bytes_.size() - offset) {
      throw_error(sentence("tessel internal error: read of ", n, " bytes at offset ", offset,
                           " past the end of a ", bytes_.size(), "-byte buffer."));
    }
    if (n != 0) std::memcpy(dst, bytes_.data() + offset, n);
  }

 private:
  std::span<std::byte const> bytes_;
};

// A file, read at the offsets the parser asks for.
class FileSource {
 public:
  explicit FileSource(std::filesystem::path const& path) : name_(path.string()) {
    std::error_code ec;
    auto const size = std::filesystem::file_size(path, ec);
    if (ec) throw_error(sentence("cannot read ", name_, ": ", ec.message(), "."));
    size_ = size;
    stream_.open(path, std::ios::binary);
    if (!stream_) {
      throw_error(
          sentence("cannot open ", name_, ": ", std::generic_category().message(errno), "."));
    }
  }

  std::uint64_t size() const { return size_; }

  void read(std::uint64_t offset, void* dst, std::size_t n) {
    if (n == 0) return;
    stream_.seekg(static_cast<std::streamoff>(offset));
    stream_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!stream_ || static_cast<std::size_t>(stream_.gcount()) != n) {
      throw_error(sentence("cannot read ", name_, ": reading ", n, " bytes at offset ", offset,
                           " failed (was the file changed while it was being read?)."));
    }
  }

 private:
  std::string name_;
  std::uint64_t size_ = 0;
  std::ifstream stream_;
};

// Writes a file so that readers see either the old file or the complete new one, never a
// partial write: bytes go to a new temporary file next to the destination (same directory, so
// the rename cannot cross file systems), which commit() flushes, syncs and renames over the
// destination. Destroying an uncommitted writer (an exception on the way) removes the temporary.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path destination)
      : AtomicFileWriter(std::move(destination), std::random_device{}()) {}

  // Temporary names drawn from a generator seeded with name_seed (a test can then predict them).
  AtomicFileWriter(std::filesystem::path destination, std::uint64_t name_seed)
      : destination_(std::move(destination)) {
    if (!destination_.has_filename()) {
      throw_error(sentence("cannot write ", destination_.string(), ": it names a directory."));
    }
    std::mt19937_64 random(name_seed);
    for (int attempt = 0; attempt < 100 && file_ == nullptr; ++attempt) {
      char suffix[24];
      std::snprintf(suffix, sizeof suffix, ".tmp-%016llx",
                    static_cast<unsigned long long>(random()));
      temporary_ = destination_;
      temporary_ += suffix;
      // "x": create exclusively, so an existing file (another writer's temporary) is never
      // truncated; a name collision just tries the next name.
#if defined(_WIN32)
      file_ = ::_wfopen(temporary_.c_str(), L"wbx");
#else
      file_ = std::fopen(temporary_.c_str(), "wbx");
#endif
      if (file_ == nullptr && errno != EEXIST) {
        throw_error(sentence("cannot write ", destination_.string(),
                             ": cannot create the temporary file ", temporary_.string(), ": ",
                             std::generic_category().message(errno), "."));
      }
    }
    if (file_ == nullptr) {
      throw_error(sentence("cannot write ", destination_.string(),
                           ": every temporary file name tried already exists."));
    }
  }

  AtomicFileWriter(AtomicFileWriter const&) = delete;
  AtomicFileWriter& operator=(AtomicFileWriter const&) = delete;

  ~AtomicFileWriter() {
    if (file_ != nullptr) std::fclose(file_);
    if (!committed_) {
      std::error_code ignored;
      std::filesystem::remove(temporary_, ignored);
    }
  }

  void write(void const* data, std::size_t n) {
    if (n != 0 && std::fwrite(data, 1, n, file_) != n) fail("writing");
  }

  // @post the destination holds exactly the bytes written; the temporary file is gone
  void commit() {
    if (std::fflush(file_) != 0) fail("writing");
#if TESSEL_HAS_FSYNC
    // Without this a crash soon after the rename can leave an empty destination on some file
    // systems: the rename may reach the disk before the data.
    if (::fsync(::fileno(file_)) != 0) fail("syncing");
#endif
    std::FILE* const file = file_;
    file_ = nullptr;
    if (std::fclose(file) != 0) fail("closing");
    std::error_code ec;
    std::filesystem::rename(temporary_, destination_, ec);
    if (ec) {
      throw_error(sentence("cannot write ", destination_.string(), ": renaming ",
                           temporary_.string(), " over it failed: ", ec.message(), "."));
    }
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(char const* doing) {
    int const error = errno;
    throw_error(sentence("cannot write ", destination_.string(), ": ", doing, " ",
                         temporary_.string(), " failed: ", std::generic_category().message(error),
                         "."));
  }

  std::filesystem::path destination_;
  std::filesystem::path temporary_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace tessel::detail::io
