// Runs a fuzz target on files (or every file of directories) given on the command line, without
// libFuzzer, so every target also builds with g++ and its seed corpus runs as a regression test.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size);

namespace {

int run_file(std::filesystem::path const& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<std::uint8_t const*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int inputs = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (auto const& entry : std::filesystem::recursive_directory_iterator(p))
        if (entry.is_regular_file()) inputs += run_file(entry.path());
    } else {
      inputs += run_file(p);
    }
  }
  std::printf("ran %d inputs without a finding\n", inputs);
  return inputs > 0 ? 0 : 1;
}
