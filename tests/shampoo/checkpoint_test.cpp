// State files: a safetensors file with key-path tensor names and format metadata; a bit-exact
// save/load round trip; truncated, corrupted or foreign files refused with the optimizer
// unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include <tessel/shampoo/checkpoint.hpp>

#include "io/io_test_support.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using test_support::TempDir;

Plan checkpoint_plan() {
  return make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                   std::vector<std::vector<index_t>>{{5, 4}, {2}});
}

Options checkpoint_options() {
  Options o;
  o.grafting = rmsprop_grafting();
  o.factor_matrix_dtype = DType::bf16;
  return o;
}

Shampoo<float> trained(int steps) {
  Shampoo<float> opt(checkpoint_plan(), checkpoint_options());
  std::vector<float> w(20, 1.0f), b(2, 0.0f);
  for (int t = 0; t < steps; ++t) {
    std::vector<float> gw(20), gb{0.5f, -0.25f * static_cast<float>(t)};
    for (std::size_t i = 0; i < 20; ++i) gw[i] = std::sin(static_cast<float>(i + 7 * t));
    opt.step({std::span<float>(w), std::span<float>(b)},
             {std::span<float const>(gw), std::span<float const>(gb)});
  }
  return opt;
}

std::vector<char> file_bytes(std::filesystem::path const& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(std::filesystem::path const& p, std::vector<char> const& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(ShampooCheckpoint, FileHoldsKeyPathsAndMetadata) {
  TempDir dir;
  auto opt = trained(3);
  save_checkpoint(opt, dir / "state.safetensors");
  auto file = read_safetensors(dir / "state.safetensors");
  EXPECT_EQ(file.metadata.at("format"), "tessel.shampoo.state/1");
  EXPECT_EQ(file.metadata.at("step"), "3");
  EXPECT_TRUE(file.contains("[\"0\",\"block_1\",\"shampoo\",\"factor_matrices\",\"0\"]"));
  EXPECT_EQ(file.at("[\"0\",\"block_1\",\"shampoo\",\"factor_matrices\",\"0\"]").dtype,
            DType::bf16);
  EXPECT_EQ(file.at("[\"1\",\"step\"]").dtype, DType::i64);
  EXPECT_EQ(file.tensors.size(), opt.state_dict().size());
}

// The functions take any Shampoo: a family named at compile time over a static plan too (the
// set-up docs/shampoo.md recommends), whose file a run-time-chosen optimizer loads.
TEST(ShampooCheckpoint, AStaticPlanAndANamedFamilySaveAndLoad) {
  TempDir dir;
  constexpr auto plan = make_plan(plan_options(Int<4>{}, Int<1>{}, 1),
                                  make_shape(Int<5>{}, Int<4>{}), make_shape(Int<2>{}));
  Options o = checkpoint_options();
  o.factor_matrix_dtype = DType::f32;
  Shampoo<float, Soap, static_plan<plan>> opt(o);
  std::vector<float> w(20, 1.0f), b(2, 0.0f), gw(20, 0.5f), gb{0.5f, -0.25f};
  opt.step({w.data(), b.data()}, {gw.data(), gb.data()});
  save_checkpoint(opt, dir / "soap.safetensors");
  Shampoo<float, Soap, static_plan<plan>> again(o);
  load_checkpoint(again, dir / "soap.safetensors");
  EXPECT_TRUE(again.state_dict() == opt.state_dict());
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  Shampoo<float> chosen(plan, o);
  load_checkpoint(chosen, dir / "soap.safetensors");
  EXPECT_TRUE(chosen.state_dict() == opt.state_dict());
}

TEST(ShampooCheckpoint, RoundTripIsBitExact) {
  TempDir dir;
  auto opt = trained(4);
  save_checkpoint(opt, dir / "a.safetensors");
  EXPECT_TRUE(load_state(dir / "a.safetensors") == opt.state_dict());
  Shampoo<float> fresh(checkpoint_plan(), checkpoint_options());
  load_checkpoint(fresh, dir / "a.safetensors");
  EXPECT_EQ(fresh.step_count(), 4);
  EXPECT_TRUE(fresh.state_dict() == opt.state_dict());
  save_checkpoint(fresh, dir / "b.safetensors");
  EXPECT_EQ(file_bytes(dir / "a.safetensors"), file_bytes(dir / "b.safetensors"));
}

// SOAP with the QR iteration (DefaultSOAPConfig) in float with bf16 factors: its state is the
// eigenvectors the next iteration starts from, so a run resumed from a checkpoint must continue
// bit for bit, parameters and state.
TEST(ShampooCheckpoint, QrIterationResumesBitExact) {
  TempDir dir;
  Options o = checkpoint_options();
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  o.root.eigendecomposition = {EigendecompositionMethod::qr, 0.01, 2};
  o.grafting = {};
  o.beta2 = 0.99;
  o.epsilon = 1e-6;
  auto run = [&](Shampoo<float>& opt, std::vector<float>& w, std::vector<float>& b, int from,
                 int to) {
    for (int t = from; t < to; ++t) {
      std::vector<float> gw(20), gb{0.5f, -0.25f * static_cast<float>(t)};
      for (std::size_t i = 0; i < 20; ++i) gw[i] = std::sin(static_cast<float>(i + 7 * t));
      opt.step({std::span<float>(w), std::span<float>(b)},
               {std::span<float const>(gw), std::span<float const>(gb)});
    }
  };
  Shampoo<float> opt(checkpoint_plan(), o);
  std::vector<float> w(20, 1.0f), b(2, 0.0f);
  run(opt, w, b, 0, 3);
  save_checkpoint(opt, dir / "qr.safetensors");
  std::vector<float> w2 = w, b2 = b;
  run(opt, w, b, 3, 6);
  Shampoo<float> resumed(checkpoint_plan(), o);
  load_checkpoint(resumed, dir / "qr.safetensors");
  run(resumed, w2, b2, 3, 6);
  EXPECT_EQ(w2, w);
  EXPECT_EQ(b2, b);
  EXPECT_TRUE(resumed.state_dict() == opt.state_dict());
}

void expect_refused(std::filesystem::path const& path, std::string const& fragment) {
  auto opt = trained(2);
  auto const before = opt.state_dict();
  try {
    load_checkpoint(opt, path);
    ADD_FAILURE() << "loading " << path << " succeeded";
  } catch (Error const& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
  EXPECT_TRUE(opt.state_dict() == before);
  EXPECT_EQ(opt.step_count(), 2);
}

TEST(ShampooCheckpoint, DamagedOrForeignFilesChangeNothing) {
  TempDir dir;
  save_checkpoint(trained(5), dir / "good.safetensors");
  auto bytes = file_bytes(dir / "good.safetensors");

  auto truncated = bytes;
  truncated.resize(bytes.size() - 3);
  write_bytes(dir / "truncated.safetensors", truncated);
  expect_refused(dir / "truncated.safetensors", "truncated.safetensors");

  auto corrupted = bytes;
  corrupted[12] = '\x01';  // inside the JSON header
  write_bytes(dir / "corrupted.safetensors", corrupted);
  expect_refused(dir / "corrupted.safetensors", "corrupted.safetensors");

  expect_refused(dir / "missing.safetensors", "missing.safetensors");

  SafetensorsFile foreign;
  std::vector<float> one{1.0f};
  foreign.tensors.push_back(make_safetensors_entry("weight", {1}, one));
  write_safetensors(dir / "foreign.safetensors", foreign);
  expect_refused(dir / "foreign.safetensors",
                 "the state key \"weight\" is not a JSON array of strings");

  // A state of another configuration: no momentum here, but the file has no RMSprop state.
  Options plain;
  Shampoo<float> other(checkpoint_plan(), plain);
  save_checkpoint(other, dir / "other.safetensors");
  expect_refused(dir / "other.safetensors", "the state has no key [\"0\",\"block_0\",\"adagrad\"]");
}

TEST(ShampooCheckpoint, DuplicatePathsAreRefused) {
  SafetensorsFile file;
  std::vector<std::int64_t> step{1};
  file.tensors.push_back(make_safetensors_entry("[\"0\",\"step\"]", {}, step));
  file.tensors.push_back(make_safetensors_entry("[\"0\", \"step\"]", {}, step));
  try {
    from_safetensors(file);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "the state file names the key [\"0\",\"step\"] twice (as \"[\"0\", \"step\"]\").");
  }
}

// A key that is not UTF-8 cannot name a tensor in a JSON header: refused with the sentence of
// the safetensors writer, and no file is written.
TEST(ShampooCheckpoint, AKeyThatIsNotUtf8IsRefusedByName) {
  TempDir dir;
  auto const path = dir / "state.safetensors";
  std::vector<std::int64_t> step{1};
  StateDict state;
  state[{"0", "bad\xff"}] = make_state_tensor<std::int64_t>({}, step);
  EXPECT_EQ(test::error_of([&] { save_state(path, state); }),
            "cannot write " + path.string() +
                ": the tensor name \"[\\\"0\\\",\\\"bad\xef\xbf\xbd\\\"]\" is not valid UTF-8.");
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
