// The sentence of the tessel::Error that f throws, or "no error" when it throws none: what the
// error tests compare with the messages docs/errors.md documents. Other exceptions propagate (a
// test that expects a tessel::Error must not pass on a std::bad_alloc).
#pragma once

#include <string>

#include <tessel/core/error.hpp>

namespace tessel::test {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (Error const& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace tessel::test
