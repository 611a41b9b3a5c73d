// Compile-time probe: the program a new user writes from docs/shampoo.md, a two-layer MLP's
// parameters stepped by Shampoo with Adam grafting, header-only, the family named by the type
// (Shampoo<float, RootInv>) so that only its code is compiled; -DTESSEL_PROBE_FAMILY=Soap makes it
// the SOAP one. docs/benchmarks.md ("Compile time of a Shampoo program") measures it with
// `g++ -std=c++20 -O2 -Iinclude -I/usr/include/eigen3 [-DTESSEL_BLAS=1] -c`.
#include <tessel/shampoo.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

#ifndef TESSEL_PROBE_FAMILY
#define TESSEL_PROBE_FAMILY RootInv
#endif

using namespace tessel;

int main() {
  // A 16 -> 32 -> 4 MLP: two weights and two biases.
  std::vector<std::vector<index_t>> const shapes{{32, 16}, {32}, {4, 32}, {4}};
  auto const plan = shampoo::make_plan(shampoo::plan_options(index_t{1024}, index_t{1}), shapes);
  shampoo::Options options;
  options.lr = 1e-3;
  options.grafting = shampoo::adam_grafting();
  options.precondition_frequency = 10;
  shampoo::Shampoo<float, shampoo::TESSEL_PROBE_FAMILY> opt(plan, options);
  std::vector<std::vector<float>> w, g;
  for (auto const& s : shapes) {
    index_t n = 1;
    for (index_t e : s) n *= e;
    w.emplace_back(static_cast<std::size_t>(n), 0.1f);
    g.emplace_back(static_cast<std::size_t>(n), 0.0f);
  }
  for (int step = 0; step < 20; ++step) {
    for (std::size_t p = 0; p < w.size(); ++p)
      for (std::size_t i = 0; i < w[p].size(); ++i)
        g[p][i] = std::sin(static_cast<float>(i + p + step)) * 0.01f;
    opt.step({w[0].data(), w[1].data(), w[2].data(), w[3].data()},
             {g[0].data(), g[1].data(), g[2].data(), g[3].data()});
  }
  std::printf("%g %g\n", w[0][0], w[3][1]);
}
