// Compile-time probe: a small Shampoo program with a run-time plan (two layers, three steps), as
// a user writes it first. Built header-only it compiles the whole step; built with
// -DTESSEL_SHAMPOO_PREBUILT=1 and linked to tessel::shampoo_prebuilt it compiles none of it
// (docs/benchmarks.md, "Compile time of a Shampoo program").
#include <tessel/shampoo.hpp>

#include <cstdio>
#include <vector>

using namespace tessel;

int main() {
  auto const plan = shampoo::make_plan(shampoo::plan_options(index_t{24}, index_t{1}),
                                       std::vector<std::vector<index_t>>{{32, 17}, {4, 33}});
  shampoo::Shampoo<float> opt(plan, {});
  std::vector<float> w(32 * 17, 0.5f), g(32 * 17, 0.1f), w2(4 * 33, 0.5f), g2(4 * 33, 0.2f);
  for (int i = 0; i < 3; ++i) opt.step({w.data(), w2.data()}, {g.data(), g2.data()});
  std::printf("%g %g\n", w[0], w2[5]);
}
