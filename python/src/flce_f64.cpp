// flce::forward on f64 storage for the Python module (flce.hpp says why one file per type).
#include "flce_run.hpp"

template nanobind::tuple tessel_python::run_linear_cross_entropy<double>(FlceCall const&);
