// The .npy reader on arbitrary bytes: it either throws tessel::Error or returns an array that
// serializes (np.save's header + the data) back to an input it reads identically.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <tessel/io/npy.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t length) {
  using namespace tessel;
  NpyArray a;
  try {
    a = parse_npy(std::span(reinterpret_cast<std::byte const*>(data), length), "fuzz.npy");
  } catch (Error const&) {
    return 0;  // a sentence, never a crash
  }
  TESSEL_FUZZ_CHECK(a.data.size() == static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype));
  if (a.dtype == DType::bf16) return 0;  // NumPy has no bf16; the reader never yields it
  std::string bytes;
  try {
    bytes = npy_header(a.dtype, a.shape);
  } catch (Error const&) {
    TESSEL_FUZZ_CHECK(false);  // whatever was read can be written
  }
  bytes.append(reinterpret_cast<char const*>(a.data.data()), a.data.size());
  NpyArray b = parse_npy(std::span(reinterpret_cast<std::byte const*>(bytes.data()), bytes.size()),
                         "round trip");
  TESSEL_FUZZ_CHECK(b.dtype == a.dtype && b.shape == a.shape && b.data == a.data);
  try {
    (void)a.as<double>();
  } catch (Error const&) {
    TESSEL_FUZZ_CHECK(false);  // every dtype converts to double
  }
  return 0;
}
