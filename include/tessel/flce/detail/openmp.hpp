// TESSEL_FLCE_PARALLEL_FOR(work): an OpenMP work-sharing loop when the build has OpenMP and the
// loop touches at least parallel_work_threshold elements, a plain loop otherwise (and no pragma
// at all without -fopenmp, so -Wall -Werror builds see no unknown pragma). Small loops stay
// serial: waking a team costs microseconds, and far more on a machine whose cores are busy.
#pragma once

#include "../../core/config.hpp"

namespace tessel::flce::detail {
inline constexpr index_t parallel_work_threshold = index_t{1} << 15;
}  // namespace tessel::flce::detail

#define TESSEL_FLCE_PRAGMA(x) _Pragma(#x)
#if defined(_OPENMP)
#define TESSEL_FLCE_PARALLEL_FOR(work)                 \
  TESSEL_FLCE_PRAGMA(omp parallel for schedule(static) \
                         if ((work) >= ::tessel::flce::detail::parallel_work_threshold))
#else
#define TESSEL_FLCE_PARALLEL_FOR(work)
#endif
