// The `tessel shampoo` commands on .npy files: inv-root of diag(1, 4), `run` equal bit for bit to
// the library with the same options (the cross-check path against PyTorch), its state file, and
// error sentences. The tests run the CLI of the same build (<build>/bin/tessel, e.g.
// build/default/bin/tessel) and skip, saying so, when it has not been built.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <tessel/io/npy.hpp>
#include <tessel/shampoo/checkpoint.hpp>
#include <tessel/shampoo/param_groups.hpp>

#include "io/io_test_support.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using test_support::TempDir;

std::filesystem::path cli_path() {
  auto exe = std::filesystem::canonical("/proc/self/exe");
  return exe.parent_path().parent_path() / "bin" / "tessel";
}

struct Result {
  int status;
  std::string out, err;
};

Result run_cli(TempDir const& dir, std::string const& args) {
  auto err_file = dir / "stderr.txt";
  std::string command = cli_path().string() + " " + args + " 2>" + err_file.string();
  Result r{0, {}, {}};
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe)) r.out += buffer.data();
  r.status = pclose(pipe);
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

#define REQUIRE_CLI()                                             \
  if (!std::filesystem::exists(cli_path()))                       \
  GTEST_SKIP() << "the tessel CLI is not built at " << cli_path() \
               << "; build it (cmake --build build/default --target tessel_cli) to run this test"

TEST(ShampooCli, InverseRootOfDiagonalOneFour) {
  REQUIRE_CLI();
  TempDir dir;
  std::vector<double> a{1, 0, 0, 4};
  std::array<std::int64_t, 2> shape{2, 2};
  write_npy(dir / "A.npy", std::span<std::int64_t const>(shape), a);
  for (char const* method : {"eigen", "coupled-newton"}) {
    auto r =
        run_cli(dir, "shampoo inv-root --input " + (dir / "A.npy").string() +
                         " --root 2 --method " + method + " --out " + (dir / "B.npy").string());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\"root\": 2.0"), std::string::npos) << r.out;
    auto b = read_npy(dir / "B.npy").as<double>();
    EXPECT_NEAR(b[0], 1.0, 1e-6);
    EXPECT_NEAR(b[3], 0.5, 1e-6);
    EXPECT_NEAR(b[1], 0.0, 1e-6);
  }
}

TEST(ShampooCli, InverseRootErrors) {
  REQUIRE_CLI();
  TempDir dir;
  std::vector<float> a(6, 1.0f);
  std::array<std::int64_t, 2> shape{2, 3};
  write_npy(dir / "A.npy", std::span<std::int64_t const>(shape), a);
  auto r = run_cli(dir, "shampoo inv-root --input " + (dir / "A.npy").string() +
                            " --root 2 --out " + (dir / "B.npy").string());
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "tessel: " + (dir / "A.npy").string() +
                       " holds an array of shape (2,3); inv-root needs a square matrix.\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "B.npy"));
  r = run_cli(dir, "shampoo inv-root --input " + (dir / "A.npy").string() + " --root 0 --out " +
                       (dir / "B.npy").string());
  EXPECT_EQ(r.err, "tessel: the root must be > 0, got 0.\n");
}

TEST(ShampooCli, RunMatchesTheLibraryBitForBit) {
  REQUIRE_CLI();
  TempDir dir;
  std::mt19937 rng(11);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> w(30), g(4 * 30);
  for (auto& x : w) x = n(rng);
  for (auto& x : g) x = n(rng);
  std::array<std::int64_t, 2> ws{6, 5};
  std::array<std::int64_t, 3> gs{4, 6, 5};
  write_npy(dir / "W.npy", std::span<std::int64_t const>(ws), w);
  write_npy(dir / "G.npy", std::span<std::int64_t const>(gs), g);
  auto r = run_cli(dir, "shampoo run --param " + (dir / "W.npy").string() + " --grads " +
                            (dir / "G.npy").string() + " --out " + (dir / "W1.npy").string() +
                            " --save-state " + (dir / "state.safetensors").string() +
                            " --lr 0.05 --beta2 0.99 --momentum 0.5 --nesterov --weight-decay 0.01"
                            " --max-preconditioner-dim 4 --precondition-frequency 2"
                            " --grafting adam --factor-dtype f64");
  ASSERT_EQ(r.status, 0) << r.err;
  // What was written where: the parameter and, with --save-state, the state file.
  EXPECT_EQ(r.out, "{\"dtype\": \"f64\", \"out\": \"" + (dir / "W1.npy").string() +
                       "\", \"shape\": [6, 5], \"state\": \"" +
                       (dir / "state.safetensors").string() + "\", \"steps\": 4}\n");

  Options o;
  o.lr = 0.05;
  o.beta2 = 0.99;
  o.momentum = 0.5;
  o.use_nesterov = true;
  o.weight_decay = 0.01;
  o.precondition_frequency = 2;
  o.grafting = adam_grafting();
  o.factor_matrix_dtype = DType::f64;
  Shampoo<double> opt(
      make_plan(PlanOptions<index_t, index_t>{4, 1, 1}, std::vector<std::vector<index_t>>{{6, 5}}),
      o);
  for (int t = 0; t < 4; ++t)
    opt.step({std::span<double>(w)}, {std::span<double const>(g.data() + 30 * t, 30)});
  EXPECT_EQ(read_npy(dir / "W1.npy").as<double>(), w);
  EXPECT_TRUE(load_state(dir / "state.safetensors") == opt.state_dict());
}

TEST(ShampooCli, RunErrors) {
  REQUIRE_CLI();
  TempDir dir;
  std::vector<float> w(6, 0.0f), g(2 * 5, 0.0f);
  std::array<std::int64_t, 2> ws{2, 3};
  std::array<std::int64_t, 2> gs{2, 5};
  write_npy(dir / "W.npy", std::span<std::int64_t const>(ws), w);
  write_npy(dir / "G.npy", std::span<std::int64_t const>(gs), g);
  std::string const files = " --param " + (dir / "W.npy").string() + " --grads " +
                            (dir / "G.npy").string() + " --out " + (dir / "W1.npy").string();
  auto r = run_cli(dir, "shampoo run" + files);
  EXPECT_EQ(r.err, "tessel: " + (dir / "G.npy").string() +
                       " has shape (2,5) but must be [steps, *(2,3)] for the parameter in " +
                       (dir / "W.npy").string() + ".\n");
  r = run_cli(dir, "shampoo run" + files + " --beta1 1");
  EXPECT_EQ(r.err, "tessel: beta1 must be in [0, 1), got 1.\n");
  r = run_cli(dir, "shampoo run" + files + " --grafting lion");
  EXPECT_EQ(r.err,
            "tessel: --grafting must be none, sgd, adagrad, rmsprop or adam, got \"lion\".\n");
  r = run_cli(dir, "shampoo run" + files + " --use-bias-correction maybe");
  EXPECT_EQ(r.err, "tessel: --use-bias-correction must be true or false, got \"maybe\".\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "W1.npy"));
}

TEST(ShampooCli, SeveralParametersEveryOptionAndAResumedRunMatchTheLibrary) {
  // Two parameters in one optimizer, the options only the library had before (exponent override,
  // pseudo-inverse with its tolerances, retry, tolerated failures), four steps split 2 + 2 over
  // --save-state / --load-state: bit for bit the library's four uninterrupted steps.
  REQUIRE_CLI();
  TempDir dir;
  std::mt19937 rng(5);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> w0(12), w1(3), g0(4 * 12), g1(4 * 3);
  for (auto* v : {&w0, &w1, &g0, &g1})
    for (auto& x : *v) x = n(rng);
  auto save = [&](char const* name, std::vector<std::int64_t> shape, double const* data,
                  std::size_t count) {
    write_npy(dir / name, std::span<std::int64_t const>(shape),
              std::vector<double>(data, data + count));
  };
  save("W0.npy", {3, 4}, w0.data(), 12);
  save("W1.npy", {3}, w1.data(), 3);
  save("G0a.npy", {2, 3, 4}, g0.data(), 24);
  save("G0b.npy", {2, 3, 4}, g0.data() + 24, 24);
  save("G1a.npy", {2, 3}, g1.data(), 6);
  save("G1b.npy", {2, 3}, g1.data() + 6, 6);
  std::string const options =
      " --lr 0.1 --beta2 0.9 --epsilon 0 --pseudo-inverse --rank-rtol 1e-6 --rank-atol 1e-12"
      " --inverse-exponent-override 2:1=0 --inverse-exponent-override 1=0.25"
      " --retry-double-precision false --num-tolerated-failed-amortized-computations 5"
      " --max-preconditioner-dim 4 --factor-dtype f64";
  auto path = [&](char const* name) { return (dir / name).string(); };
  auto r = run_cli(dir, "shampoo run --param " + path("W0.npy") + " --param " + path("W1.npy") +
                            " --grads " + path("G0a.npy") + " --grads " + path("G1a.npy") +
                            " --out " + path("M0.npy") + " --out " + path("M1.npy") +
                            " --save-state " + path("half.safetensors") + options);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "{\"dtype\": \"f64\", \"out\": [\"" + path("M0.npy") + "\", \"" +
                       path("M1.npy") + "\"], \"shape\": [[3, 4], [3]], \"state\": \"" +
                       path("half.safetensors") + "\", \"steps\": 2}\n");
  r = run_cli(dir, "shampoo run --param " + path("M0.npy") + " --param " + path("M1.npy") +
                       " --grads " + path("G0b.npy") + " --grads " + path("G1b.npy") + " --out " +
                       path("F0.npy") + " --out " + path("F1.npy") + " --load-state " +
                       path("half.safetensors") + " --save-state " + path("end.safetensors") +
                       options);
  ASSERT_EQ(r.status, 0) << r.err;

  Options o;
  o.lr = 0.1;
  o.beta2 = 0.9;
  o.epsilon = 0.0;
  o.root.eigen.pseudo_inverse = true;
  o.root.eigen.rank_rtol = 1e-6;
  o.root.eigen.rank_atol = 1e-12;
  o.root.eigen.retry_double_precision = false;
  o.inverse_exponent_override[2] = std::map<index_t, double>{{1, 0.0}};
  o.inverse_exponent_override[1] = 0.25;
  o.num_tolerated_failed_amortized_computations = 5;
  o.factor_matrix_dtype = DType::f64;
  Shampoo<double> opt(make_plan(PlanOptions<index_t, index_t>{4, 1, 1},
                                std::vector<std::vector<index_t>>{{3, 4}, {3}}),
                      o);
  for (int t = 0; t < 4; ++t)
    opt.step({std::span<double>(w0), std::span<double>(w1)},
             {std::span<double const>(g0.data() + 12 * t, 12),
              std::span<double const>(g1.data() + 3 * t, 3)});
  EXPECT_EQ(read_npy(dir / "F0.npy").as<double>(), w0);
  EXPECT_EQ(read_npy(dir / "F1.npy").as<double>(), w1);
  EXPECT_TRUE(load_state(dir / "end.safetensors") == opt.state_dict());
}

TEST(ShampooCli, SymmetricPackingResumesFromAFullStateAndSavesPacked) {
  // Two steps with full factors, two more with --use-symmetric-packing from that state: the
  // library's steps (the same two, the state loaded into a packing optimizer, two more) bit for
  // bit, and its packed state file.
  REQUIRE_CLI();
  TempDir dir;
  std::mt19937 rng(11);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> w(12), g(4 * 12);
  for (auto* v : {&w, &g})
    for (auto& x : *v) x = n(rng);
  auto path = [&](char const* name) { return (dir / name).string(); };
  std::vector<std::int64_t> const param_shape{3, 4}, grads_shape{2, 3, 4};
  write_npy(dir / "W.npy", std::span<std::int64_t const>(param_shape), w);
  write_npy(dir / "Ga.npy", std::span<std::int64_t const>(grads_shape),
            std::vector<double>(g.begin(), g.begin() + 24));
  write_npy(dir / "Gb.npy", std::span<std::int64_t const>(grads_shape),
            std::vector<double>(g.begin() + 24, g.end()));
  std::string const options = " --lr 0.1 --beta2 0.9 --epsilon 1e-8 --factor-dtype f64";
  auto r = run_cli(dir, "shampoo run --param " + path("W.npy") + " --grads " + path("Ga.npy") +
                            " --out " + path("M.npy") + " --save-state " +
                            path("full.safetensors") + options);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli(dir, "shampoo run --param " + path("M.npy") + " --grads " + path("Gb.npy") +
                       " --out " + path("F.npy") + " --load-state " + path("full.safetensors") +
                       " --save-state " + path("packed.safetensors") + " --use-symmetric-packing" +
                       options);
  ASSERT_EQ(r.status, 0) << r.err;

  Options o;
  o.lr = 0.1;
  o.beta2 = 0.9;
  o.epsilon = 1e-8;
  o.factor_matrix_dtype = DType::f64;
  auto const plan = make_plan(PlanOptions<index_t, index_t>{1024, 1, 1},
                              std::vector<std::vector<index_t>>{{3, 4}});
  Shampoo<double> first(plan, o);
  for (int t = 0; t < 2; ++t)
    first.step({std::span<double>(w)}, {std::span<double const>(g.data() + 12 * t, 12)});
  o.use_symmetric_packing = true;
  Shampoo<double> opt(plan, o);
  opt.load_state_dict(first.state_dict());
  for (int t = 2; t < 4; ++t)
    opt.step({std::span<double>(w)}, {std::span<double const>(g.data() + 12 * t, 12)});
  EXPECT_EQ(read_npy(dir / "F.npy").as<double>(), w);
  auto const saved = load_state(dir / "packed.safetensors");
  EXPECT_TRUE(saved == opt.state_dict());
  // (3, 4) merges to one mode of 12: 78 elements packed.
  EXPECT_EQ(saved.at({"0", "block_0", "shampoo", "factor_matrices", "0"}).shape,
            (std::vector<index_t>{78}));
  EXPECT_EQ(saved.at({"0", "block_0", "shampoo", "inv_factor_matrices", "0"}).shape,
            (std::vector<index_t>{78}));
}

// `tessel shampoo run FLAGS` on a (4, 3) parameter (two modes, one 2-D block) for three steps of
// gradients drawn from `seed`, against the library's optimizer with `o`: the same parameters bit
// for bit, and the saved state equal to the optimizer's. Returns the saved state.
StateDict expect_run_matches_library(std::string const& flags, Options const& o, unsigned seed) {
  TempDir dir;
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> w(12), g(3 * 12);
  for (auto* v : {&w, &g})
    for (auto& x : *v) x = n(rng);
  std::array<std::int64_t, 2> ws{4, 3};
  std::array<std::int64_t, 3> gs{3, 4, 3};
  write_npy(dir / "W.npy", std::span<std::int64_t const>(ws), w);
  write_npy(dir / "G.npy", std::span<std::int64_t const>(gs), g);
  auto path = [&](char const* name) { return (dir / name).string(); };
  auto r = run_cli(dir, "shampoo run --param " + path("W.npy") + " --grads " + path("G.npy") +
                            " --out " + path("F.npy") + " --save-state " + path("s.safetensors") +
                            " " + flags + " --target-dims 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  Shampoo<double> opt(make_plan(PlanOptions<index_t, index_t>{1024, 2, 1},
                                std::vector<std::vector<index_t>>{{4, 3}}),
                      o);
  for (int t = 0; t < 3; ++t)
    opt.step({std::span<double>(w)}, {std::span<double const>(g.data() + 12 * t, 12)});
  if (r.status != 0) return {};
  EXPECT_EQ(read_npy(dir / "F.npy").as<double>(), w);
  StateDict state = load_state(dir / "s.safetensors");
  EXPECT_TRUE(state == opt.state_dict());
  return state;
}

TEST(ShampooCli, EigendecomposedKlShampooMatchesTheLibrary) {
  // --preconditioner eigendecomposed --kl-shampoo on a 2-D block (two modes, so KL's factor inputs
  // differ from the gradient): three steps with an amortized one in between, bit for bit the
  // library's, and the state with the eigendecomposition's keys.
  REQUIRE_CLI();
  Options o;
  o.preconditioner = PreconditionerType::eigendecomposed;
  o.kl_shampoo = true;
  o.beta2 = 0.9;
  o.epsilon = 1e-4;
  o.precondition_frequency = 2;
  o.factor_matrix_dtype = DType::f64;
  StateDict const state = expect_run_matches_library(
      "--preconditioner eigendecomposed --kl-shampoo --beta2 0.9 --epsilon 1e-4"
      " --precondition-frequency 2 --factor-dtype f64",
      o, 9);
  EXPECT_TRUE(state.contains({"0", "block_0", "shampoo", "factor_matrices_eigenvalues", "1"}));
}

TEST(ShampooCli, QrEigendecompositionMatchesTheLibrary) {
  // --preconditioner eigenvalue-corrected --eigendecomposition qr (DefaultSOAPConfig) with two QR
  // iterations and a tolerance: three steps bit for bit the library's, and the same state.
  REQUIRE_CLI();
  Options o;
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  o.root.eigendecomposition = {EigendecompositionMethod::qr, 0.01, 2};
  o.beta2 = 0.9;
  o.epsilon = 1e-6;
  o.factor_matrix_dtype = DType::f64;
  expect_run_matches_library(
      "--preconditioner eigenvalue-corrected --eigendecomposition qr --qr-max-iterations 2"
      " --eigendecomposition-tolerance 0.01 --beta2 0.9 --epsilon 1e-6 --factor-dtype f64",
      o, 13);
}

TEST(ShampooCli, IgnoredBasisChangeDimsMatchTheLibrary) {
  // --ignored-basis-change-dims 2=1: eigenvalue-corrected Shampoo rotates only the rows of the
  // 2-D block; three steps bit for bit the library's, and the state has one factor.
  REQUIRE_CLI();
  Options o;
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  o.ignored_basis_change_dims[2] = {1};
  o.beta2 = 0.9;
  o.epsilon = 1e-6;
  o.factor_matrix_dtype = DType::f64;
  StateDict const state = expect_run_matches_library(
      "--preconditioner eigenvalue-corrected --ignored-basis-change-dims 2=1 --beta2 0.9"
      " --epsilon 1e-6 --factor-dtype f64",
      o, 19);
  EXPECT_TRUE(state.contains({"0", "block_0", "shampoo", "factor_matrices_eigenvectors", "0"}));
  EXPECT_FALSE(state.contains({"0", "block_0", "shampoo", "factor_matrices_eigenvectors", "1"}));
}

TEST(ShampooCli, SvdOrthogonalizationMatchesTheLibrary) {
  // --orthogonalization svd --svd-scale-by-nuclear-norm (SVDOrthogonalizationConfig with
  // scale_by_nuclear_norm) on the (4, 3) block, with momentum: three steps bit for bit the
  // library's, and the same state.
  REQUIRE_CLI();
  Options o;
  o.preconditioner = PreconditionerType::spectral_descent;
  o.orthogonalization = OrthogonalizationMethod::svd;
  o.svd.scale_by_nuclear_norm = true;
  o.momentum = 0.5;
  expect_run_matches_library(
      "--preconditioner spectral-descent --orthogonalization svd --svd-scale-by-nuclear-norm"
      " --momentum 0.5",
      o, 17);
}

TEST(ShampooCli, ParameterGroupsMatchTheLibrary) {
  // --group: parameter 0 with spectral descent on 2-D blocks and its own lr, parameter 2 with
  // sign descent, parameter 1 (named by no group) with the run's options; bit for bit the
  // library's GroupedShampoo, the state keyed by the parameters' own indices; its errors.
  REQUIRE_CLI();
  TempDir dir;
  std::mt19937 rng(11);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> w0(12), w1(5), w2(6), g0(2 * 12), g1(2 * 5), g2(2 * 6);
  for (auto* v : {&w0, &w1, &w2, &g0, &g1, &g2})
    for (auto& x : *v) x = n(rng);
  auto save = [&](char const* name, std::vector<std::int64_t> shape, std::vector<double> const& v) {
    write_npy(dir / name, std::span<std::int64_t const>(shape), v);
  };
  save("W0.npy", {4, 3}, w0);
  save("W1.npy", {5}, w1);
  save("W2.npy", {2, 3}, w2);
  save("G0.npy", {2, 4, 3}, g0);
  save("G1.npy", {2, 5}, g1);
  save("G2.npy", {2, 2, 3}, g2);
  auto path = [&](char const* name) { return (dir / name).string(); };
  std::string const files = "shampoo run --param " + path("W0.npy") + " --param " + path("W1.npy") +
                            " --param " + path("W2.npy") + " --grads " + path("G0.npy") +
                            " --grads " + path("G1.npy") + " --grads " + path("G2.npy") +
                            " --out " + path("F0.npy") + " --out " + path("F1.npy") + " --out " +
                            path("F2.npy") + " --factor-dtype f64 --beta2 0.9";
  auto r = run_cli(dir, files + " --save-state " + path("s.safetensors") +
                            " --group \"0 --preconditioner spectral-descent --target-dims 2 --lr "
                            "0.05\" --group \"2 --preconditioner sign-descent\"");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err,
            "tessel: warning: beta2 0.9, factor_matrix_dtype f64 have no effect with "
            "spectral descent, which keeps no factors.\n"
            "tessel: warning: beta2 0.9, factor_matrix_dtype f64 have no effect with sign "
            "descent, which keeps no factors.\n");
  Options base;
  base.beta2 = 0.9;
  base.factor_matrix_dtype = DType::f64;
  ParamGroup muon{{0}, base, 1024, 2}, sign{{2}, base, 1024, 1}, rest{{1}, base, 1024, 1};
  muon.options.preconditioner = PreconditionerType::spectral_descent;
  muon.options.lr = 0.05;
  sign.options.preconditioner = PreconditionerType::sign_descent;
  GroupedShampoo<double> opt({{4, 3}, {5}, {2, 3}}, {muon, sign, rest});
  for (std::size_t t = 0; t < 2; ++t)
    opt.step({std::span<double>(w0), std::span<double>(w1), std::span<double>(w2)},
             {std::span<double const>(g0.data() + 12 * t, 12),
              std::span<double const>(g1.data() + 5 * t, 5),
              std::span<double const>(g2.data() + 6 * t, 6)});
  EXPECT_EQ(read_npy(dir / "F0.npy").as<double>(), w0);
  EXPECT_EQ(read_npy(dir / "F1.npy").as<double>(), w1);
  EXPECT_EQ(read_npy(dir / "F2.npy").as<double>(), w2);
  EXPECT_TRUE(load_state(dir / "s.safetensors") == opt.state_dict());

  r = run_cli(dir, files + " --group \"0 --bogus 1\"");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.err,
            "tessel: --group \"0 --bogus 1\": The following arguments were not expected: "
            "1 --bogus.\n");
  r = run_cli(dir, files + " --group \"0,3\"");
  EXPECT_EQ(r.err, "tessel: parameter group 0 names parameter 3, but there are 3 parameters.\n");
  r = run_cli(dir, files + " --group 1 --group \"1 --lr 0.1\"");
  EXPECT_EQ(r.err,
            "tessel: parameter 1 is in parameter groups 0 and 1; every parameter belongs to "
            "exactly one group.\n");
  r = run_cli(dir, files + " --iterate-averaging ema");
  EXPECT_EQ(r.err,
            "tessel: --iterate-averaging must be none, generalized-primal or schedule-free, got "
            "\"ema\".\n");
  r = run_cli(dir, files + " --group \"0 --beta2 2\"");
  EXPECT_NE(r.err.find("beta2 must be in [0, 1], got 2."), std::string::npos) << r.err;
}

TEST(ShampooCli, OptionsWithoutEffectAreWarnedAndStillRun) {
  REQUIRE_CLI();
  TempDir dir;
  std::vector<float> w{0.5f, -0.3f}, g{1.0f, 2.0f};
  std::array<std::int64_t, 1> ws{2};
  std::array<std::int64_t, 2> gs{1, 2};
  write_npy(dir / "W.npy", std::span<std::int64_t const>(ws), w);
  write_npy(dir / "G.npy", std::span<std::int64_t const>(gs), g);
  auto r = run_cli(dir, "shampoo run --param " + (dir / "W.npy").string() + " --grads " +
                            (dir / "G.npy").string() + " --out " + (dir / "W1.npy").string() +
                            " --nesterov --grafting sgd --grafting-beta2 0.9 --beta2 0");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err,
            "tessel: warning: use_nesterov has no effect with momentum 0.\n"
            "tessel: warning: grafting beta2 0.9 has no effect with sgd grafting (rmsprop and "
            "adam use it).\n");
  EXPECT_TRUE(std::filesystem::exists(dir / "W1.npy"));
  EXPECT_EQ(r.out, "{\"dtype\": \"f32\", \"out\": \"" + (dir / "W1.npy").string() +
                       "\", \"shape\": [2], \"steps\": 1}\n");  // no state file, no "state"
}

TEST(ShampooCli, SeveralParameterAndOverrideErrors) {
  REQUIRE_CLI();
  TempDir dir;
  std::vector<float> w(6, 0.0f), g(12, 0.0f), g3(18, 0.0f);
  std::array<std::int64_t, 2> ws{2, 3};
  std::array<std::int64_t, 3> gs{2, 2, 3};
  std::array<std::int64_t, 3> g3s{3, 2, 3};
  write_npy(dir / "W.npy", std::span<std::int64_t const>(ws), w);
  write_npy(dir / "G.npy", std::span<std::int64_t const>(gs), g);
  write_npy(dir / "G3.npy", std::span<std::int64_t const>(g3s), g3);
  std::string const W = (dir / "W.npy").string(), G = (dir / "G.npy").string(),
                    G3 = (dir / "G3.npy").string(), out = (dir / "O.npy").string();
  auto r = run_cli(
      dir, "shampoo run --param " + W + " --param " + W + " --grads " + G + " --out " + out);
  EXPECT_EQ(r.err,
            "tessel: --param is given 2 times, --grads 1 and --out 1; give one --grads and one "
            "--out per --param, in the same order.\n");
  r = run_cli(dir, "shampoo run --param " + W + " --param " + W + " --grads " + G + " --grads " +
                       G3 + " --out " + out + " --out " + out + "2");
  EXPECT_EQ(r.err, "tessel: " + G3 + " holds 3 steps but " + G +
                       " holds 2; every parameter takes the same steps.\n");
  write_npy(dir / "W64.npy", std::span<std::int64_t const>(ws), std::vector<double>(6, 0.0));
  r = run_cli(dir, "shampoo run --param " + W + " --param " + (dir / "W64.npy").string() +
                       " --grads " + G + " --grads " + G + " --out " + out + " --out " + out + "2");
  EXPECT_EQ(r.err, "tessel: " + (dir / "W64.npy").string() + " holds f64 but " + W +
                       " holds f32; one run steps parameters of one dtype.\n");
  std::string const one = "shampoo run --param " + W + " --grads " + G + " --out " + out;
  r = run_cli(dir, one + " --inverse-exponent-override 2");
  EXPECT_EQ(r.err,
            "tessel: --inverse-exponent-override \"2\" must read ORDER=EXPONENT or "
            "ORDER:DIM=EXPONENT.\n");
  r = run_cli(dir, one + " --inverse-exponent-override 2=0.5 --inverse-exponent-override 2:0=1");
  EXPECT_EQ(r.err,
            "tessel: --inverse-exponent-override gives order 2 twice; give each order one "
            "ORDER=EXPONENT, or ORDER:DIM=EXPONENT items with distinct dimensions.\n");
  r = run_cli(dir, one + " --ignored-basis-change-dims 2");
  EXPECT_EQ(r.err,
            "tessel: --ignored-basis-change-dims \"2\" must read ORDER=DIM or "
            "ORDER=DIM,DIM,...\n");
  r = run_cli(dir, one + " --ignored-basis-change-dims 2=0 --ignored-basis-change-dims 2=1");
  EXPECT_EQ(r.err,
            "tessel: --ignored-basis-change-dims gives order 2 twice; list its dimensions in one "
            "ORDER=DIM,DIM,...\n");
  r = run_cli(dir, one + " --preconditioner muon");
  EXPECT_EQ(r.err,
            "tessel: --preconditioner must be shampoo, eigendecomposed, spectral-descent, "
            "sign-descent or eigenvalue-corrected, got \"muon\".\n");
  r = run_cli(dir, one + " --newton-schulz-coefficients 3,-3.2");
  EXPECT_EQ(r.err,
            "tessel: --newton-schulz-coefficients \"3,-3.2\" has 2 numbers; give three: a,b,c.\n");
  r = run_cli(dir, one + " --orthogonalization qr");
  EXPECT_EQ(r.err, "tessel: --orthogonalization must be newton-schulz or svd, got \"qr\".\n");
  r = run_cli(dir, one + " --load-state " + (dir / "missing.safetensors").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("missing.safetensors"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "O.npy"));
}

}  // namespace
