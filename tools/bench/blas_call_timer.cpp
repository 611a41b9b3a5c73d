// Wall time spent in the host's dense calls, per process: an LD_PRELOAD library that wraps the
// float calls tessel::blas makes — LAPACK's ssytrd_, sstedc_ and slarft_ (kernels/syevd.cpp's
// eigensolver stages; ssyevd_ for builds before it), CBLAS's cblas_sgemm, cblas_ssyrk and
// cblas_strmm (kernels/blas.cpp's products, and the eigensolver's back-transformation) — forwards each
// to the real one and prints the totals on exit. It answers "how much of this step is the
// eigensolver, and which stage" where perf cannot unwind through OpenBLAS. Not built by CMake:
//
//   g++ -O2 -shared -fPIC tools/bench/blas_call_timer.cpp -o /tmp/blas_call_timer.so -ldl
//   export LD_PRELOAD=/tmp/blas_call_timer.so OMP_NUM_THREADS=1
//   bench=build/bench/bin/tessel_bench_shampoo
//   $bench --benchmark_filter='BM_ShampooStep/1/' --benchmark_min_time=0.01
//
// (one warm-up step and one timed step: halve the totals for one step). Workspace queries
// (lwork = -1) are not counted. The eigensolver's back-transformation is its cblas_strmm and
// slarft_ calls and two cblas_sgemm calls per block of 64 reflectors, counted with the others.
#include <dlfcn.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <initializer_list>

namespace {

struct Total {
  char const* name;
  double seconds = 0;
  long calls = 0;
};
Total syevd{"ssyevd_"}, sytrd{"ssytrd_"}, stedc{"sstedc_"}, larft{"slarft_"}, gemm{"cblas_sgemm"},
    syrk{"cblas_ssyrk"}, trmm{"cblas_strmm"};

template <class F>
F real(char const* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

template <class Call>
void timed(Total& total, bool counted, Call const& call) {
  auto const start = std::chrono::steady_clock::now();
  call();
  if (!counted) return;
  total.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++total.calls;
}

struct Report {
  ~Report() {
    for (Total const* t : {&syevd, &sytrd, &stedc, &larft, &gemm, &syrk, &trmm})
      std::fprintf(stderr, "blas_call_timer: %-12s %6ld calls %9.3f s\n", t->name, t->calls,
                   t->seconds);
  }
} report;

}  // namespace

extern "C" {

using Syevd = void (*)(char const*, char const*, int const*, float*, int const*, float*, float*,
                       int const*, int*, int const*, int*, std::size_t, std::size_t);
void ssyevd_(char const* jobz, char const* uplo, int const* n, float* a, int const* lda, float* w,
             float* work, int const* lwork, int* iwork, int const* liwork, int* info,
             std::size_t jobz_len, std::size_t uplo_len) {
  static Syevd const f = real<Syevd>("ssyevd_");
  timed(syevd, *lwork != -1,
        [&] { f(jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info, jobz_len, uplo_len); });
}

using Sytrd = void (*)(char const*, int const*, float*, int const*, float*, float*, float*, float*,
                       int const*, int*, std::size_t);
void ssytrd_(char const* uplo, int const* n, float* a, int const* lda, float* d, float* e,
             float* tau, float* work, int const* lwork, int* info, std::size_t uplo_len) {
  static Sytrd const f = real<Sytrd>("ssytrd_");
  timed(sytrd, *lwork != -1, [&] { f(uplo, n, a, lda, d, e, tau, work, lwork, info, uplo_len); });
}

using Stedc = void (*)(char const*, int const*, float*, float*, float*, int const*, float*,
                       int const*, int*, int const*, int*, std::size_t);
void sstedc_(char const* compz, int const* n, float* d, float* e, float* z, int const* ldz,
             float* work, int const* lwork, int* iwork, int const* liwork, int* info,
             std::size_t compz_len) {
  static Stedc const f = real<Stedc>("sstedc_");
  timed(stedc, *lwork != -1,
        [&] { f(compz, n, d, e, z, ldz, work, lwork, iwork, liwork, info, compz_len); });
}

using Larft = void (*)(char const*, char const*, int const*, int const*, float*, int const*,
                       float const*, float*, int const*, std::size_t, std::size_t);
void slarft_(char const* direct, char const* storev, int const* n, int const* k, float* v,
             int const* ldv, float const* tau, float* t, int const* ldt, std::size_t direct_len,
             std::size_t storev_len) {
  static Larft const f = real<Larft>("slarft_");
  timed(larft, true, [&] { f(direct, storev, n, k, v, ldv, tau, t, ldt, direct_len, storev_len); });
}

using Gemm = void (*)(int, int, int, int, int, int, float, float const*, int, float const*, int,
                      float, float*, int);
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, float const* a,
                 int lda, float const* b, int ldb, float beta, float* c, int ldc) {
  static Gemm const f = real<Gemm>("cblas_sgemm");
  timed(gemm, true, [&] { f(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
}

using Syrk = void (*)(int, int, int, int, int, float, float const*, int, float, float*, int);
void cblas_ssyrk(int order, int uplo, int trans, int n, int k, float alpha, float const* a, int lda,
                 float beta, float* c, int ldc) {
  static Syrk const f = real<Syrk>("cblas_ssyrk");
  timed(syrk, true, [&] { f(order, uplo, trans, n, k, alpha, a, lda, beta, c, ldc); });
}

using Trmm = void (*)(int, int, int, int, int, int, int, float, float const*, int, float*, int);
void cblas_strmm(int order, int side, int uplo, int trans, int diag, int m, int n, float alpha,
                 float const* a, int lda, float* b, int ldb) {
  static Trmm const f = real<Trmm>("cblas_strmm");
  timed(trmm, true, [&] { f(order, side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb); });
}

}  // extern "C"
