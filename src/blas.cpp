// tessel::blas: the host BLAS and LAPACK calls behind exec::gemm, exec::syrk and exec::eigh
// (declared in tessel/exec/dense/blas.hpp), compiled once so that the BLAS's headers, which put
// names such as `bfloat16` in the global namespace, never reach a tessel user's translation unit.
#include <tessel/exec/dense/blas.hpp>

#include <cblas.h>

#include <cstddef>
#include <vector>

// LAPACK's symmetric eigensolver (divide and conquer), Fortran calling convention: every argument
// by address, the lengths of the two character arguments last.
extern "C" {
void ssyevd_(char const* jobz, char const* uplo, int const* n, float* a, int const* lda, float* w,
             float* work, int const* lwork, int* iwork, int const* liwork, int* info,
             std::size_t jobz_len, std::size_t uplo_len);
void dsyevd_(char const* jobz, char const* uplo, int const* n, double* a, int const* lda, double* w,
             double* work, int const* lwork, int* iwork, int const* liwork, int* info,
             std::size_t jobz_len, std::size_t uplo_len);
}

namespace tessel::exec::detail {

namespace {

int as_int(index_t x) {
  return static_cast<int>(x);
}
CBLAS_TRANSPOSE transpose_if(bool t) {
  return t ? CblasTrans : CblasNoTrans;
}

// ?syevd with a workspace query first (lwork = liwork = -1 writes the sizes the call wants).
template <class T, class Syevd>
int syevd(Syevd f, char uplo, index_t n, T* a, index_t lda, T* w, std::vector<T>& work,
          std::vector<int>& iwork) {
  int const ni = as_int(n), ldai = as_int(lda);
  char const jobz = 'V';
  auto call = [&](int lwork, int liwork) {
    int info = 0;
    f(&jobz, &uplo, &ni, a, &ldai, w, work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
    return info;
  };
  if (work.empty()) work.resize(1);
  if (iwork.empty()) iwork.resize(1);
  if (int const info = call(-1, -1); info != 0) return info;
  auto const lwork = static_cast<std::size_t>(work[0]);
  auto const liwork = static_cast<std::size_t>(iwork[0]);
  if (work.size() < lwork) work.resize(lwork);
  if (iwork.size() < liwork) iwork.resize(liwork);
  return call(as_int(static_cast<index_t>(work.size())),
              as_int(static_cast<index_t>(iwork.size())));
}

}  // namespace

void blas_gemm(bool a_transposed, bool b_transposed, index_t m, index_t n, index_t k, float alpha,
               float const* a, index_t lda, float const* b, index_t ldb, float beta, float* c,
               index_t ldc) {
  cblas_sgemm(CblasRowMajor, transpose_if(a_transposed), transpose_if(b_transposed), as_int(m),
              as_int(n), as_int(k), alpha, a, as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}
void blas_gemm(bool a_transposed, bool b_transposed, index_t m, index_t n, index_t k, double alpha,
               double const* a, index_t lda, double const* b, index_t ldb, double beta, double* c,
               index_t ldc) {
  cblas_dgemm(CblasRowMajor, transpose_if(a_transposed), transpose_if(b_transposed), as_int(m),
              as_int(n), as_int(k), alpha, a, as_int(lda), b, as_int(ldb), beta, c, as_int(ldc));
}

void blas_syrk_lower(bool a_transposed, index_t n, index_t k, float alpha, float const* a,
                     index_t lda, float beta, float* c, index_t ldc) {
  cblas_ssyrk(CblasRowMajor, CblasLower, transpose_if(a_transposed), as_int(n), as_int(k), alpha, a,
              as_int(lda), beta, c, as_int(ldc));
}
void blas_syrk_lower(bool a_transposed, index_t n, index_t k, double alpha, double const* a,
                     index_t lda, double beta, double* c, index_t ldc) {
  cblas_dsyrk(CblasRowMajor, CblasLower, transpose_if(a_transposed), as_int(n), as_int(k), alpha, a,
              as_int(lda), beta, c, as_int(ldc));
}

int lapack_syevd(char uplo, index_t n, float* a, index_t lda, float* w, std::vector<float>& work,
                 std::vector<int>& iwork) {
  return syevd(ssyevd_, uplo, n, a, lda, w, work, iwork);
}
int lapack_syevd(char uplo, index_t n, double* a, index_t lda, double* w, std::vector<double>& work,
                 std::vector<int>& iwork) {
  return syevd(dsyevd_, uplo, n, a, lda, w, work, iwork);
}

}  // namespace tessel::exec::detail
