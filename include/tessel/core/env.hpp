// Process-wide settings read from the environment, once, like OMP_NUM_THREADS.
#pragma once

#include <cstdlib>

#include "error.hpp"
#include "int.hpp"
#include "warning.hpp"

namespace tessel::detail {

// The integer in the environment variable `name`, or `fallback` when it is unset or empty. A value
// that is not an integer is reported (a tessel warning naming it) and `fallback` used.
inline index_t env_integer(char const* name, index_t fallback) {
  char const* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return fallback;
  char* end = nullptr;
  long long const v = std::strtoll(env, &end, 10);
  if (end != nullptr && *end == '\0') return static_cast<index_t>(v);
  warn(sentence(name, "='", env, "' is not an integer; using ", fallback, "."));
  return fallback;
}

}  // namespace tessel::detail
