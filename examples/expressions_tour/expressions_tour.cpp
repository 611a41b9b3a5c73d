// A tour of tessel expressions: building them, broadcasting, reductions, logsumexp, softmax,
// dtypes, aliasing, executors and the kernel bodies. docs/expressions.md shows this output.
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include <tessel/tessel.hpp>

using namespace tessel;

// Prints a rank-1 or rank-2 tensor, one row per line.
template <class T>
void show(char const* name, T const& t) {
  std::printf("%s:\n", name);
  auto const s = detail::logical_shape(t);
  index_t const rows = s.size() == 2 ? s[0] : 1;
  index_t const cols = s.size() == 2 ? s[1] : (s.size() == 1 ? s[0] : 1);
  for (index_t r = 0; r < rows; ++r) {
    std::printf(" ");
    for (index_t c = 0; c < cols; ++c) std::printf(" %9.4g", double(load_element(t[r * cols + c])));
    if (r + 1 < rows) std::printf("\n");
  }
  std::printf("\n");
}

int main() {
  std::printf("-- building expressions\n");
  auto x = make_host_tensor<float>(make_shape(2, 3));
  for (index_t i = 0; i < 6; ++i) x[i] = float(i);
  auto y = make_host_tensor<float>(make_shape(2, 3));
  y = 2.0f * x + 1.0f;  // one pass, no temporaries
  show("2x+1", y);
  auto squares = x * x;  // lazy: nothing is computed yet
  x(0, 0) = 10.0f;
  y = squares;  // evaluated now, with the current x
  show("x*x", y);
  x(0, 0) = 0.0f;

  std::printf("-- broadcasting\n");
  auto col = make_host_tensor<float>(make_shape(2, 1));
  auto row = make_host_tensor<float>(make_shape(3));
  col(0, 0) = 100.0f, col(1, 0) = 200.0f;
  row(0) = 1.0f, row(1) = 2.0f, row(2) = 3.0f;
  y = col + row;  // (2,1) + (3) -> (2,3)
  show("col+row", y);
  auto wrong = make_host_tensor<float>(make_shape(3, 2));
  try {
    y = x + wrong;
  } catch (Error const& e) {
    std::printf("error: %s\n", e.what());
  }

  std::printf("-- reductions\n");
  auto rows = make_host_tensor<float>(make_shape(2));
  rows = sum(x, mode<1>);
  show("sum(x, mode<1>)", rows);
  auto kept = make_host_tensor<float>(make_shape(1, 3));
  kept = max(x, mode<0>, keep);
  show("max(x, mode<0>, keep)", kept);
  auto where_max = make_host_tensor<index_t>(make_shape(2));
  where_max = argmax(x, mode<-1>);
  show("argmax(x, mode<-1>)", where_max);
  std::printf("mean(x) = %g, sum(x * x) = %g\n", double(item(mean(x))), double(item(sum(x * x))));

  std::printf("-- logsumexp\n");
  auto big = make_host_tensor<float>(make_shape(3));
  big(0) = 1e4f, big(1) = 1e4f, big(2) = -std::numeric_limits<float>::infinity();
  std::printf("logsumexp(big) = %.3f, log(sum(exp(big))) = %g\n", double(item(logsumexp(big))),
              double(item(log(sum(exp(big))))));

  std::printf("-- softmax\n");
  y = softmax(x);  // along the last mode
  show("softmax(x)", y);
  y = exp(x - logsumexp(x, mode<1>, keep));  // the same, composed
  show("exp(x - lse)", y);
  y = log_softmax(x, mode<0>);
  show("log_softmax(x, mode<0>)", y);

  std::printf("-- dtypes\n");
  auto h = make_host_tensor<half>(make_shape(3));
  h = row / 3.0f;  // computed in float, stored rounded to half
  show("half(row / 3)", h);
  rows = sum(cast<bfloat16>(x) * 1.001f, mode<1>);
  show("sum(bf16(x) * 1.001)", rows);

  std::printf("-- aliasing\n");
  auto sq = make_host_tensor<int>(make_shape(3, 3));
  for (index_t i = 0; i < 9; ++i) sq[i] = int(i);
  sq = transpose(sq);  // reads what it writes: evaluated into a temporary first
  show("transpose(sq)", sq);

  std::printf("-- executors\n");
  assign(y, tanh(x), exec::OpenMP{.threads = 2});
  show("tanh(x)", y);
  assign(y(_, 0), row(range(0, 2)), exec::Serial{});  // into a column view
  show("column 0 <- row[0:2]", y);
  std::printf("OpenMP available: %s\n", exec::openmp_available() ? "yes" : "no");

  std::printf("-- kernel bodies\n");
  std::vector<float> v = {1.0f, 2.0f, 3.0f};
  auto at = [&](index_t i) { return v[static_cast<std::size_t>(i)]; };
  std::printf("row_logsumexp_body = %.6f\n",
              double(exec::row_logsumexp_body(exec::SequentialContext{}, at, 3)));
  return 0;
}
