// tessel::blas: the host BLAS calls behind exec::gemm and exec::syrk (declared in
// tessel/exec/dense/blas.hpp; exec::eigh's are in kernels/syevd.cpp), compiled once so that the BLAS's
// headers, which put names such as `bfloat16` in the global namespace, never reach a tessel user's
// translation unit.
#include <tessel/exec/dense/blas.hpp>

#include <cblas.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "cpu_vectors.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
// OpenBLAS's run-time choice of kernels, in its DYNAMIC_ARCH builds only (hence weak): quit
// forgets the chosen core, init chooses again, reading OPENBLAS_CORETYPE first.
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}
#endif

namespace tessel::exec::detail {

namespace {

int as_int(index_t x) {
  return static_cast<int>(x);
}
CBLAS_TRANSPOSE transpose_if(bool t) {
  return t ? CblasTrans : CblasNoTrans;
}

#if defined(__x86_64__) && defined(__GNUC__)
// The widest vectors an OpenBLAS core's kernels use: 0 SSE, 1 AVX, 2 AVX2 with FMA, 3 AVX-512;
// -1 for a name not listed (a newer OpenBLAS's core, which tessel leaves alone).
int core_vector_level(std::string_view core) {
  struct Core {
    std::string_view name;
    int level;
  };
  static constexpr Core cores[] = {
      {"katmai", 0},        {"coppermine", 0}, {"northwood", 0},   {"prescott", 0},
      {"banias", 0},        {"atom", 0},       {"core2", 0},       {"penryn", 0},
      {"dunnington", 0},    {"nehalem", 0},    {"opteron", 0},     {"opteron_sse3", 0},
      {"barcelona", 0},     {"nano", 0},       {"bobcat", 0},      {"sandybridge", 1},
      {"bulldozer", 1},     {"piledriver", 1}, {"steamroller", 1}, {"haswell", 2},
      {"excavator", 2},     {"zen", 2},        {"skylakex", 3},    {"cooperlake", 3},
      {"sapphirerapids", 3}};
  std::string name(core);
  for (char& ch : name) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  for (Core const& c : cores)
    if (name == c.name) return c.level;
  return -1;
}

// The OpenBLAS core whose kernels use the vectors of cpu_vector_level()'s `level`; null for SSE.
char const* core_of_level(int level) {
  static constexpr char const* cores[] = {nullptr, "Sandybridge", "Haswell", "SkylakeX"};
  return cores[level];
}

// Debian 12's OpenBLAS (0.3.21) predates Sapphire Rapids: on it and on Emerald Rapids its CPU
// detection finds no core it knows and falls back to its generic SSE3 kernels ("Prescott"),
// which made FLCE 4.8x slower than its AVX-512 ones on such a CPU (8987 against 1872 ms,
// docs/benchmarks.md). When OpenBLAS's kernels use narrower vectors than the CPU has and the
// user left OPENBLAS_CORETYPE unset, tessel has OpenBLAS choose again with the core that
// matches the CPU. It runs while the program loads (OpenBLAS, a shared library this one needs,
// is initialized first), on one thread, before any BLAS call. Quietly: tessel's command-line
// tools promise one line on stderr, and OPENBLAS_VERBOSE=2 shows both choices ("Core: ...").
void match_openblas_to_cpu() {
  if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return;
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  std::string const chosen = openblas_get_corename();
  int const level = core_vector_level(chosen);
  int const cpu = cpu_vector_level();
  char const* const core = core_of_level(cpu);
  if (level < 0 || core == nullptr || level >= cpu) return;
  if (setenv("OPENBLAS_CORETYPE", core, 1) != 0) return;
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE");
}

[[maybe_unused]] int const matched_at_load = (match_openblas_to_cpu(), 0);
#endif

}  // namespace

char const* blas_kernels() {
  return openblas_get_corename();
}

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

}  // namespace tessel::exec::detail
