// Wall time spent in the host's dense calls, per process: an LD_PRELOAD library that wraps
// LAPACK's ssyevd_ and CBLAS's cblas_sgemm / cblas_ssyrk (the calls src/blas.cpp makes for float),
// forwards each to the real one and prints the totals on exit. It answers "how much of this step
// is the eigensolver" where perf cannot unwind through OpenBLAS. Not built by CMake:
//
//   g++ -O2 -shared -fPIC tools/bench/blas_call_timer.cpp -o /tmp/blas_call_timer.so -ldl
//   export LD_PRELOAD=/tmp/blas_call_timer.so OMP_NUM_THREADS=1
//   bench=build/bench/bin/tessel_bench_shampoo
//   $bench --benchmark_filter='BM_ShampooStep/1/' --benchmark_min_time=0.01
//
// (one warm-up step and one timed step: halve the totals for one step). Workspace queries
// (lwork = -1) are not counted.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <initializer_list>

namespace {

struct Total {
  char const* name;
  double seconds = 0;
  long calls = 0;
};
Total syevd{"ssyevd_"}, gemm{"cblas_sgemm"}, syrk{"cblas_ssyrk"};

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
    for (Total const* t : {&syevd, &gemm, &syrk})
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

}  // extern "C"
