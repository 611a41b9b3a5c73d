// TESSEL_CHECK_BOUNDS's default, as core/config.hpp states it: on at -O0 without NDEBUG (Debug
// builds), off when the compiler optimizes (__OPTIMIZE__) or NDEBUG is defined, and whatever
// -DTESSEL_CHECK_BOUNDS=0/1 says. Not a program: tests/CMakeLists.txt compiles this file
// (-fsyntax-only) once per set of flags, with -DEXPECTED_CHECK_BOUNDS=<the value they must give>.
#include <tessel/core/config.hpp>

static_assert(TESSEL_CHECK_BOUNDS == EXPECTED_CHECK_BOUNDS,
              "TESSEL_CHECK_BOUNDS's default is not what core/config.hpp promises for these flags");
