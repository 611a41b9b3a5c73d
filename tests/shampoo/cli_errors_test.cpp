// The `tessel shampoo` input checks the other CLI tests do not reach: each run must exit with
// status 1 and one sentence on stderr, nothing on stdout and no output file, whether the library,
// the CLI or CLI11's parser found the error. Like cli_test.cpp, the tests run the CLI of the same
// build (<build>/bin/tessel, e.g. build/default/bin/tessel) and skip, saying so, when it has not
// been built.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <sys/wait.h>

#include <tessel/io/npy.hpp>

#include "io/io_test_support.hpp"

namespace {

using namespace tessel;
using test_support::TempDir;

std::filesystem::path cli() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() / "bin" /
         "tessel";
}

// Runs the CLI and returns its stderr after checking the failure contract.
std::string failure_of(TempDir const& dir, std::string const& args,
                       std::filesystem::path const& out) {
  auto const err_file = dir / "stderr.txt";
  std::string const command = cli().string() + " " + args + " 2>" + err_file.string();
  FILE* pipe = popen(command.c_str(), "r");
  std::string stdout_text;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) stdout_text += buffer.data();
  int const status = pclose(pipe);
  std::ifstream in(err_file);
  std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << args << ": status " << status;
  EXPECT_EQ(stdout_text, "") << args;
  EXPECT_FALSE(std::filesystem::exists(out)) << args << " wrote " << out;
  return err;
}

#define REQUIRE_TESSEL_CLI()                                 \
  if (!std::filesystem::exists(cli()))                       \
  GTEST_SKIP() << "the tessel CLI is not built at " << cli() \
               << "; build it (cmake --build build/default --target tessel_cli) to run this test"

template <class T>
std::filesystem::path matrix(TempDir const& dir, std::string const& name, std::vector<T> values,
                             std::int64_t rows) {
  std::array<std::int64_t, 2> shape{rows, static_cast<std::int64_t>(values.size()) / rows};
  write_npy(dir / name, std::span<std::int64_t const>(shape), values);
  return dir / name;
}

TEST(ShampooCliErrors, InverseRootRejectsNonFloatNonFiniteNonSymmetricAndSingularMatrices) {
  REQUIRE_TESSEL_CLI();
  TempDir dir;
  auto const out = dir / "B.npy";
  auto args = [&](std::filesystem::path const& in, std::string const& extra = "") {
    return "shampoo inv-root --input " + in.string() + " --root 2 --out " + out.string() + extra;
  };
  auto const ints = matrix<std::int32_t>(dir, "I.npy", {1, 0, 0, 1}, 2);
  EXPECT_EQ(failure_of(dir, args(ints), out),
            "tessel: " + ints.string() + " holds i32 values; inv-root reads f32 or f64.\n");
  auto const nan = matrix<double>(dir, "N.npy", {1, 0, std::nan(""), 1}, 2);
  EXPECT_EQ(
      failure_of(dir, args(nan), out),
      "tessel: " + nan.string() + " has the value nan at (1, 0); the matrix must be finite.\n");
  auto const skew = matrix<float>(dir, "S.npy", {1, 2, 3, 1}, 2);
  EXPECT_EQ(failure_of(dir, args(skew), out),
            "tessel: " + skew.string() + " is not symmetric: (0, 1) differs from (1, 0).\n");
  // Finite and symmetric, but singular: with the default epsilon 0 its inverse root is Inf.
  auto const singular = matrix<float>(dir, "Z.npy", {0, 0, 0, 4}, 2);
  EXPECT_EQ(failure_of(dir, args(singular), out),
            "tessel: the inverse root of " + singular.string() +
                " failed: the inverse root has NaN or Inf values.\n");
  auto const good = matrix<float>(dir, "G.npy", {1, 0, 0, 4}, 2);
  EXPECT_EQ(failure_of(dir, args(good, " --method newton"), out),
            "tessel: --method must be eigen or coupled-newton, got \"newton\".\n");
}

TEST(ShampooCliErrors, RunRejectsBadParametersAndOptions) {
  REQUIRE_TESSEL_CLI();
  TempDir dir;
  auto const out = dir / "W1.npy";
  auto const w = matrix<float>(dir, "W.npy", std::vector<float>(6, 0.0f), 2);
  std::array<std::int64_t, 3> gs{1, 2, 3};
  write_npy(dir / "G.npy", std::span<std::int64_t const>(gs), std::vector<float>(6, 0.0f));
  auto args = [&](std::filesystem::path const& param, std::string const& extra = "") {
    return "shampoo run --param " + param.string() + " --grads " + (dir / "G.npy").string() +
           " --out " + out.string() + extra;
  };
  EXPECT_EQ(failure_of(dir, args(w, " --weight-decay-type l1"), out),
            "tessel: --weight-decay-type must be decoupled, l2, corrected or independent, got "
            "\"l1\".\n");
  auto const ints = matrix<std::int64_t>(dir, "WI.npy", std::vector<std::int64_t>(6, 0), 2);
  EXPECT_EQ(
      failure_of(dir, args(ints), out),
      "tessel: " + ints.string() + " holds i64 values; shampoo run reads f32 or f64 parameters.\n");
  std::vector<std::int64_t> rank9(9, 1);
  write_npy(dir / "W9.npy", std::span<std::int64_t const>(rank9), std::vector<float>(1, 0.0f));
  EXPECT_EQ(failure_of(dir, args(dir / "W9.npy"), out),
            "tessel: " + (dir / "W9.npy").string() +
                " has rank 9; Shampoo takes parameters of rank <= 8.\n");
  EXPECT_EQ(
      failure_of(dir, args(w, " --preconditioner eigenvalue-corrected --eigendecomposition lu"),
                 out),
      "tessel: --eigendecomposition must be eigh or qr, got \"lu\".\n");
  EXPECT_EQ(failure_of(dir,
                       args(w,
                            " --preconditioner eigenvalue-corrected"
                            " --eigendecomposition-tolerance 2"),
                       out),
            "tessel: eigendecomposition tolerance must be in [0, 1], got 2.\n");
  EXPECT_EQ(failure_of(dir, args(w, " --eigendecomposition qr --qr-max-iterations -2"), out),
            "tessel: eigendecomposition max_iterations must be >= 0, got -2.\n");
}

TEST(ShampooCliErrors, CommandLineMistakesExitOneWithOneSentence) {
  // CLI11's errors exit 1 like every other (not CLI11's 106 for a missing option, 109 for an
  // unexpected argument), as one sentence pointing to the command's help.
  REQUIRE_TESSEL_CLI();
  TempDir dir;
  auto const out = dir / "W1.npy";
  auto const w = matrix<float>(dir, "W.npy", std::vector<float>(6, 0.0f), 2);
  std::array<std::int64_t, 3> gs{1, 2, 3};
  write_npy(dir / "G.npy", std::span<std::int64_t const>(gs), std::vector<float>(6, 0.0f));
  std::string const files = " --param " + w.string() + " --grads " + (dir / "G.npy").string();
  EXPECT_EQ(failure_of(dir, "shampoo run" + files, out),
            "tessel: --out is required; see tessel shampoo run --help.\n");
  EXPECT_EQ(failure_of(dir, "shampoo run" + files + " --out " + out.string() + " --lr", out),
            "tessel: --lr needs a value; see tessel shampoo run --help.\n");
  EXPECT_EQ(failure_of(dir, "shampoo run" + files + " --out " + out.string() + " --bogus", out),
            "tessel: The following argument was not expected: --bogus; see tessel shampoo run "
            "--help.\n");
  EXPECT_EQ(failure_of(dir, "shampoo run" + files + " --out " + out.string() + " --lr fast", out),
            "tessel: --lr: \"fast\" is not a number.\n");
  EXPECT_EQ(
      failure_of(dir, "shampoo inv-root --input " + w.string() + " --out " + out.string(), out),
      "tessel: --root is required; see tessel shampoo inv-root --help.\n");
}

}  // namespace
