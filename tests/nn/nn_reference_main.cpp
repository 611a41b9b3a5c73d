// tessel_nn_reference: runs every nn kernel, forward and backward, on the inputs of a safetensors
// file and writes the outputs and gradients to another, for tests/python/test_nn_layers.py to
// compare with torch autograd. Usage: tessel_nn_reference in.safetensors out.safetensors
//
// Inputs (all floating tensors one dtype, F32 or F64; ids I64): x, dy (N, D); ln_weight,
// ln_bias, rms_weight (D); table (V, D); ids (N); a, b (N, D). Metadata "ln_eps" and, optionally,
// "rms_eps" (absent: torch's eps=None). Outputs: ln_y, ln_mean, ln_rstd, ln_dx, ln_dweight,
// ln_dbias; rms_y, rms_rstd, rms_dx, rms_dweight; emb_out, emb_dtable (the embedding's gradient
// from dy, into a zeroed table); gelu_y, gelu_dx (of x, from dy); swiglu_y, swiglu_da, swiglu_db
// (of a and b, from dy).
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <tessel/io/safetensors.hpp>
#include <tessel/nn.hpp>
#include <tessel/tensor/host_tensor.hpp>

namespace {

using namespace tessel;

template <class T>
struct Run {
  SafetensorsFile const& in;
  SafetensorsFile out{};

  // A host tensor holding the named input, with its shape from the file (rank R).
  template <std::size_t R, class U = T>
  auto input(std::string const& name) const {
    auto const& e = in.at(name);
    check(e.shape.size() == R, "tensor \"", name, "\" has rank ", e.shape.size(), "; expected ", R,
          ".");
    auto t = [&] {
      if constexpr (R == 1)
        return make_host_tensor<U>(make_shape(e.shape[0]));
      else
        return make_host_tensor<U>(make_shape(e.shape[0], e.shape[1]));
    }();
    auto const v = e.as<U>();
    for (std::size_t i = 0; i < v.size(); ++i) t[static_cast<index_t>(i)] = v[i];
    return t;
  }

  template <class Tensor>
  void output(std::string name, Tensor const& t) {
    std::vector<T> v(t.begin(), t.end());
    std::vector<std::int64_t> shape = to_vector(t.shape());
    out.tensors.push_back(make_safetensors_entry(std::move(name), std::move(shape), v));
  }

  template <class S>
  static auto zeros(S const& s) {
    return make_host_tensor<T>(s);
  }

  void run() {
    auto const x = input<2>("x");
    auto const dy = input<2>("dy");
    index_t const n = get<0>(x.shape()), d = get<1>(x.shape());
    auto const rows = make_shape(n);

    // LayerNorm
    auto const lw = input<1>("ln_weight");
    auto const lb = input<1>("ln_bias");
    auto y = zeros(x.shape()), dx = zeros(x.shape());
    auto mean = zeros(rows), rstd = zeros(rows), dw = zeros(lw.shape()), db = zeros(lw.shape());
    nn::layer_norm(y, mean, rstd, x, lw, lb, {.eps = std::stod(in.metadata.at("ln_eps"))});
    nn::layer_norm_backward(dx, dw, db, dy, x, lw, mean, rstd);
    output("ln_y", y), output("ln_mean", mean), output("ln_rstd", rstd);
    output("ln_dx", dx), output("ln_dweight", dw), output("ln_dbias", db);

    // RMSNorm
    auto const rw = input<1>("rms_weight");
    nn::RmsNormOptions options;
    if (auto const e = in.metadata.find("rms_eps"); e != in.metadata.end())
      options.eps = std::stod(e->second);
    nn::rms_norm(y, rstd, x, rw, options);
    nn::rms_norm_backward(dx, dw, dy, x, rw, rstd);
    output("rms_y", y), output("rms_rstd", rstd), output("rms_dx", dx), output("rms_dweight", dw);

    // Embedding
    auto const table = input<2>("table");
    auto const ids = input<1, std::int64_t>("ids");
    auto emb = zeros(make_shape(get<0>(ids.shape()), d));
    auto dtable = zeros(table.shape());
    nn::embedding(emb, ids, table);
    nn::embedding_backward(dtable, ids, dy);
    output("emb_out", emb), output("emb_dtable", dtable);

    // GELU and SwiGLU
    y = nn::gelu(x);
    dx = nn::gelu_backward(dy, x);
    output("gelu_y", y), output("gelu_dx", dx);
    auto const a = input<2>("a");
    auto const b = input<2>("b");
    auto da = zeros(a.shape()), dbb = zeros(a.shape());
    y = nn::swiglu(a, b);
    nn::swiglu_backward(da, dbb, dy, a, b);
    output("swiglu_y", y), output("swiglu_da", da), output("swiglu_db", dbb);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tessel_nn_reference in.safetensors out.safetensors\n");
    return 2;
  }
  try {
    SafetensorsFile const in = read_safetensors(argv[1]);
    SafetensorsFile out;
    if (in.at("x").dtype == DType::f64) {
      Run<double> r{in};
      r.run();
      out = std::move(r.out);
    } else {
      Run<float> r{in};
      r.run();
      out = std::move(r.out);
    }
    write_safetensors(argv[2], out);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tessel_nn_reference: %s\n", e.what());
    return 1;
  }
  return 0;
}
