// DistributedShampoo on one process (SingleProcessCommunicator): bit-identical to Shampoo<T> in
// every mode, its plans and exchange layout, what a lossy communication dtype means, its
// checkpoints, and every error path with its sentence and nothing changed. The same optimizer on
// 1, 2 and 3 MPI ranks is tested in tests/mpi/distributed_shampoo_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include <tessel/core/float16.hpp>
#include <tessel/dist/single_process.hpp>
#include <tessel/io/json.hpp>
#include <tessel/shampoo/distributed_checkpoint.hpp>

#include "io/io_test_support.hpp"
#include "shampoo/distributed_support.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using namespace distributed_support;
using test_support::error_of;
using test_support::TempDir;
namespace json = tessel::detail::json;

index_t total_numel() {
  index_t n = 0;
  for (auto const& s : shapes) {
    index_t k = 1;
    for (index_t e : s) k *= e;
    n += k;
  }
  return n;
}

TEST(DistributedShampoo, OneRankIsBitIdenticalToShampooInEveryMode) {
  dist::SingleProcessCommunicator world;
  for (auto const& m : modes()) {
    SCOPED_TRACE(m.name);
    EXPECT_TRUE(same_bits(distributed<float>(world, m.options, {}, 5),
                          single_process<float>(m.options, 5)));
    EXPECT_TRUE(same_bits(distributed<double>(world, m.options, {-1, DType::f64}, 5),
                          single_process<double>(m.options, 5)));
  }
}

// Exchanged updates u (w <- w - lr u) cannot move the parameters toward iterate averaging's z:
// the optimizer refuses averaging when it is built, with the local optimizer's sentence.
TEST(DistributedShampoo, IterateAveragingIsRefusedWhenBuilt) {
  dist::SingleProcessCommunicator world;
  Options o;
  o.averaging.type = AveragingType::generalized_primal;
  EXPECT_EQ(error_of([&] { DistributedShampoo<float> opt(world, plan_for(1), o); }),
            "iterate averaging (generalized primal averaging) moves the parameters toward its "
            "averaged sequence, which no update u of w <- w - lr u expresses: compute_updates and "
            "the distributed optimizers do not support it; use step().");
}

TEST(DistributedShampoo, ParametersMove) {
  dist::SingleProcessCommunicator world;
  auto moved = distributed<float>(world, Options{}, {}, 1);
  EXPECT_FALSE(same_bits(moved, initial_params<float>()));
}

// w <- w - lr u over block b of its parameter (u row-major in the block's shape): the stage every
// path applies updates with (step/stages.hpp), on a view of the block.
template <class T>
void apply_block_update(Plan const& plan, std::size_t b, std::vector<std::vector<T>>& params,
                        T const* update, T lr) {
  auto const seg = runtime_segment(block_segment(plan, b), plan.block_shape(b));
  stages::apply_update(exec::Serial{},
                       make_tensor(params[static_cast<std::size_t>(seg.param)].data() + seg.offset,
                                   seg.param_layout()),
                       make_tensor(update, seg.state_layout()), lr);
}

TEST(DistributedShampoo, ComputeUpdatesThenApplyingThemIsTheStep) {
  Options o = modes()[3].options;  // momentum, Nesterov, decoupled weight decay
  Shampoo<double> opt(plan_for(1), o);
  auto params = initial_params<double>();
  std::vector<double> updates(static_cast<std::size_t>(opt.update_numel()));
  EXPECT_EQ(opt.update_numel(), total_numel());
  for (int t = 0; t < 4; ++t) {
    auto grads = values<double>(t, 1.0);
    std::vector<std::span<double>> ps(params.begin(), params.end());
    std::vector<std::span<double const>> gs(grads.begin(), grads.end());
    opt.compute_updates(ps, gs, updates);
    for (std::size_t b = 0; b < opt.plan().num_blocks(); ++b)
      apply_block_update(opt.plan(), b, params, updates.data() + opt.update_offset(b), o.lr);
  }
  EXPECT_TRUE(same_bits(params, single_process<double>(o, 4)));
}

TEST(DistributedShampoo, OwnedPlansPartitionTheBlocksAndKeepTheirKeys) {
  Plan const plan = plan_for(3);
  std::set<std::pair<index_t, index_t>> seen;
  for (index_t r = 0; r < 3; ++r) {
    Plan const own = owned_plan(plan, r);
    EXPECT_EQ(own.num_params(), plan.num_params());
    for (std::size_t b = 0; b < own.num_blocks(); ++b) {
      EXPECT_EQ(own.blocks[b].rank, r);
      EXPECT_TRUE(seen.insert({own.blocks[b].param, own.blocks[b].index}).second);
      EXPECT_EQ(own.block_shape(b),
                plan.block_shape(static_cast<std::size_t>(
                    plan.params[static_cast<std::size_t>(own.blocks[b].param)].first_block +
                    own.blocks[b].index)));
    }
  }
  EXPECT_EQ(seen.size(), plan.num_blocks());
  EXPECT_EQ(with_group_size(plan_for(1), 3), plan);
}

TEST(DistributedShampoo, StateHoldsOnlyTheOwnedBlocks) {
  dist::SingleProcessCommunicator world;
  DistributedShampoo<float> opt(world, plan_for(1));
  auto params = initial_params<float>();
  run_steps<float>(opt, params, 0, 2);
  Shampoo<float> reference(plan_for(1));
  auto ref_params = initial_params<float>();
  run_steps<float>(reference, ref_params, 0, 2);
  EXPECT_EQ(opt.state_dict(), reference.state_dict());
  EXPECT_EQ(opt.owned_blocks().size(), opt.plan().num_blocks());
}

TEST(DistributedShampoo, ExchangedBytesFollowTheCommunicationDtype) {
  dist::SingleProcessCommunicator world;
  DistributedShampoo<float> f32(world, plan_for(1));
  EXPECT_EQ(f32.exchanged_bytes(), 8 + 4 * static_cast<std::size_t>(total_numel()));
  EXPECT_EQ(f32.sent_bytes(), f32.exchanged_bytes());
  DistributedShampoo<float> bf16(world, plan_for(1), Options{}, {-1, DType::bf16});
  EXPECT_EQ(bf16.exchanged_bytes(), 8 + 2 * static_cast<std::size_t>(total_numel()));
}

// The guarantee for a lossy dtype: each block's update is rounded once (to nearest even, through
// float) and applied as w - lr * u. Recomputed here from Shampoo<T>::compute_updates.
template <class C>
void expect_rounded_once(DType dtype) {
  dist::SingleProcessCommunicator world;
  Options const o = modes()[4].options;
  int const steps = 4;
  auto got = distributed<float>(world, o, {-1, dtype}, steps);
  Shampoo<float> opt(plan_for(1), o);
  auto params = initial_params<float>();
  std::vector<float> updates(static_cast<std::size_t>(opt.update_numel()));
  for (int t = 0; t < steps; ++t) {
    auto grads = values<float>(t, 1.0);
    std::vector<std::span<float>> ps(params.begin(), params.end());
    std::vector<std::span<float const>> gs(grads.begin(), grads.end());
    opt.compute_updates(ps, gs, updates);
    for (auto& u : updates) u = static_cast<float>(C(u));
    for (std::size_t b = 0; b < opt.plan().num_blocks(); ++b)
      apply_block_update(opt.plan(), b, params, updates.data() + opt.update_offset(b),
                         static_cast<float>(o.lr));
  }
  EXPECT_TRUE(same_bits(got, params));
  EXPECT_FALSE(same_bits(got, single_process<float>(o, steps)));  // the rounding is visible
}

TEST(DistributedShampoo, Bf16CommunicationRoundsEachUpdateOnce) {
  expect_rounded_once<bfloat16>(DType::bf16);
}

TEST(DistributedShampoo, F16CommunicationRoundsEachUpdateOnce) {
  expect_rounded_once<half>(DType::f16);
}

// ---- errors ----

TEST(DistributedShampooErrors, RefusesACommunicationDtypeThatIsNotAFloat) {
  dist::SingleProcessCommunicator world;
  EXPECT_EQ(error_of([&] {
              DistributedShampoo<float>(world, plan_for(1), Options{}, {-1, DType::i32});
            }),
            "communication_dtype must be bf16, f16, f32 or f64, got i32.");
}

TEST(DistributedShampooErrors, RefusesAGroupSizeThatDoesNotDivideTheRanks) {
  dist::SingleProcessCommunicator world;
  EXPECT_EQ(error_of([&] {
              DistributedShampoo<float>(world, plan_for(2), Options{}, {2, DType::f32});
            }),
            "num_trainers_per_group must be -1 or a divisor of the number of ranks (1), got 2.");
  EXPECT_EQ(error_of([&] {
              DistributedShampoo<float>(world, plan_for(1), Options{}, {0, DType::f32});
            }),
            "num_trainers_per_group must be -1 or a divisor of the number of ranks (1), got 0.");
}

TEST(DistributedShampooErrors, RefusesAPlanForAnotherGroupSize) {
  dist::SingleProcessCommunicator world;
  EXPECT_EQ(error_of([&] { DistributedShampoo<float>(world, plan_for(3)); }),
            "the plan distributes its blocks over 3 ranks but the groups here have 1 "
            "(num_trainers_per_group -1 of 1 ranks); make the plan with group size 1.");
}

TEST(DistributedShampooErrors, RefusesInvalidOptions) {
  dist::SingleProcessCommunicator world;
  Options o;
  o.beta1 = 1.5;
  EXPECT_EQ(error_of([&] { DistributedShampoo<float>(world, plan_for(1), o); }),
            "beta1 must be in [0, 1), got 1.5.");
}

TEST(DistributedShampooErrors, ComputeUpdatesNeedsRoomForEveryUpdate) {
  Shampoo<float> opt(plan_for(1));
  auto params = initial_params<float>();
  auto before = params;
  auto grads = values<float>(0, 1.0);
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  std::vector<float> updates(3);
  EXPECT_EQ(error_of([&] { opt.compute_updates(ps, gs, updates); }),
            "compute_updates needs room for " + std::to_string(total_numel()) +
                " update values (one per element of 12 blocks), got 3.");
  EXPECT_EQ(opt.step_count(), 0);
  EXPECT_EQ(opt.state_dict(), Shampoo<float>(plan_for(1)).state_dict());
}

TEST(DistributedShampooErrors, StepArgumentsAreCheckedAsShampooChecksThem) {
  dist::SingleProcessCommunicator world;
  DistributedShampoo<float> opt(world, plan_for(1));
  auto params = initial_params<float>();
  auto grads = values<float>(0, 1.0);
  grads[2][3] = std::numeric_limits<float>::infinity();
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  EXPECT_EQ(
      error_of([&] { opt.step(ps, gs); }),
      "the gradient of parameter 2 has the value inf at element 3; gradients must be finite.");
  EXPECT_TRUE(same_bits(params, initial_params<float>()));
  EXPECT_EQ(opt.step_count(), 0);
}

TEST(DistributedShampooErrors, AnUpdateF16CannotHoldFailsTheStepWithNothingApplied) {
  dist::SingleProcessCommunicator world;
  Options o;
  o.beta1 = 0.0;
  o.momentum = 0.5;
  o.precondition_frequency = 1;
  o.start_preconditioning_step = 100;  // identity preconditioners: the update is the gradient
  DistributedShampoo<float> opt(world, plan_for(1), o, {-1, DType::f16});
  auto params = initial_params<float>();
  auto grads = values<float>(0, 1.0);
  grads[1][2] = 1e5f;  // parameter 1 is one block
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  auto momentum_before = opt.state_dict();
  EXPECT_EQ(error_of([&] { opt.step(ps, gs); }),
            "the update of parameter 1, block 0 has the value 1e+05 at element 2, which f16 "
            "cannot hold; choose a wider communication_dtype.");
  EXPECT_TRUE(same_bits(params, initial_params<float>()));
  // As in Shampoo<T>::step when a block fails: the step counted, factors accumulated, momentum
  // not updated.
  EXPECT_EQ(opt.step_count(), 1);
  auto after = opt.state_dict();
  EXPECT_EQ(after.at({"1", "block_0", "momentum_buffer"}),
            momentum_before.at({"1", "block_0", "momentum_buffer"}));
}

TEST(DistributedShampooErrors, AFailedBlockFailsTheStepAsInShampoo) {
  dist::SingleProcessCommunicator world;
  Options o;
  o.root.method = RootMethod::coupled_newton;
  o.root.coupled_newton.max_iterations = 1;
  o.root.coupled_newton.tolerance = 1e-12;
  o.num_tolerated_failed_amortized_computations = 0;
  DistributedShampoo<float> opt(world, plan_for(1), o);
  Shampoo<float> reference(plan_for(1), o);
  auto params = initial_params<float>();
  auto ref_params = params;
  std::string expected = error_of([&] { run_steps<float>(reference, ref_params, 0, 1); });
  EXPECT_NE(expected, "no error");
  EXPECT_EQ(error_of([&] { run_steps<float>(opt, params, 0, 1); }), expected);
  EXPECT_TRUE(same_bits(params, initial_params<float>()));
  EXPECT_EQ(opt.state_dict(), reference.state_dict());
}

TEST(DistributedShampooErrors, AGradientThatWouldOverflowAFactorChangesNothing) {
  // As Shampoo<T>::step: refused before anything is written, step count and state included.
  dist::SingleProcessCommunicator world;
  DistributedShampoo<float> opt(world, plan_for(1), Options{});
  Shampoo<float> reference(plan_for(1), Options{});
  auto params = initial_params<float>();
  auto ref_params = params;
  run_steps<float>(opt, params, 0, 2);
  run_steps<float>(reference, ref_params, 0, 2);
  auto grads = values<float>(2, 1.0);
  grads[2][10] = 1e20f;  // parameter 2 (9 x 7): its square would overflow f32
  auto const before = opt.state_dict();
  auto const params_before = params;
  auto step = [&](auto& o, auto& p) {
    std::vector<std::span<float>> ps(p.begin(), p.end());
    std::vector<std::span<float const>> gs(grads.begin(), grads.end());
    o.step(ps, gs);
  };
  std::string const expected = error_of([&] { step(reference, ref_params); });
  EXPECT_NE(expected.find("would overflow at step 3"), std::string::npos) << expected;
  EXPECT_EQ(error_of([&] { step(opt, params); }), expected);
  EXPECT_TRUE(same_bits(params, params_before));
  EXPECT_EQ(opt.state_dict(), before);
  EXPECT_EQ(opt.state_dict(), reference.state_dict());
}

// ---- checkpoints ----

template <class F>
void expect_load_fails(DistributedShampoo<float>& opt, std::filesystem::path const& dir,
                       std::string const& message, F&& damage) {
  damage();
  auto before = opt.state_dict();
  EXPECT_EQ(error_of([&] { load_checkpoint(opt, dir); }), message);
  EXPECT_EQ(opt.state_dict(), before);
}

json::Value read_index(std::filesystem::path const& dir) {
  json::Parsed parsed = json::parse(test_support::read_file(dir / "index.json"), 64);
  EXPECT_TRUE(parsed.value);
  return parsed.value ? std::move(*parsed.value) : json::Value();
}

struct Saved {
  TempDir dir;
  std::vector<std::vector<float>> params = initial_params<float>();
  Saved(dist::Communicator& world, Options const& o) {
    DistributedShampoo<float> opt(world, plan_for(1), o);
    run_steps<float>(opt, params, 0, 3);
    save_checkpoint(opt, dir / "ckpt");
  }
};

TEST(DistributedShampooCheckpoint, ResumingContinuesTheTrajectoryBitForBit) {
  dist::SingleProcessCommunicator world;
  Options const o = modes()[7].options;  // bf16 factors, amortized, Adam grafting
  Saved saved(world, o);
  DistributedShampoo<float> resumed(world, plan_for(1), o);
  load_checkpoint(resumed, saved.dir / "ckpt");
  EXPECT_EQ(resumed.step_count(), 3);
  run_steps<float>(resumed, saved.params, 3, 6);
  EXPECT_TRUE(same_bits(saved.params, single_process<float>(o, 6)));
}

TEST(DistributedShampooCheckpoint, DirectoryHoldsRankFilesAndAnIndex) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  auto const dir = saved.dir / "ckpt";
  // The bytes nlohmann::json wrote before io/json.hpp: compact, keys sorted, a newline.
  std::string blocks;
  for (BlockPlan const& b : plan_for(1).blocks) {
    blocks += tessel::detail::sentence(blocks.empty() ? "" : ",", "[", b.param, ",", b.index, ",",
                                       b.rank, "]");
  }
  EXPECT_EQ(test_support::read_file(dir / "index.json"),
            R"({"blocks":[)" + blocks +
                R"(],"files":["rank_0.safetensors"],"format":"tessel.shampoo.distributed/1",)"
                R"("num_ranks":1,"step":3})"
                "\n");
  EXPECT_EQ(read_index(dir).find("blocks")->items().size(), plan_for(1).num_blocks());
  auto file = read_safetensors(dir / "rank_0.safetensors");
  EXPECT_EQ(file.metadata.at("format"), "tessel.shampoo.state/1");
  EXPECT_EQ(file.metadata.at("step"), "3");
  EXPECT_EQ(file.metadata.at("num_ranks"), "1");
}

TEST(DistributedShampooCheckpoint, AMissingRankFileIsNamedAndNothingLoaded) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  auto const dir = saved.dir / "ckpt";
  DistributedShampoo<float> opt(world, plan_for(1));
  expect_load_fails(opt, dir,
                    "the checkpoint " + dir.string() + " is missing the state file " +
                        (dir / "rank_0.safetensors").string() +
                        " of rank 0 of 1; nothing was loaded.",
                    [&] { std::filesystem::remove(dir / "rank_0.safetensors"); });
  EXPECT_EQ(opt.step_count(), 0);
}

TEST(DistributedShampooCheckpoint, AMissingIndexIsNamed) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  auto const dir = saved.dir / "ckpt";
  DistributedShampoo<float> opt(world, plan_for(1));
  expect_load_fails(
      opt, dir,
      "the checkpoint directory " + dir.string() + " has no index.json; nothing was loaded.",
      [&] { std::filesystem::remove(dir / "index.json"); });
}

TEST(DistributedShampooCheckpoint, AForeignIndexIsRefused) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  auto const dir = saved.dir / "ckpt";
  DistributedShampoo<float> opt(world, plan_for(1));
  std::string const prefix =
      (dir / "index.json").string() + " is not a distributed Shampoo index: ";
  expect_load_fails(opt, dir, prefix + "it is not a JSON object; nothing was loaded.",
                    [&] { test_support::write_file(dir / "index.json", "[1,"); });
  expect_load_fails(opt, dir,
                    prefix + "its format is not tessel.shampoo.distributed/1; nothing was loaded.",
                    [&] { test_support::write_file(dir / "index.json", R"({"format":"x"})"); });
  // A key twice (nlohmann/json, which read indexes before io/json.hpp, kept the last) is no index.
  expect_load_fails(opt, dir, prefix + "it is not a JSON object; nothing was loaded.", [&] {
    test_support::write_file(dir / "index.json",
                             R"({"format":"x","format":"tessel.shampoo.distributed/1"})");
  });
  expect_load_fails(opt, dir, prefix + "a file is not a plain file name; nothing was loaded.", [&] {
    test_support::write_file(
        dir / "index.json",
        R"({"format":"tessel.shampoo.distributed/1","step":3,"files":["../x"],"blocks":[]})");
  });
  expect_load_fails(
      opt, dir, prefix + "a block names a file it does not list; nothing was loaded.", [&] {
        test_support::write_file(
            dir / "index.json",
            R"({"format":"tessel.shampoo.distributed/1","step":3,"files":["rank_0.safetensors"],"blocks":[[0,0,1]]})");
      });
}

TEST(DistributedShampooCheckpoint, AnIndexWithMissingOrMalformedFieldsIsRefused) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  auto const dir = saved.dir / "ckpt";
  DistributedShampoo<float> opt(world, plan_for(1));
  std::string const prefix =
      (dir / "index.json").string() + " is not a distributed Shampoo index: ";
  json::Value const good = read_index(dir);
  auto with = [&](auto&& edit) {
    return [&, edit] {
      json::Value j = good;
      edit(j);
      test_support::write_file(dir / "index.json", json::dump(j));
    };
  };
  std::string const tail = "; nothing was loaded.";
  expect_load_fails(opt, dir, prefix + "it has no step >= 0" + tail,
                    with([](json::Value& j) { *j.find("step") = -1; }));
  expect_load_fails(opt, dir, prefix + "it has no list of files" + tail,
                    with([](json::Value& j) { *j.find("files") = json::Value::array(); }));
  expect_load_fails(opt, dir, prefix + "it has no list of blocks" + tail, with([](json::Value& j) {
                      std::erase_if(j.members(), [](auto const& m) { return m.first == "blocks"; });
                    }));
  expect_load_fails(opt, dir, prefix + "a block is not [parameter, block, file]" + tail,
                    with([](json::Value& j) {
                      j.find("blocks")->items()[0] = json::Value::array({0, 0});
                    }));
  expect_load_fails(opt, dir, prefix + "it lists a block twice" + tail, with([](json::Value& j) {
                      auto& blocks = j.find("blocks")->items();
                      blocks[1] = blocks[0];
                    }));
  expect_load_fails(opt, dir,
                    "the checkpoint " + dir.string() + " has no block 0 of parameter 0" + tail,
                    with([](json::Value& j) {
                      j.find("blocks")->items()[0] = json::Value::array({0, 9, 0});
                    }));
}

TEST(DistributedShampooCheckpoint, ARankFileWithoutAStepIsRefused) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  auto const dir = saved.dir / "ckpt";
  DistributedShampoo<float> opt(world, plan_for(1));
  expect_load_fails(opt, dir,
                    (dir / "rank_0.safetensors").string() +
                        " holds step (none) but index.json says 3; nothing was loaded.",
                    [&] {
                      auto file = read_safetensors(dir / "rank_0.safetensors");
                      file.metadata.erase("step");
                      write_safetensors(dir / "rank_0.safetensors", file);
                    });
}

TEST(DistributedShampooCheckpoint, SavingWhereNoDirectoryCanBeMadeFailsWithNothingWritten) {
  dist::SingleProcessCommunicator world;
  TempDir dir;
  test_support::write_file(dir / "file", "x");
  DistributedShampoo<float> opt(world, plan_for(1));
  EXPECT_EQ(error_of([&] { save_checkpoint(opt, dir / "file" / "ckpt"); }),
            "cannot create the checkpoint directory " + (dir / "file" / "ckpt").string() +
                ": Not a directory.");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(DistributedShampooCheckpoint, AStepMismatchBetweenIndexAndFileIsRefused) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  auto const dir = saved.dir / "ckpt";
  DistributedShampoo<float> opt(world, plan_for(1));
  expect_load_fails(opt, dir,
                    (dir / "rank_0.safetensors").string() +
                        " holds step 3 but index.json says 4; nothing was loaded.",
                    [&] {
                      json::Value index = read_index(dir);
                      *index.find("step") = 4;
                      test_support::write_file(dir / "index.json", json::dump(index));
                    });
}

TEST(DistributedShampooCheckpoint, AnotherPlanIsRefused) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  auto const dir = saved.dir / "ckpt";
  Plan other = make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                         std::vector<std::vector<index_t>>{{5}});
  DistributedShampoo<float> opt(world, other);
  auto before = opt.state_dict();
  EXPECT_EQ(error_of([&] { load_checkpoint(opt, dir); }),
            "the checkpoint " + dir.string() +
                " holds 12 blocks but this optimizer's plan has 2; nothing was loaded.");
  EXPECT_EQ(opt.state_dict(), before);
}

// 57 keys: 5 steps and, per block, the filtered gradient and a factor and an inverse root per mode:
// the 0-D parameter is one block of shape (1), (5) and (6) two blocks each, (9, 7) six 2-D blocks,
// (2, 3, 4) one 3-D block: 5 + 3 + 2 * 3 + 2 * 3 + 6 * 5 + 7. Momentum adds one key per block (12).
TEST(DistributedShampooCheckpoint, StateForOtherOptionsIsRefusedByTheStateCheck) {
  dist::SingleProcessCommunicator world;
  Saved saved(world, Options{});
  Options momentum;
  momentum.momentum = 0.5;
  DistributedShampoo<float> opt(world, plan_for(1), momentum);
  auto before = opt.state_dict();
  EXPECT_EQ(error_of([&] { load_checkpoint(opt, saved.dir / "ckpt"); }),
            "the state has no key [\"0\",\"block_0\",\"momentum_buffer\"]; it holds 57 keys where "
            "this optimizer has 69.");
  EXPECT_EQ(opt.state_dict(), before);
}

}  // namespace
