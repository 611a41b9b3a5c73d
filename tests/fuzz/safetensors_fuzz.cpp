// The safetensors reader on arbitrary bytes: it either throws tessel::Error or returns tensors
// that serialize back (the writer's header + the data) to a file it reads identically.
#include <cstdint>
#include <span>
#include <string>

#include <tessel/io/safetensors.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t length) {
  using namespace tessel;
  SafetensorsFile f;
  try {
    f = parse_safetensors(std::span(reinterpret_cast<std::byte const*>(data), length),
                          "fuzz.safetensors");
  } catch (Error const&) {
    return 0;
  }
  for (auto const& t : f.tensors)
    TESSEL_FUZZ_CHECK(t.data.size() == static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype));
  std::string header;
  try {
    header = detail::io::safetensors_header_for(f, "round trip");
  } catch (Error const&) {
    TESSEL_FUZZ_CHECK(false);  // whatever was read can be written
  }
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<std::size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
  bytes += header;
  for (auto const& t : f.tensors)
    bytes.append(reinterpret_cast<char const*>(t.data.data()), t.data.size());
  SafetensorsFile g = parse_safetensors(
      std::span(reinterpret_cast<std::byte const*>(bytes.data()), bytes.size()), "round trip");
  TESSEL_FUZZ_CHECK(g.metadata == f.metadata && g.tensors.size() == f.tensors.size());
  for (std::size_t i = 0; i < f.tensors.size(); ++i) {
    TESSEL_FUZZ_CHECK(g.tensors[i].name == f.tensors[i].name &&
                      g.tensors[i].dtype == f.tensors[i].dtype);
    TESSEL_FUZZ_CHECK(g.tensors[i].shape == f.tensors[i].shape &&
                      g.tensors[i].data == f.tensors[i].data);
  }
  return 0;
}
