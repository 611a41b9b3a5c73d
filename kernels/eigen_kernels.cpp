// The Eigen kernels of the host dense primitives (exec/dense/eigen_kernels.hpp), compiled once in
// the tessel::blas library for float and double: translation units built with TESSEL_BLAS declare
// them extern, so that Eigen's products and eigensolvers are not compiled again in each of them.
#include <tessel/exec/dense/eigen_kernels.hpp>

TESSEL_EIGEN_KERNELS(, float)
TESSEL_EIGEN_KERNELS(, double)
