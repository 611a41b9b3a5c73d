// Compile-time probe: a small FLCE program as a user writes it first (the umbrella header, one
// flce::forward with run-time shapes on the host, loss and both gradients), for the compile
// times of docs/benchmarks.md ("Compile time of a Shampoo program", issue #20's FLCE program).
#include <tessel/tessel.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

using namespace tessel;

int main() {
  index_t const rows = 8, hidden = 16, vocab = 50;
  std::vector<float> x(rows * hidden, 0.25f), w(vocab * hidden, 0.125f);
  std::vector<std::int64_t> y(rows, 3);
  float loss = 0;
  std::vector<float> dx(x.size()), dw(w.size());
  flce::forward(make_tensor(x.data(), make_shape(rows, hidden)),
                make_tensor(w.data(), make_shape(vocab, hidden)),
                make_tensor(y.data(), make_shape(rows)), {},
                {.loss = make_tensor(&loss, make_shape(1)),
                 .grad_input = make_tensor(dx.data(), make_shape(rows, hidden)),
                 .grad_weight = make_tensor(dw.data(), make_shape(vocab, hidden))});
  std::printf("%g %g %g\n", loss, dx[0], dw[0]);
}
