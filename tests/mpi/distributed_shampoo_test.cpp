// DistributedShampoo over MPI on however many ranks mpirun started (ctest runs 1, 2 and 3): after N
// steps the parameters on every rank are bit for bit those of the single-process Shampoo<T> on the
// same gradients in every mode (lossless communication dtypes), or of the one-rank distributed
// optimizer (bf16, f16); groups repeat the work; a checkpoint saved on some number of ranks resumes
// on another with the same trajectory as never stopping; failures reach every rank as the same
// error with nothing applied.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <tessel/dist/mpi.hpp>
#include <tessel/dist/single_process.hpp>
#include <tessel/shampoo/distributed_checkpoint.hpp>

#include "shampoo/distributed_support.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using namespace distributed_support;

using tessel::test::error_of;

// True when every rank holds the same bytes.
template <class T>
bool same_on_every_rank(dist::Communicator& comm, std::vector<std::vector<T>> const& params) {
  std::vector<std::byte> mine;
  for (auto const& p : params) {
    auto bytes = std::as_bytes(std::span(p));
    mine.insert(mine.end(), bytes.begin(), bytes.end());
  }
  std::vector<std::byte> all(mine.size() * static_cast<std::size_t>(comm.size()));
  comm.all_gather(mine, all);
  for (int r = 1; r < comm.size(); ++r)
    if (std::memcmp(all.data(), all.data() + mine.size() * static_cast<std::size_t>(r),
                    mine.size()) != 0)
      return false;
  return true;
}

// The group sizes this number of ranks allows: all ranks, one rank per group, and any other
// divisor.
std::vector<index_t> group_sizes(int ranks) {
  std::vector<index_t> out = {-1};
  for (index_t g = 1; g < ranks; ++g)
    if (ranks % g == 0) out.push_back(g);
  return out;
}

TEST(DistributedShampooMpi, EveryModeIsBitIdenticalToOneProcess) {
  dist::MpiCommunicator world;
  for (auto const& m : modes()) {
    for (index_t g : group_sizes(world.size())) {
      SCOPED_TRACE(m.name + ", num_trainers_per_group " + std::to_string(g));
      auto got = distributed<float>(world, m.options, {g, DType::f32}, 5);
      EXPECT_TRUE(same_bits(got, single_process<float>(m.options, 5)));
      EXPECT_TRUE(same_on_every_rank(world, got));
    }
  }
}

TEST(DistributedShampooMpi, DoubleParametersWithF64CommunicationAreBitIdentical) {
  dist::MpiCommunicator world;
  for (auto const& m : modes()) {
    SCOPED_TRACE(m.name);
    auto got = distributed<double>(world, m.options, {-1, DType::f64}, 4);
    EXPECT_TRUE(same_bits(got, single_process<double>(m.options, 4)));
  }
}

TEST(DistributedShampooMpi, F64CommunicationOfFloatParametersIsBitIdentical) {
  dist::MpiCommunicator world;
  Options const o = modes()[4].options;
  EXPECT_TRUE(
      same_bits(distributed<float>(world, o, {-1, DType::f64}, 4), single_process<float>(o, 4)));
}

TEST(DistributedShampooMpi, LossyCommunicationIsBitIdenticalToOneRank) {
  dist::MpiCommunicator world;
  dist::SingleProcessCommunicator alone;
  for (DType d : {DType::bf16, DType::f16}) {
    for (auto const& m : {modes()[0], modes()[4]}) {
      SCOPED_TRACE(m.name + " in " + std::string(dtype_name(d)));
      auto got = distributed<float>(world, m.options, {-1, d}, 4);
      EXPECT_TRUE(same_bits(got, distributed<float>(alone, m.options, {-1, d}, 4)));
      EXPECT_TRUE(same_on_every_rank(world, got));
    }
  }
}

TEST(DistributedShampooMpi, EachRankKeepsStateForItsOwnBlocksOnly) {
  dist::MpiCommunicator world;
  Options const o = modes()[2].options;
  DistributedShampoo<float> opt(world, plan_for(world.size()), o);
  auto params = initial_params<float>();
  run_steps<float>(opt, params, 0, 3);
  Shampoo<float> reference(plan_for(1), o);
  auto ref_params = initial_params<float>();
  run_steps<float>(reference, ref_params, 0, 3);
  StateDict const full = reference.state_dict();
  StateDict expected;
  for (auto const& [key, tensor] : full) {
    bool keep = key[1] == "step";
    for (index_t b : opt.owned_blocks()) {
      BlockPlan const& bp = opt.plan().blocks[static_cast<std::size_t>(b)];
      keep = keep ||
             (key[0] == std::to_string(bp.param) && key[1] == "block_" + std::to_string(bp.index));
    }
    if (keep) expected.emplace(key, tensor);
  }
  EXPECT_EQ(opt.state_dict(), expected);
  // The blocks are spread: with more than one rank, no rank holds them all.
  std::vector<double> counts(static_cast<std::size_t>(world.size()), 0.0);
  counts[static_cast<std::size_t>(world.rank())] = static_cast<double>(opt.owned_blocks().size());
  world.all_reduce_sum(std::span(counts));
  double total = 0.0;
  for (double c : counts) {
    total += c;
    if (world.size() > 1) {
      EXPECT_LT(c, static_cast<double>(opt.plan().num_blocks()));
    }
  }
  EXPECT_EQ(total, static_cast<double>(opt.plan().num_blocks()));
}

TEST(DistributedShampooMpi, AGradientThatWouldOverflowAFactorIsRefusedOnEveryRank) {
  // The block belongs to one rank; every rank throws its sentence and nothing changes anywhere.
  dist::MpiCommunicator world;
  Shampoo<float> reference(plan_for(1), Options{});
  DistributedShampoo<float> opt(world, plan_for(world.size()), Options{});
  auto params = initial_params<float>();
  auto ref_params = params;
  run_steps<float>(reference, ref_params, 0, 1);
  run_steps<float>(opt, params, 0, 1);
  auto grads = values<float>(1, 1.0);
  grads[3][5] = 1e20f;
  auto step = [&](auto& o, auto& p) {
    std::vector<std::span<float>> ps(p.begin(), p.end());
    std::vector<std::span<float const>> gs(grads.begin(), grads.end());
    o.step(ps, gs);
  };
  std::string const expected = error_of([&] { step(reference, ref_params); });
  EXPECT_NE(expected, "no error");
  auto const before = opt.state_dict();
  auto const params_before = params;
  EXPECT_EQ(error_of([&] { step(opt, params); }), expected);
  EXPECT_TRUE(same_bits(params, params_before));
  EXPECT_EQ(opt.state_dict(), before);
  // The next (finite, small) step goes on as on one process.
  run_steps<float>(reference, ref_params, 1, 2);
  run_steps<float>(opt, params, 1, 2);
  EXPECT_TRUE(same_bits(params, ref_params));
}

TEST(DistributedShampooMpi, AFailureOnOneRankFailsTheStepOnEveryRank) {
  dist::MpiCommunicator world;
  Options o;
  o.root.method = RootMethod::coupled_newton;
  o.root.coupled_newton.max_iterations = 1;
  o.root.coupled_newton.tolerance = 1e-12;
  o.num_tolerated_failed_amortized_computations = 0;
  Shampoo<float> reference(plan_for(1), o);
  auto ref_params = initial_params<float>();
  std::string const expected = error_of([&] { run_steps<float>(reference, ref_params, 0, 1); });
  EXPECT_NE(expected, "no error");
  DistributedShampoo<float> opt(world, plan_for(world.size()), o);
  auto params = initial_params<float>();
  EXPECT_EQ(error_of([&] { run_steps<float>(opt, params, 0, 1); }), expected);
  EXPECT_TRUE(same_bits(params, initial_params<float>()));
}

TEST(DistributedShampooMpi, AnUpdateF16CannotHoldFailsTheStepOnEveryRank) {
  dist::MpiCommunicator world;
  Options o;
  o.beta1 = 0.0;
  o.start_preconditioning_step = 100;
  DistributedShampoo<float> opt(world, plan_for(world.size()), o, {-1, DType::f16});
  auto params = initial_params<float>();
  auto grads = values<float>(0, 1.0);
  grads[2][10] = 7e4f;  // element (1, 3): block 0 of parameter 2, its element 3
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  EXPECT_EQ(error_of([&] { opt.step(ps, gs); }),
            "the update of parameter 2, block 0 has the value 70000 at element 7, which f16 "
            "cannot hold; choose a wider communication_dtype.");
  EXPECT_TRUE(same_bits(params, initial_params<float>()));
}

// A directory every rank sees: rank 0 names it.
std::filesystem::path shared_directory(dist::Communicator& world, char const* name) {
  std::string path;
  if (world.rank() == 0)
    path = (std::filesystem::temp_directory_path() /
            ("tessel-dshampoo-" + std::string(name) + "-" + std::to_string(::getpid())))
               .string();
  std::uint64_t length = path.size();
  world.broadcast(std::as_writable_bytes(std::span(&length, 1)), 0);
  path.resize(static_cast<std::size_t>(length));
  world.broadcast(std::as_writable_bytes(std::span(path.data(), path.size())), 0);
  return path;
}

struct SharedDirectory {
  dist::Communicator& world;
  std::filesystem::path path;
  SharedDirectory(dist::Communicator& w, char const* name)
      : world(w), path(shared_directory(w, name)) {}
  ~SharedDirectory() {
    world.barrier();
    std::error_code ignored;
    if (world.rank() == 0) std::filesystem::remove_all(path, ignored);
  }
};

// Saves after 3 steps on the first `savers` ranks, resumes on all ranks (and on each rank alone),
// and runs to step 7: the same parameters as 7 steps without stopping.
TEST(DistributedShampooMpi, SavingOnSomeRanksAndResumingOnOthersKeepsTheTrajectory) {
  dist::MpiCommunicator world;
  SharedDirectory dir(world, "resume");
  Options const o = modes()[3].options;  // momentum, Nesterov, grafting, weight decay
  int const savers = world.size() > 1 ? world.size() - 1 : 1;
  auto params = initial_params<float>();
  {
    auto part = world.split(world.rank() < savers ? 0 : 1);
    if (world.rank() < savers) {
      DistributedShampoo<float> opt(*part, plan_for(savers), o);
      run_steps<float>(opt, params, 0, 3);
      save_checkpoint(opt, dir.path);
    }
  }
  // Ranks that did not save get the parameters from rank 0 (they are not optimizer state).
  for (auto& p : params) world.broadcast(std::as_writable_bytes(std::span(p)), 0);
  auto const expected = single_process<float>(o, 7);

  DistributedShampoo<float> resumed(world, plan_for(world.size()), o);
  load_checkpoint(resumed, dir.path);
  EXPECT_EQ(resumed.step_count(), 3);
  auto everywhere = params;
  run_steps<float>(resumed, everywhere, 3, 7);
  EXPECT_TRUE(same_bits(everywhere, expected));

  // And the other way: every rank saves, each rank alone resumes.
  SharedDirectory again(world, "resume-again");
  save_checkpoint(resumed, again.path);
  dist::SingleProcessCommunicator alone;
  DistributedShampoo<float> single(alone, plan_for(1), o);
  load_checkpoint(single, again.path);
  auto from_all = everywhere;
  run_steps<float>(single, from_all, 7, 9);
  EXPECT_TRUE(same_bits(from_all, single_process<float>(o, 9)));
}

TEST(DistributedShampooMpi, SavingWithGroupsWritesOneGroupsFiles) {
  dist::MpiCommunicator world;
  SharedDirectory dir(world, "groups");
  Options const o = modes()[2].options;
  DistributedShampoo<float> opt(world, plan_for(1), o, {1, DType::f32});
  auto params = initial_params<float>();
  run_steps<float>(opt, params, 0, 2);
  save_checkpoint(opt, dir.path);
  EXPECT_TRUE(std::filesystem::exists(dir.path / "rank_0.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir.path / "rank_1.safetensors"));
  DistributedShampoo<float> resumed(world, plan_for(world.size()), o);
  load_checkpoint(resumed, dir.path);
  run_steps<float>(resumed, params, 2, 4);
  EXPECT_TRUE(same_bits(params, single_process<float>(o, 4)));
}

TEST(DistributedShampooMpi, AMissingRankFileFailsTheLoadOnEveryRankWithNothingLoaded) {
  dist::MpiCommunicator world;
  SharedDirectory dir(world, "missing");
  DistributedShampoo<float> saver(world, plan_for(world.size()));
  auto params = initial_params<float>();
  run_steps<float>(saver, params, 0, 2);
  save_checkpoint(saver, dir.path);
  world.barrier();
  std::string const last = "rank_" + std::to_string(world.size() - 1) + ".safetensors";
  if (world.rank() == 0) std::filesystem::remove(dir.path / last);
  world.barrier();
  DistributedShampoo<float> opt(world, plan_for(world.size()));
  auto before = opt.state_dict();
  EXPECT_EQ(error_of([&] { load_checkpoint(opt, dir.path); }),
            "the checkpoint " + dir.path.string() + " is missing the state file " +
                (dir.path / last).string() + " of rank " + std::to_string(world.size() - 1) +
                " of " + std::to_string(world.size()) + "; nothing was loaded.");
  EXPECT_EQ(opt.state_dict(), before);
  EXPECT_EQ(opt.step_count(), 0);
}

TEST(DistributedShampooMpi, APlanForAnotherGroupSizeFailsOnEveryRank) {
  dist::MpiCommunicator world;
  index_t const wrong = world.size() + 1;
  EXPECT_EQ(error_of([&] { DistributedShampoo<float>(world, plan_for(wrong)); }),
            "the plan distributes its blocks over " + std::to_string(wrong) +
                " ranks but the groups here have " + std::to_string(world.size()) +
                " (num_trainers_per_group -1 of " + std::to_string(world.size()) +
                " ranks); make the plan with group size " + std::to_string(world.size()) + ".");
  world.barrier();
}

}  // namespace
