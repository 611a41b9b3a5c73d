// Distributed Shampoo across MPI ranks: a linear model y = W x + b fitted to a random teacher,
// with each rank keeping the optimizer state of its own blocks and one all-gather of updates per
// step. Run it with `mpirun -np 3 shampoo_distributed` (any number of ranks works; ctest runs it
// on 3). It ends by checking the parameters against the single-process Shampoo on the same
// gradients, bit for bit, and by resuming from a checkpoint saved on all ranks on one rank.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <unistd.h>

#include <tessel/dist/mpi.hpp>
#include <tessel/dist/single_process.hpp>
#include <tessel/shampoo.hpp>
#include <tessel/shampoo/distributed/checkpoint.hpp>

using namespace tessel;
using namespace tessel::literals;

constexpr index_t in = 12, out = 16, batch = 64;

struct Problem {
  std::vector<float> x, y;  // (in, batch), (out, batch)
  Problem() : x(in * batch), y(out * batch) {
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<float> teacher(out * in), bias(out);
    for (auto* v : {&x, &teacher, &bias})
      for (auto& e : *v) e = n(rng);
    for (index_t o = 0; o < out; ++o)
      for (index_t s = 0; s < batch; ++s) {
        float acc = bias[o];
        for (index_t i = 0; i < in; ++i) acc += teacher[o * in + i] * x[i * batch + s];
        y[o * batch + s] = acc;
      }
  }
  // Loss 0.5 * mean ||W x + b - y||^2 and its gradients. In data-parallel training each rank's
  // gradients come from an all-reduce; here every rank computes the whole batch.
  float loss(std::vector<float> const& w, std::vector<float> const& b, std::vector<float>& gw,
             std::vector<float>& gb) const {
    std::fill(gw.begin(), gw.end(), 0.0f);
    std::fill(gb.begin(), gb.end(), 0.0f);
    float total = 0.0f;
    for (index_t s = 0; s < batch; ++s)
      for (index_t o = 0; o < out; ++o) {
        float r = b[o] - y[o * batch + s];
        for (index_t i = 0; i < in; ++i) r += w[o * in + i] * x[i * batch + s];
        total += 0.5f * r * r / batch;
        gb[o] += r / batch;
        for (index_t i = 0; i < in; ++i) gw[o * in + i] += r * x[i * batch + s] / batch;
      }
    return total;
  }
};

// Trains `steps` steps from `first` with any optimizer that has step(params, grads).
template <class Optimizer>
float train(Optimizer& opt, Problem const& p, std::vector<float>& w, std::vector<float>& b,
            int first, int steps, bool print) {
  std::vector<float> gw(w.size()), gb(b.size());
  float loss = 0.0f;
  for (int t = first; t < first + steps; ++t) {
    loss = p.loss(w, b, gw, gb);
    if (print && (t % 10 == 0)) std::printf("step %2d  loss %.4f\n", t, loss);
    opt.step({std::span<float>(w), std::span<float>(b)},
             {std::span<float const>(gw), std::span<float const>(gb)});
  }
  return loss;
}

int main(int argc, char** argv) {
  dist::MpiSession session(&argc, &argv);
  dist::MpiCommunicator world;
  bool const root = world.rank() == 0;

  // Blocks of at most 8 per mode, distributed over all ranks (group size = number of ranks).
  auto plan = shampoo::make_plan(shampoo::plan_options(8_c, 1_c, world.size()),
                                 make_shape(Int<out>{}, Int<in>{}), make_shape(Int<out>{}));
  shampoo::Options options;
  options.lr = 0.1;
  options.epsilon = 1e-8;
  options.grafting = shampoo::adam_grafting();
  shampoo::DistributedShampoo<float> opt(world, plan, options);

  // Who owns what: each rank's (bytes sent, blocks owned) gathered to rank 0, which prints them.
  std::size_t const nb = plan.num_blocks();
  std::vector<long> mine(nb + 2, -1), all(mine.size() * static_cast<std::size_t>(world.size()));
  mine[0] = static_cast<long>(opt.sent_bytes());
  mine[1] = static_cast<long>(opt.owned_blocks().size());
  for (std::size_t k = 0; k < opt.owned_blocks().size(); ++k) mine[k + 2] = opt.owned_blocks()[k];
  world.all_gather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all)));
  for (int r = 0; root && r < world.size(); ++r) {
    long const* row = all.data() + static_cast<std::size_t>(r) * mine.size();
    std::printf("rank %d owns blocks", r);
    for (long k = 0; k < row[1]; ++k) std::printf(" %ld", row[k + 2]);
    std::printf(" (%ld of %zu update bytes)\n", row[0], opt.exchanged_bytes());
  }

  Problem const problem;
  std::vector<float> w(out * in, 0.0f), b(out, 0.0f);
  train(opt, problem, w, b, 0, 40, root);
  long id = getpid();  // rank 0's process id names the checkpoint directory of this run
  world.broadcast(std::as_writable_bytes(std::span(&id, 1)), 0);
  auto const dir =
      std::filesystem::temp_directory_path() / ("tessel-shampoo-distributed-" + std::to_string(id));
  save_checkpoint(opt, dir);
  if (root) {
    std::ifstream index(dir / "index.json");
    std::printf("index.json: %s", std::string(std::istreambuf_iterator<char>(index), {}).c_str());
  }
  std::vector<float> w40 = w, b40 = b;
  float const loss = train(opt, problem, w, b, 40, 20, root);

  // The same 60 steps in one process, and 20 steps resumed on one rank from the checkpoint.
  shampoo::Shampoo<float> single(shampoo::with_group_size(plan, 1), options);
  std::vector<float> ws(out * in, 0.0f), bs(out, 0.0f);
  train(single, problem, ws, bs, 0, 60, false);
  bool const same = std::memcmp(ws.data(), w.data(), w.size() * sizeof(float)) == 0 &&
                    std::memcmp(bs.data(), b.data(), b.size() * sizeof(float)) == 0;
  dist::SingleProcessCommunicator alone;
  shampoo::DistributedShampoo<float> resumed(alone, shampoo::with_group_size(plan, 1), options);
  load_checkpoint(resumed, dir);
  train(resumed, problem, w40, b40, 40, 20, false);
  bool const resumed_same = std::memcmp(w40.data(), w.data(), w.size() * sizeof(float)) == 0;
  world.barrier();
  if (root) {
    std::filesystem::remove_all(dir);
    std::printf("final loss %.4f on %d ranks\n", loss, world.size());
    std::printf("bit-identical to one process: %s\n", same ? "yes" : "no");
    std::printf("resumed on 1 rank from the %d-rank checkpoint: %s\n", world.size(),
                resumed_same ? "same parameters" : "different parameters");
  }
  return same && resumed_same ? 0 : 1;
}
