// `tessel flce` round trips: inputs written with write_npy, the CLI run as a user would run it,
// its .npy outputs read back and compared with the float64 reference, and the line of JSON it
// prints saying what it wrote where; and its failures: one sentence on stderr, exit status 1,
// nothing on stdout and no output file left behind.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include <tessel/io/npy.hpp>

#include "support/temp_dir.hpp"

#include "flce/reference.hpp"

#ifndef TESSEL_CLI_PATH
#error "TESSEL_CLI_PATH must name the tessel executable"
#endif

namespace {

namespace fs = std::filesystem;
using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;

class FlceCli : public ::testing::Test {
 protected:
  std::string path(std::string const& name) const { return (dir_ / name).string(); }

  template <class T>
  std::string write(std::string const& name, std::vector<std::int64_t> shape,
                    std::vector<double> const& values) {
    std::vector<T> v(values.begin(), values.end());
    write_npy(path(name), shape, v);
    return path(name);
  }

  // Runs tessel with `args`; returns its exit status (-1 if it did not exit), stderr in `err`,
  // stdout in stdout.txt (read_text("stdout.txt")).
  int run(std::string const& args, std::string& err) {
    std::string const err_file = path("stderr.txt");
    std::string const command =
        std::string(TESSEL_CLI_PATH) + " " + args + " > " + path("stdout.txt") + " 2> " + err_file;
    int const status = std::system(command.c_str());
    std::ifstream in(err_file);
    std::stringstream s;
    s << in.rdbuf();
    err = s.str();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::vector<double> read(std::string const& name, std::vector<std::int64_t> expected_shape,
                           DType expected_dtype) {
    NpyArray const a = read_npy(path(name));
    EXPECT_EQ(a.shape, expected_shape) << name;
    EXPECT_EQ(a.dtype, expected_dtype) << name;
    return a.as<double>();
  }

  // Files in the directory other than the inputs and the captured streams.
  void write_text(std::string const& name, std::string const& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::string read_text(std::string const& name) const {
    std::ifstream in(dir_ / name, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::vector<std::string> outputs_present() const {
    std::vector<std::string> out;
    for (auto const& e : fs::directory_iterator(dir_.path())) {
      std::string const n = e.path().filename().string();
      if (n.rfind("out_", 0) == 0) out.push_back(n);
    }
    return out;
  }

  tessel::test::TempDir const dir_;
};

::testing::AssertionResult all_close(std::vector<double> const& got,
                                     std::vector<double> const& want, double atol, double rtol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " vs " << want.size() << " elements";
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

double rounded(double x, std::string const& dtype) {
  if (dtype == "f64") return x;
  float const f = static_cast<float>(x);
  if (dtype == "bf16") return static_cast<double>(static_cast<float>(bfloat16(f)));
  if (dtype == "f16") return static_cast<double>(static_cast<float>(half(f)));
  return static_cast<double>(f);
}

TEST_F(FlceCli, RoundTripsEveryDtypeAndReductionWithAllOptions) {
  Problem p = random_problem(37, 12, 50, 31u, true, true, 0.2);
  std::string const x = write<double>("x.npy", {37, 12}, p.x);
  std::string const w = write<double>("w.npy", {50, 12}, p.w);
  std::string const b = write<double>("b.npy", {50}, p.bias);
  std::string const cw = write<double>("cw.npy", {50}, p.class_weights);
  write_npy(path("y.npy"), std::vector<std::int64_t>{37}, p.target);
  struct Tol {
    char const* dtype;
    double atol, rtol;
  };
  for (Tol tol : {Tol{"f64", 1e-10, 1e-9}, Tol{"f32", 1e-5, 5e-4}, Tol{"f16", 1e-3, 1e-2},
                  Tol{"bf16", 5e-3, 5e-2}}) {
    for (Reduction r : {Reduction::mean, Reduction::sum, Reduction::none}) {
      std::string const red(reduction_name(r));
      SCOPED_TRACE(std::string(tol.dtype) + " " + red);
      std::string err;
      int const status =
          run("flce --input " + x + " --weight " + w + " --target " + path("y.npy") + " --bias " +
                  b + " --class-weights " + cw + " --reduction " + red +
                  " --label-smoothing 0.1 --lse-square-scale 0.01 --softcap 3 --grad-output 0.5" +
                  " --temperature 0.8 --entropy-bonus 0.1 --dtype " + tol.dtype + " --loss-out " +
                  path("out_loss.npy") + " --z-loss-out " + path("out_z.npy") +
                  " --grad-input-out " + path("out_dx.npy") + " --grad-weight-out " +
                  path("out_dw.npy") + " --grad-bias-out " + path("out_db.npy") + " --lse-out " +
                  path("out_lse.npy") + " --target-logprob-out " + path("out_logp.npy") +
                  " --entropy-out " + path("out_entropy.npy") + " --argmax-out " +
                  path("out_argmax.npy") + " --accuracy-out " + path("out_accuracy.npy"),
              err);
      ASSERT_EQ(status, 0) << err;
      Problem q = p;
      for (auto* v : {&q.x, &q.w, &q.bias, &q.class_weights})
        for (auto& e : *v) e = rounded(e, tol.dtype);
      ReferenceOptions o;
      o.reduction = r;
      o.label_smoothing = 0.1;
      o.lse_square_scale = 0.01;
      o.softcap = 3;
      o.temperature = 0.8;
      o.entropy_bonus = 0.1;
      o.grad_output = 0.5;
      ReferenceResult const want = reference(q, o);
      DType const out = std::string(tol.dtype) == "f64" ? DType::f64 : DType::f32;
      std::vector<std::int64_t> const loss_shape =
          r == Reduction::none ? std::vector<std::int64_t>{37} : std::vector<std::int64_t>{};
      EXPECT_TRUE(all_close(read("out_loss.npy", loss_shape, out), want.loss, tol.atol, tol.rtol));
      EXPECT_TRUE(all_close(read("out_z.npy", loss_shape, out), want.z_loss, tol.atol, tol.rtol));
      EXPECT_TRUE(
          all_close(read("out_dx.npy", {37, 12}, out), want.grad_input, tol.atol, tol.rtol));
      EXPECT_TRUE(
          all_close(read("out_dw.npy", {50, 12}, out), want.grad_weight, tol.atol, tol.rtol));
      EXPECT_TRUE(all_close(read("out_db.npy", {50}, out), want.grad_bias, tol.atol, tol.rtol));
      EXPECT_TRUE(all_close(read("out_lse.npy", {37}, out), want.lse, tol.atol, tol.rtol));
      EXPECT_TRUE(
          all_close(read("out_logp.npy", {37}, out), want.target_logprob, tol.atol, tol.rtol));
      EXPECT_TRUE(all_close(read("out_entropy.npy", {37}, out), want.entropy, tol.atol, tol.rtol));
      // The argmax as int64: the reference's class, or a near-tie rounding may decide; the
      // accuracy is then exactly what that argmax gives.
      std::vector<double> const argmax = read("out_argmax.npy", {37}, DType::i64);
      double hits = 0, kept = 0;
      std::vector<double> per_row;
      for (std::size_t i = 0; i < argmax.size(); ++i) {
        auto const a = static_cast<std::int64_t>(argmax[i]), m = want.argmax[i];
        if (a != m) {
          ASSERT_TRUE(a >= 0 && a < 50 && m >= 0) << "row " << i << ": " << a << " vs " << m;
          double const top = want.logits[i * 50 + m];
          EXPECT_LE(top - want.logits[i * 50 + a], tol.atol + tol.rtol * std::abs(top))
              << "row " << i;
        }
        bool const ignored = p.target[i] == -100;
        per_row.push_back(!ignored && a == p.target[i] ? 1.0 : 0.0);
        hits += per_row.back();
        kept += ignored ? 0 : 1;
      }
      std::vector<double> const accuracy = r == Reduction::none  ? per_row
                                           : r == Reduction::sum ? std::vector<double>{hits}
                                                                 : std::vector<double>{hits / kept};
      EXPECT_TRUE(all_close(read("out_accuracy.npy", loss_shape, out), accuracy, 1e-7, 1e-7));
    }
  }
}

TEST_F(FlceCli, TakesFloat32InputsAndAPerRowGradOutputFile) {
  Problem const p = random_problem(20, 6, 15, 32u, false, false, 0.1);
  std::vector<double> dy;
  for (int i = 0; i < 20; ++i) dy.push_back(0.1 * i - 1.0);
  std::string const x = write<float>("x.npy", {20, 6}, p.x);
  std::string const w = write<float>("w.npy", {15, 6}, p.w);
  std::string const g = write<float>("dy.npy", {20}, dy);
  write_npy(path("y.npy"), std::vector<std::int64_t>{20}, p.target);
  std::string err;
  ASSERT_EQ(
      run("flce --input " + x + " --weight " + w + " --target " + path("y.npy") +
              " --reduction none --grad-output " + g + " --shift-sequence-length 5" +
              " --loss-out " + path("out_loss.npy") + " --grad-weight-out " + path("out_dw.npy"),
          err),
      0)
      << err;
  Problem q = p;
  for (auto* v : {&q.x, &q.w})
    for (auto& e : *v) e = rounded(e, "f32");
  ReferenceOptions o;
  o.reduction = Reduction::none;
  o.shift_sequence_length = 5;  // four sequences of five rows
  for (double d : dy) o.grad_output_rows.push_back(rounded(d, "f32"));
  ReferenceResult const want = reference(q, o);
  EXPECT_TRUE(all_close(read("out_loss.npy", {20}, DType::f32), want.loss, 1e-5, 5e-4));
  EXPECT_TRUE(all_close(read("out_dw.npy", {15, 6}, DType::f32), want.grad_weight, 1e-5, 5e-4));
  EXPECT_EQ(outputs_present().size(), 2u);  // no grad_input asked for, none written
}

TEST_F(FlceCli, PrintsWhatItWroteWhereAsOneLineOfJson) {
  Problem const p = random_problem(8, 4, 6, 34u);
  std::string const x = write<double>("x.npy", {8, 4}, p.x);
  std::string const w = write<double>("w.npy", {6, 4}, p.w);
  write_npy(path("y.npy"), std::vector<std::int64_t>{8}, p.target);
  std::string err;
  ASSERT_EQ(run("flce --input " + x + " --weight " + w + " --target " + path("y.npy") +
                    " --reduction sum --dtype f64 --loss-out " + path("out_loss.npy") +
                    " --grad-input-out " + path("out_dx.npy"),
                err),
            0)
      << err;
  EXPECT_EQ(err, "");
  EXPECT_EQ(read_text("stdout.txt"),
            "{\"bt\": 8, \"dtype\": \"f64\", \"hidden\": 4, \"out\": "
            "{\"grad_input\": \"" +
                path("out_dx.npy") + "\", \"loss\": \"" + path("out_loss.npy") +
                "\"}, \"reduction\": \"sum\", \"vocab\": 6}\n");
}

TEST_F(FlceCli, WritesPerTokenOutputsWithoutALossFile) {
  // --loss-out is optional: log-probabilities and entropies alone, as an RL rollout wants them.
  Problem const p = random_problem(9, 5, 7, 35u);
  std::string const x = write<double>("x.npy", {9, 5}, p.x);
  std::string const w = write<double>("w.npy", {7, 5}, p.w);
  write_npy(path("y.npy"), std::vector<std::int64_t>{9}, p.target);
  std::string err;
  ASSERT_EQ(run("flce --input " + x + " --weight " + w + " --target " + path("y.npy") +
                    " --temperature 0.7 --dtype f64 --target-logprob-out " + path("out_logp.npy") +
                    " --entropy-out " + path("out_entropy.npy"),
                err),
            0)
      << err;
  auto present = outputs_present();
  std::sort(present.begin(), present.end());
  EXPECT_EQ(present, (std::vector<std::string>{"out_entropy.npy", "out_logp.npy"}));
  ReferenceOptions o;
  o.temperature = 0.7;
  ReferenceResult const want = reference(p, o);
  EXPECT_TRUE(all_close(read("out_logp.npy", {9}, DType::f64), want.target_logprob, 1e-10, 1e-9));
  EXPECT_TRUE(all_close(read("out_entropy.npy", {9}, DType::f64), want.entropy, 1e-10, 1e-9));
  EXPECT_EQ(read_text("stdout.txt"),
            "{\"bt\": 9, \"dtype\": \"f64\", \"hidden\": 5, \"out\": "
            "{\"entropy\": \"" +
                path("out_entropy.npy") + "\", \"target_logprob\": \"" + path("out_logp.npy") +
                "\"}, \"reduction\": \"mean\", \"vocab\": 7}\n");
}

// What io's reader says about a file, for the CLI errors that pass it on.
std::string read_npy_error(std::string const& file) {
  try {
    read_npy(file);
  } catch (Error const& e) {
    return e.what();
  }
  return "no error";
}

// Each failure: a non-zero exit, one line on stderr matching `message`, no output file, and a
// pre-existing output file left as it was.
class FlceCliErrors : public FlceCli {
 protected:
  void SetUp() override {
    FlceCli::SetUp();
    Problem const p = random_problem(8, 4, 6, 33u);
    x_ = write<double>("x.npy", {8, 4}, p.x);
    w_ = write<double>("w.npy", {6, 4}, p.w);
    write_npy(path("y.npy"), std::vector<std::int64_t>{8}, p.target);
    std::ofstream(path("out_loss.npy")) << "old";
  }
  void expect_failure(std::string const& args, std::string const& message) {
    std::string err;
    int const status = run("flce " + args + " --loss-out " + path("out_loss.npy") +
                               " --grad-input-out " + path("out_dx.npy"),
                           err);
    EXPECT_EQ(status, 1);
    EXPECT_EQ(err, "tessel: " + message + "\n");
    EXPECT_EQ(read_text("stdout.txt"), "");
    EXPECT_EQ(outputs_present(), std::vector<std::string>{"out_loss.npy"});
    std::ifstream in(path("out_loss.npy"));
    std::string content;
    in >> content;
    EXPECT_EQ(content, "old");
  }
  std::string x_, w_;
};

TEST_F(FlceCliErrors, BadFilesAndShapesAreOneSentenceAndWriteNothing) {
  std::ofstream(path("garbage.npy")) << "this is not a numpy file at all";
  expect_failure(
      "--input " + path("garbage.npy") + " --weight " + w_ + " --target " + path("y.npy"),
      read_npy_error(path("garbage.npy")));
  // Truncated: the header promises 8 x 4 doubles, half the bytes are there.
  {
    std::ifstream in(x_, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(path("short.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 128);
  }
  expect_failure("--input " + path("short.npy") + " --weight " + w_ + " --target " + path("y.npy"),
                 read_npy_error(path("short.npy")));
  write_npy(path("ints.npy"), std::vector<std::int64_t>{8, 4}, std::vector<std::int64_t>(32, 1));
  expect_failure(
      "--input " + path("ints.npy") + " --weight " + w_ + " --target " + path("y.npy"),
      "--input " + path("ints.npy") + " holds i64; FLCE reads float32 or float64 arrays.");
  std::string const w3 = write<double>("w3.npy", {6, 3}, std::vector<double>(18, 0.5));
  expect_failure("--input " + x_ + " --weight " + w3 + " --target " + path("y.npy"),
                 "--weight " + w3 + " has shape (6,3) but --input " + x_ + " has hidden size 4.");
  expect_failure("--input " + x_ + " --weight " + w_ + " --target " + path("missing.npy"),
                 read_npy_error(path("missing.npy")));
}

TEST_F(FlceCliErrors, TargetsOfTheWrongTypeOrShapeAreOneSentenceAndWriteNothing) {
  std::string const common = "--input " + x_ + " --weight " + w_ + " --target ";
  std::string const float_y = write<double>("float_y.npy", {8}, std::vector<double>(8, 1.0));
  expect_failure(common + float_y,
                 "--target " + float_y + " holds f64; FLCE reads int64 (or int32) class indices.");
  write_npy(path("y2.npy"), std::vector<std::int64_t>{2, 4}, std::vector<std::int64_t>(8, 1));
  expect_failure(common + path("y2.npy"),
                 "--target " + path("y2.npy") + " has shape (2,4); FLCE needs a 1-D (BT,) array.");
}

TEST_F(FlceCliErrors, SoftTargetsOfTheWrongTypeOrShapeAreOneSentenceAndWriteNothing) {
  std::string const common =
      "--input " + x_ + " --weight " + w_ + " --target " + path("y.npy") + " ";
  write_npy(path("si.npy"), std::vector<std::int64_t>{8, 2}, std::vector<std::int64_t>(16, 1));
  write_npy(path("si7.npy"), std::vector<std::int64_t>{7, 2}, std::vector<std::int64_t>(14, 1));
  std::string const sp = write<double>("sp.npy", {8, 2}, std::vector<double>(16, 0.5));
  std::string const sp3 = write<double>("sp3.npy", {8, 3}, std::vector<double>(24, 0.5));
  std::string const si = path("si.npy"), si7 = path("si7.npy");
  expect_failure(common + "--soft-target-probs " + sp,
                 "--soft-target-probs needs --soft-target-indices (the classes they are on).");
  expect_failure(common + "--soft-target-indices " + si,
                 "--soft-target-indices needs --soft-target-probs (their probabilities).");
  expect_failure(
      common + "--soft-target-indices " + sp + " --soft-target-probs " + sp,
      "--soft-target-indices " + sp + " holds f64; FLCE reads int64 (or int32) class indices.");
  expect_failure(common + "--soft-target-indices " + si7 + " --soft-target-probs " + sp,
                 "--soft-target-indices " + si7 + " has shape (7,2) but --input " + x_ +
                     " has 8 rows; FLCE needs (BT, K).");
  expect_failure(common + "--soft-target-indices " + si + " --soft-target-probs " + sp3,
                 "--soft-target-probs " + sp3 + " has shape (8,3) but --soft-target-indices " + si +
                     " has shape (8,2).");
  expect_failure(
      common + "--vocab-parallel --device cuda",
      "--vocab-parallel runs on the host's MPI ranks; the CLI has no NCCL path (--device "
      "cuda).");
  // The library's sentences, through the CLI: a weight that would change nothing, a bad class.
  expect_failure(common + "--soft-target-weight 0.5",
                 "soft_target_weight is 0.5 but no soft targets are given: it would change "
                 "nothing.");
  write_npy(path("si_bad.npy"), std::vector<std::int64_t>{8, 2},
            std::vector<std::int64_t>{1, 1, 1, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  expect_failure(
      common + "--soft-target-indices " + path("si_bad.npy") + " --soft-target-probs " + sp,
      "soft target 1 of row 1 names class 6, outside [0, 6).");
}

TEST_F(FlceCliErrors, AnOutputThatCannotBeRenamedIntoPlaceLeavesNoFileBehind) {
  // The outputs are written as "<path>.partial" and renamed once all are written. --loss-out
  // names a non-empty directory: writing out_dir.npy.partial succeeds, renaming it over the
  // directory fails (EISDIR), and every .partial file is removed.
  fs::create_directories(dir_ / "out_dir.npy" / "inside");
  std::string err;
  int const status =
      run("flce --input " + x_ + " --weight " + w_ + " --target " + path("y.npy") + " --loss-out " +
              path("out_dir.npy") + " --grad-input-out " + path("out_dx.npy"),
          err);
  EXPECT_NE(status, 0);
  EXPECT_EQ(err, "tessel: cannot rename " + path("out_dir.npy") + ".partial to " +
                     path("out_dir.npy") + ": Is a directory.\n");
  auto present = outputs_present();
  std::sort(present.begin(), present.end());
  EXPECT_EQ(present, (std::vector<std::string>{"out_dir.npy", "out_loss.npy"}));
  EXPECT_TRUE(fs::is_directory(dir_ / "out_dir.npy" / "inside"));
  for (auto const& e : fs::directory_iterator(dir_.path()))
    EXPECT_NE(e.path().extension(), ".partial") << e.path();
}

TEST_F(FlceCliErrors, ALaterRenameFailureRestoresTheOutputsRenamedBeforeIt) {
  // --loss-out is renamed into place first, over an existing file; then --grad-input-out fails
  // (a non-empty directory). The loss file must hold its old bytes again, and no .partial or
  // .previous file may remain.
  write_text("kept_loss.npy", "old bytes");
  fs::create_directories(dir_ / "dx_dir.npy" / "inside");
  std::string err;
  int const status =
      run("flce --input " + x_ + " --weight " + w_ + " --target " + path("y.npy") + " --loss-out " +
              path("kept_loss.npy") + " --grad-input-out " + path("dx_dir.npy"),
          err);
  EXPECT_NE(status, 0);
  EXPECT_EQ(err, "tessel: cannot rename " + path("dx_dir.npy") + ".partial to " +
                     path("dx_dir.npy") + ": Is a directory.\n");
  EXPECT_EQ(read_text("kept_loss.npy"), "old bytes");
  EXPECT_TRUE(fs::is_directory(dir_ / "dx_dir.npy" / "inside"));
  for (auto const& e : fs::directory_iterator(dir_.path())) {
    EXPECT_NE(e.path().extension(), ".partial") << e.path();
    EXPECT_NE(e.path().extension(), ".previous") << e.path();
  }
}

TEST_F(FlceCliErrors, AnExistingOutputThatCannotBeMovedAsideIsLeftAsItWas) {
  // "<path>.previous" is a non-empty directory, so the old output cannot be moved aside.
  write_text("kept_loss.npy", "old bytes");
  fs::create_directories(dir_ / "kept_loss.npy.previous" / "inside");
  std::string err;
  int const status = run("flce --input " + x_ + " --weight " + w_ + " --target " + path("y.npy") +
                             " --loss-out " + path("kept_loss.npy"),
                         err);
  EXPECT_NE(status, 0);
  EXPECT_EQ(err, "tessel: cannot move " + path("kept_loss.npy") + " aside to " +
                     path("kept_loss.npy") + ".previous: Is a directory.\n");
  EXPECT_EQ(read_text("kept_loss.npy"), "old bytes");
  EXPECT_TRUE(fs::is_directory(dir_ / "kept_loss.npy.previous" / "inside"));
  for (auto const& e : fs::directory_iterator(dir_.path()))
    EXPECT_NE(e.path().extension(), ".partial") << e.path();
}

TEST_F(FlceCliErrors, BadValuesAndOptionsAreOneSentenceAndWriteNothing) {
  std::string const common = "--input " + x_ + " --weight " + w_ + " --target ";
  std::vector<std::int64_t> bad = {0, 1, 6, 2, 3, 4, 5, 0};
  write_npy(path("bad_y.npy"), std::vector<std::int64_t>{8}, bad);
  expect_failure(common + path("bad_y.npy"),
                 "target 6 at row 2 is outside [0, 6) and is not ignore_index (-100).");
  expect_failure(common + path("y.npy") + " --reduction avg",
                 "unknown reduction \"avg\"; valid reductions are mean, sum and none.");
  expect_failure(common + path("y.npy") + " --label-smoothing 2",
                 "label_smoothing must lie in [0, 1], got 2.");
  expect_failure(common + path("y.npy") + " --softcap x", "--softcap: \"x\" is not a number.");
  // A number out of a double's range is named as such, not taken for a file name.
  expect_failure(common + path("y.npy") + " --grad-output 1e400",
                 "--grad-output: 1e400 is outside the range of a 64-bit float (nonzero magnitudes "
                 "from 2.2e-308 to 1.8e308).");
  expect_failure(common + path("y.npy") + " --softcap 1e-400",
                 "--softcap: 1e-400 is outside the range of a 64-bit float (nonzero magnitudes "
                 "from 2.2e-308 to 1.8e308).");
  std::string const dy = write<double>("dy.npy", {8}, std::vector<double>(8, 1.0));
  expect_failure(
      common + path("y.npy") + " --grad-output " + dy,
      "--grad-output " + dy + " gives per-row values, which need --reduction none, not mean.");
  expect_failure(common + path("y.npy") + " --grad-bias-out " + path("out_db.npy"),
                 "--grad-bias-out needs --bias: there is no bias to differentiate.");
  expect_failure(common + path("y.npy") + " --z-loss-out " + path("out_loss.npy"),
                 "--loss-out and --z-loss-out name the same file " + path("out_loss.npy") + ".");
  expect_failure(common + path("y.npy") + " --dtype i32",
                 "--dtype: FLCE computes on f32, f64, f16 or bf16, not i32.");
}

TEST_F(FlceCliErrors, NoOutputAskedForIsRefusedNamingTheOutputOptions) {
  std::string err;
  EXPECT_EQ(run("flce --input " + x_ + " --weight " + w_ + " --target " + path("y.npy"), err), 1);
  EXPECT_EQ(err,
            "tessel: no output asked for; give at least one of --loss-out, --z-loss-out, "
            "--grad-input-out, --grad-weight-out, --grad-bias-out, --lse-out, "
            "--target-logprob-out, --entropy-out, --argmax-out or --accuracy-out.\n");
  EXPECT_EQ(read_text("stdout.txt"), "");
}

TEST_F(FlceCliErrors, CommandLineMistakesExitOneWithOneSentence) {
  // CLI11's errors (a missing option, a missing value, an unknown flag) exit 1 like the others,
  // not with CLI11's own codes (106, 114, 109), and point to the command's help.
  std::string const files = "--input " + x_ + " --weight " + w_ + " --target " + path("y.npy");
  struct Case {
    std::string args, message;
  };
  for (Case const& c :
       {Case{"flce --weight " + w_ + " --target " + path("y.npy") + " --loss-out " +
                 path("out_new.npy"),
             "--input is required; see tessel flce --help."},
        Case{"flce " + files + " --loss-out", "--loss-out needs a value; see tessel flce --help."},
        Case{"flce " + files + " --loss-out " + path("out_new.npy") + " --bogus",
             "The following argument was not expected: --bogus; see tessel flce --help."},
        Case{"flce " + files + " --loss-out " + path("out_new.npy") + " --temperature 0",
             "temperature must be finite and > 0, got 0."}}) {
    SCOPED_TRACE(c.args);
    std::string err;
    EXPECT_EQ(run(c.args, err), 1);
    EXPECT_EQ(err, "tessel: " + c.message + "\n");
    EXPECT_EQ(read_text("stdout.txt"), "");
    EXPECT_EQ(outputs_present(), std::vector<std::string>{"out_loss.npy"});
  }
  std::string err;
  EXPECT_EQ(run("flce --help", err), 0);
  EXPECT_NE(read_text("stdout.txt").find("--target-logprob-out"), std::string::npos);
}

}  // namespace
