// The host BLAS and LAPACK behind exec::gemm, exec::syrk and exec::eigh. When tessel is configured
// with them (CMake's TESSEL_BLAS, on when OpenBLAS is found), the tessel::tessel target defines
// TESSEL_BLAS=1 and links tessel::blas, a small compiled library (kernels/blas.cpp) that makes these
// calls: a tile of a host product is one cblas_?gemm / cblas_?syrk call on its plain descriptors,
// a symmetric eigendecomposition LAPACK's ?syevd stages (tridiagonal reduction, divide and
// conquer) with tessel's blocked back-transformation (kernels/syevd.cpp). Otherwise, or for a
// header-only use without CMake, Eigen computes them (exec/dense.hpp, exec/eigh.hpp). The BLAS's
// own headers stay inside that library: OpenBLAS's cblas.h declares a global `bfloat16` (and other
// names) that would collide with tessel's in user code.
#pragma once

#include <type_traits>
#include <vector>

#include "../../core/config.hpp"

#if !defined(TESSEL_BLAS)
#define TESSEL_BLAS 0
#endif

namespace tessel::exec::detail {

// True when host products and eigendecompositions of T go to the BLAS and LAPACK.
template <class T>
inline constexpr bool host_blas_v = TESSEL_BLAS != 0 &&
                                    (std::is_same_v<T, float> || std::is_same_v<T, double>);

// CBLAS and LAPACK take 32-bit extents and leading dimensions: a call whose numbers do not fit in
// int is computed by Eigen instead.
constexpr bool fits_blas_int(index_t x) {
  return x <= index_t{0x7fffffff};
}

// blas_syevd's divide and conquer needs n^2 + 4n + 1 elements of workspace, a number LAPACK takes
// as an int: larger matrices (n >= 46339) are decomposed by Eigen instead.
constexpr bool fits_blas_syevd(index_t n, index_t lda) {
  return fits_blas_int(lda) && n < index_t{46339};
}

#if TESSEL_BLAS

// The name of the BLAS kernels this process runs (OpenBLAS's core, e.g. "SkylakeX"). Where
// Debian's OpenBLAS falls back to SSE kernels on a newer x86 CPU, tessel has it choose the
// kernels of the CPU's widest vectors while the program loads, quietly (kernels/blas.cpp says why);
// OPENBLAS_CORETYPE, when set, decides instead.
char const* blas_kernels();

// C[m, n] = alpha op(A)[m, k] op(B)[k, n] + beta C, row-major C with leading dimension ldc. A is
// read as the row-major (m, k) matrix at a with leading dimension lda, or, with a_transposed, as
// the transpose of the row-major (k, m) one (a column-major A); B likewise. beta == 0 does not
// read C. @pre 1 <= m, n, k and every number fits in int
void blas_gemm(bool a_transposed, bool b_transposed, index_t m, index_t n, index_t k, float alpha,
               float const* a, index_t lda, float const* b, index_t ldb, float beta, float* c,
               index_t ldc);
void blas_gemm(bool a_transposed, bool b_transposed, index_t m, index_t n, index_t k, double alpha,
               double const* a, index_t lda, double const* b, index_t ldb, double beta, double* c,
               index_t ldc);

// The lower triangle of C[n, n] = alpha A A^T + beta C, row-major C; A as in blas_gemm.
// @pre 1 <= n, k and every number fits in int
void blas_syrk_lower(bool a_transposed, index_t n, index_t k, float alpha, float const* a,
                     index_t lda, float beta, float* c, index_t ldc);
void blas_syrk_lower(bool a_transposed, index_t n, index_t k, double alpha, double const* a,
                     index_t lda, double beta, double* c, index_t ldc);

// Eigenvalues (ascending, into w) and eigenvectors of the symmetric n x n matrix at a, row-major
// or column-major with leading dimension lda, of which the lower triangle is read; the
// eigenvectors overwrite a as its columns (a(i, j) is component i of eigenvector j) in the same
// storage order. work and iwork are the calling thread's workspace, grown as needed. Returns
// LAPACK's info (0: converged, > 0: did not converge). The eigenvalues are LAPACK ?syevd's; the
// eigenvectors are carried back through the tridiagonal reduction in blocks of two GEMMs, where
// LAPACK's form of that stage is ?syevd's slowest (kernels/syevd.cpp says why).
// @pre fits_blas_syevd(n, lda)
int blas_syevd(bool row_major, index_t n, float* a, index_t lda, float* w, std::vector<float>& work,
               std::vector<int>& iwork);
int blas_syevd(bool row_major, index_t n, double* a, index_t lda, double* w,
               std::vector<double>& work, std::vector<int>& iwork);

#endif

}  // namespace tessel::exec::detail
