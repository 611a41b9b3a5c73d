// tessel::blas's symmetric eigensolver (blas_syevd, declared in tessel/exec/dense/blas.hpp):
// LAPACK's ?syevd in its three stages, the last one done differently. LAPACK's ?sytrd reduces the
// matrix to tridiagonal form and its ?stedc solves the tridiagonal problem by divide and conquer,
// exactly as ?syevd('L') calls them, so the eigenvalues are its own, bit for bit (a row-major
// matrix's lower triangle is mirrored into the column-major lower one first). ?syevd then carries
// the tridiagonal problem's eigenvectors back through the reduction's Householder reflectors with
// ?ormtr, which applies them 32 at a time through ?larfb: strided copies of rows and products
// only 32 deep. On a 1024 x 1024 matrix that took half of the decomposition (63 of 123 ms, one
// thread, OpenBLAS 0.3.21, an AMD Zen 4; docs/benchmarks.md). Here each block of 64 reflectors is
// I - V T V^T with V copied out dense, applied as two full-depth GEMMs and a triangular product:
// 29 ms. The eigenvectors agree with ?syevd's to rounding, not bit for bit.
#include <tessel/exec/dense/blas.hpp>
#include <tessel/exec/dense/transposed_pairs.hpp>

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

// LAPACK, Fortran calling convention: every argument by address, the lengths of the character
// arguments last. ?larft's V is not const: LAPACK 3.1's wrote the diagonal and restored it.
extern "C" {
void ssytrd_(char const* uplo, int const* n, float* a, int const* lda, float* d, float* e,
             float* tau, float* work, int const* lwork, int* info, std::size_t uplo_len);
void dsytrd_(char const* uplo, int const* n, double* a, int const* lda, double* d, double* e,
             double* tau, double* work, int const* lwork, int* info, std::size_t uplo_len);
void sstedc_(char const* compz, int const* n, float* d, float* e, float* z, int const* ldz,
             float* work, int const* lwork, int* iwork, int const* liwork, int* info,
             std::size_t compz_len);
void dstedc_(char const* compz, int const* n, double* d, double* e, double* z, int const* ldz,
             double* work, int const* lwork, int* iwork, int const* liwork, int* info,
             std::size_t compz_len);
void slarft_(char const* direct, char const* storev, int const* n, int const* k, float* v,
             int const* ldv, float const* tau, float* t, int const* ldt, std::size_t direct_len,
             std::size_t storev_len);
void dlarft_(char const* direct, char const* storev, int const* n, int const* k, double* v,
             int const* ldv, double const* tau, double* t, int const* ldt, std::size_t direct_len,
             std::size_t storev_len);
}

namespace tessel::exec::detail {

namespace {

// Reflectors per block of the back-transformation: 32 (?ormtr's) ran 2.1x slower, 128 and 256
// no faster than 64 while their zero triangles add work (docs/benchmarks.md).
constexpr int reflector_block = 64;

// The LAPACK and BLAS calls below, by element type. All matrices column-major.
void sytrd_lower(int n, float* a, int lda, float* d, float* e, float* tau, float* work, int lwork,
                 int& info) {
  ssytrd_("L", &n, a, &lda, d, e, tau, work, &lwork, &info, 1);
}
void sytrd_lower(int n, double* a, int lda, double* d, double* e, double* tau, double* work,
                 int lwork, int& info) {
  dsytrd_("L", &n, a, &lda, d, e, tau, work, &lwork, &info, 1);
}
void stedc_vectors(int n, float* d, float* e, float* z, float* work, int lwork, int* iwork,
                   int liwork, int& info) {
  sstedc_("I", &n, d, e, z, &n, work, &lwork, iwork, &liwork, &info, 1);
}
void stedc_vectors(int n, double* d, double* e, double* z, double* work, int lwork, int* iwork,
                   int liwork, int& info) {
  dstedc_("I", &n, d, e, z, &n, work, &lwork, iwork, &liwork, &info, 1);
}
void larft_forward(int m, int k, float* v, int ldv, float const* tau, float* t, int ldt) {
  slarft_("F", "C", &m, &k, v, &ldv, tau, t, &ldt, 1, 1);
}
void larft_forward(int m, int k, double* v, int ldv, double const* tau, double* t, int ldt) {
  dlarft_("F", "C", &m, &k, v, &ldv, tau, t, &ldt, 1, 1);
}
void gemm(CBLAS_TRANSPOSE ta, int m, int n, int k, float alpha, float const* a, int lda,
          float const* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasColMajor, ta, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(CBLAS_TRANSPOSE ta, int m, int n, int k, double alpha, double const* a, int lda,
          double const* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasColMajor, ta, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void upper_times(int m, int n, float const* t, int ldt, float* b, int ldb) {
  cblas_strmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, 1.0f, t, ldt,
              b, ldb);
}
void upper_times(int m, int n, double const* t, int ldt, double* b, int ldb) {
  cblas_dtrmm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, 1.0, t, ldt,
              b, ldb);
}

template <class T>
T* column(T* a, int lda, int j) {
  return a + static_cast<std::ptrdiff_t>(j) * lda;
}

// The column-major n x n matrix z written into a, as it is or (row_major) transposed, so that a
// row-major a holds it too.
template <class T>
void store(bool row_major, int n, T const* z, T* a, int lda) {
  if (!row_major) {
    for (int j = 0; j < n; ++j) std::copy(column(z, n, j), column(z, n, j) + n, column(a, lda, j));
    return;
  }
  for_each_pair(n, [&](index_t i, index_t j) {
    column(a, lda, static_cast<int>(i))[j] = column(z, n, static_cast<int>(j))[i];
  });
}

// The largest magnitude in the lower triangle, or NaN where there is one (?lansy's 'M' norm, so
// that a matrix with a NaN is not scaled, as in ?syevd).
template <class T>
T max_magnitude_lower(int n, T const* a, int lda) {
  T m = 0;
  for (int j = 0; j < n; ++j)
    for (int i = j; i < n; ++i) {
      T const x = std::abs(column(a, lda, j)[i]);
      if (std::isnan(x)) return x;
      m = std::max(m, x);
    }
  return m;
}

// Z := Q Z for the Q = H(0) H(1) ... H(n-2) that ?sytrd('L') leaves in a: H(i) = I - tau_i v v^T,
// v zero above row i + 1, one there, a(i+2:n, i) below. Blocks of reflectors from the last one
// back; block b..b+k-1 acts on rows b+1..n-1 as I - V T V^T (T from ?larft, upper triangular),
// and is applied as Y = V^T Z, Y = T Y, Z -= V Y. scratch holds T, V and Y.
template <class T>
void apply_reflectors(int n, T* a, int lda, T const* tau, T* z, T* scratch) {
  int const count = n - 1;
  if (count <= 0) return;
  constexpr int kb = reflector_block;
  T* const t = scratch;
  T* const v = t + kb * kb;
  T* const y = v + static_cast<std::ptrdiff_t>(n) * kb;
  for (int b = (count - 1) / kb * kb; b >= 0; b -= kb) {
    int const k = std::min(kb, count - b), m = n - 1 - b;
    T* const vb = column(a, lda, b) + b + 1;
    larft_forward(m, k, vb, lda, tau + b, t, kb);
    // V dense: its unit diagonal and the zeros above it are not stored in a.
    for (int j = 0; j < k; ++j) {
      T* const vj = column(v, m, j);
      std::fill(vj, vj + j, T(0));
      vj[j] = T(1);
      std::copy(column(vb, lda, j) + j + 1, column(vb, lda, j) + m, vj + j + 1);
    }
    gemm(CblasTrans, k, n, m, T(1), v, m, z + b + 1, n, T(0), y, k);
    upper_times(k, n, t, kb, y, k);
    gemm(CblasNoTrans, m, n, k, T(-1), v, m, y, k, T(1), z + b + 1, n);
  }
}

template <class T>
int syevd(bool row_major, index_t size, T* a, index_t lda_, T* w, std::vector<T>& work,
          std::vector<int>& iwork) {
  int const n = static_cast<int>(size), lda = static_cast<int>(lda_);
  if (n == 0) return 0;
  if (n == 1) {
    w[0] = a[0];
    a[0] = T(1);
    return 0;
  }
  // A row-major matrix's lower triangle is the upper one of the column-major matrix LAPACK reads:
  // copied over the other triangle first.
  if (row_major)
    mirror_lower_to_upper([&](index_t i, index_t j) -> T& { return a[i * lda + j]; }, n);
  // ?syevd's scaling: a matrix whose largest element is outside [rmin, rmax] is solved scaled
  // into it (squares and products of its elements would under- or overflow), the eigenvalues
  // scaled back.
  T const safe = std::numeric_limits<T>::min() / std::numeric_limits<T>::epsilon();
  T const rmin = std::sqrt(safe), rmax = std::sqrt(T(1) / safe);
  T const largest = max_magnitude_lower(n, a, lda);
  T sigma = 1;
  if (largest > 0 && largest < rmin) sigma = rmin / largest;
  if (largest > rmax) sigma = rmax / largest;
  if (sigma != 1)
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) column(a, lda, j)[i] *= sigma;

  // Workspace: e, tau and Z, then what the largest of the three stages needs. ?stedc gets its
  // documented minimum (for eigenvectors of the tridiagonal matrix: n^2 + 4n + 1 and 5n + 3),
  // not its workspace query's answer: that comes back in a float, which from n = 4096 cannot
  // hold the odd n^2 + 4n + 1 and rounds it down, and ?stedc then refuses its own figure.
  auto const nn = static_cast<std::size_t>(n);
  T query = 0;
  int info = 0;
  sytrd_lower(n, a, lda, w, w, w, &query, -1, info);
  if (info != 0) return info;
  auto const trd = static_cast<std::size_t>(query);
  std::size_t const stedc = nn * nn + 4 * nn + 1, stedc_i = 5 * nn + 3;
  std::size_t const back = static_cast<std::size_t>(reflector_block) * (reflector_block + 2 * nn);
  std::size_t const scratch = std::max({trd, stedc, back});
  if (work.size() < 2 * nn + nn * nn + scratch) work.resize(2 * nn + nn * nn + scratch);
  if (iwork.size() < stedc_i) iwork.resize(stedc_i);
  T* const e = work.data();
  T* const tau = e + nn;
  T* const z = tau + nn;
  T* const rest = z + nn * nn;

  sytrd_lower(n, a, lda, w, e, tau, rest, static_cast<int>(scratch), info);
  if (info != 0) return info;
  stedc_vectors(n, w, e, z, rest, static_cast<int>(scratch), iwork.data(),
                static_cast<int>(iwork.size()), info);
  if (info != 0) return info;
  apply_reflectors(n, a, lda, tau, z, rest);
  store(row_major, n, z, a, lda);
  if (sigma != 1)
    for (int i = 0; i < n; ++i) w[i] *= T(1) / sigma;
  return 0;
}

}  // namespace

int blas_syevd(bool row_major, index_t n, float* a, index_t lda, float* w, std::vector<float>& work,
               std::vector<int>& iwork) {
  return syevd(row_major, n, a, lda, w, work, iwork);
}
int blas_syevd(bool row_major, index_t n, double* a, index_t lda, double* w,
               std::vector<double>& work, std::vector<int>& iwork) {
  return syevd(row_major, n, a, lda, w, work, iwork);
}

}  // namespace tessel::exec::detail
