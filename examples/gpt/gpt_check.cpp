// The GPT model's gradient against central finite differences, in float64, on a small
// configuration whose sequence length (5) is not a multiple of the attention tiles: for every
// named parameter, the analytic d loss / d p at a few entries must agree with
// (loss(p + h) - loss(p - h)) / 2h to 1e-6 relative. Also: two runs give the same bits, and
// float32 agrees with float64 to 1e-4. Exits 1 on any failure; the test runs it.
//
// `gpt_check IN OUT`: the same model as the C++ side of tests/python/test_gpt.py: the float64 (or
// float32: the model then runs in float32) parameters under GPT-2's names and int64 "tokens" and
// "targets" (2 x 5) from the safetensors file IN; the loss ("loss") and every parameter's gradient
// ("grad.<name>") into OUT.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <tessel/io/safetensors.hpp>

#include "model.hpp"

namespace {

using tessel::index_t;

using Cfg = gpt::Config<2, 2, 8, 11, 8>;  // 2 layers, 2 heads of 4, vocabulary 11, context 8
using Bt = gpt::Batch<2, 5>;

template <class T>
std::vector<T> random_params(unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, 0.3);
  std::vector<T> p(static_cast<std::size_t>(Cfg::num_params));
  for (auto& v : p) v = static_cast<T>(d(rng));
  // LayerNorm weights near 1, as trained models have them.
  for (auto const& np : gpt::named_params<Cfg>())
    if (np.name.find("ln_") != std::string::npos && np.name.ends_with(".weight"))
      for (index_t i = 0; i < np.numel(); ++i) p[static_cast<std::size_t>(np.offset + i)] += T(1);
  return p;
}

// The driver mode (see the top of the file), in T: the parameters' dtype in IN (F64 or F32).
template <class T>
int run_on_files(tessel::SafetensorsFile const& file, char const* out) {
  std::vector<T> params(static_cast<std::size_t>(Cfg::num_params));
  auto const named = gpt::named_params<Cfg>();
  for (auto const& np : named) {
    auto const values = file.at(np.name).as<T>();
    tessel::check(static_cast<index_t>(values.size()) == np.numel(), "gpt_check: ", np.name,
                  " has ", values.size(), " values, not ", np.numel(), ".");
    std::copy(values.begin(), values.end(), params.begin() + np.offset);
  }
  auto const to_ids = [&](char const* name) {
    auto const v = file.at(name).as<std::int64_t>();
    return std::vector<std::int32_t>(v.begin(), v.end());
  };
  auto const tokens = to_ids("tokens"), targets = to_ids("targets");
  gpt::Model<Cfg, Bt, T, tessel::exec::Serial> model;
  std::vector<T> grads(params.size());
  double const loss = model.forward_backward(params, grads, tokens, targets);
  tessel::SafetensorsFile result;
  result.tensors.push_back(tessel::make_safetensors_entry("loss", {}, std::vector<double>{loss}));
  for (auto const& np : named)
    result.tensors.push_back(tessel::make_safetensors_entry(
        "grad." + np.name, std::vector<std::int64_t>(np.shape.begin(), np.shape.end()),
        std::span<T const>(grads.data() + np.offset, static_cast<std::size_t>(np.numel()))));
  tessel::write_safetensors(out, result);
  return 0;
}

int run_on_files(char const* in, char const* out) {
  auto const file = tessel::read_safetensors(in);
  if (file.at("wte.weight").dtype == tessel::DType::f32) return run_on_files<float>(file, out);
  return run_on_files<double>(file, out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3) return run_on_files(argv[1], argv[2]);
  using tessel::index_t;
  std::vector<std::int32_t> tokens(10), targets(10);
  std::mt19937 rng(7);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng() % 11);
  for (auto& t : targets) t = static_cast<std::int32_t>(rng() % 11);

  gpt::Model<Cfg, Bt, double, tessel::exec::Serial> model;
  auto params = random_params<double>(1);
  std::vector<double> grads(params.size());
  double const loss = model.forward_backward(params, grads, tokens, targets);
  std::printf("loss %.12f (log 11 = %.6f)\n", loss, std::log(11.0));

  int failures = 0;
  double worst = 0.0;
  for (auto const& np : gpt::named_params<Cfg>()) {
    for (index_t k = 0; k < 3 && k < np.numel(); ++k) {
      auto const i = static_cast<std::size_t>(np.offset + (k * 7919) % np.numel());
      double const h = 1e-5, keep = params[i];
      params[i] = keep + h;
      double const up = model.loss(params, tokens, targets);
      params[i] = keep - h;
      double const down = model.loss(params, tokens, targets);
      params[i] = keep;
      double const numeric = (up - down) / (2 * h);
      double const error = std::abs(numeric - grads[i]) / std::max(1e-4, std::abs(numeric));
      worst = std::max(worst, error);
      if (error > 1e-6) {
        ++failures;
        std::printf("%s[%zu]: analytic %.10g, finite difference %.10g\n", np.name.c_str(),
                    i - static_cast<std::size_t>(np.offset), grads[i], numeric);
      }
    }
  }
  std::printf("finite differences: worst relative error %.2e over %zu parameters\n", worst,
              gpt::named_params<Cfg>().size());

  std::vector<double> again(params.size());
  if (model.forward_backward(params, again, tokens, targets) != loss || again != grads) {
    ++failures;
    std::printf("a second run gave other bits\n");
  }

  gpt::Model<Cfg, Bt, float, tessel::exec::Serial> model32;
  std::vector<float> const params32(params.begin(), params.end());
  std::vector<float> grads32(params.size());
  double const loss32 = model32.forward_backward(params32, grads32, tokens, targets);
  double scale = 0.0, diff = 0.0;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    scale = std::max(scale, std::abs(grads[i]));
    diff = std::max(diff, std::abs(grads[i] - static_cast<double>(grads32[i])));
  }
  std::printf("float32: loss %.7f, largest gradient difference %.2e of %.2e\n", loss32, diff,
              scale);
  if (std::abs(loss32 - loss) > 1e-4 * loss || diff > 1e-4 * scale) ++failures;
  std::printf(failures ? "FAILED (%d)\n" : "ok\n", failures);
  return failures ? 1 : 0;
}
