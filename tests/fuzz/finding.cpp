// A fuzz finding: print and abort, so libFuzzer (or the plain driver) stops with the input saved.
#include <cstdio>
#include <cstdlib>

#include "fuzz_input.hpp"

namespace tessel::fuzz {

[[noreturn]] void finding(char const* what) {
  std::fprintf(stderr, "tessel fuzz finding: %s\n", what);
  std::abort();
}

}  // namespace tessel::fuzz
