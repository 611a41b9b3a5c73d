// tessel_attention_reference IN.safetensors OUT.safetensors [TILE_BUDGET]: causal attention's
// forward and backward over the tensors of IN — q, k, v and grad_out, each (B, T, heads, head_dim),
// all f64 or all f32 — written to OUT as out, lse (B, heads, T), grad_q, grad_k and grad_v in the
// same dtype. TILE_BUDGET (bytes, default the plan's) makes tiles shorter than T. The driver of
// tests/python/test_attention.py, which compares it with PyTorch.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <tessel/exec/host.hpp>
#include <tessel/io/safetensors.hpp>
#include <tessel/nn/attention.hpp>

namespace {

using namespace tessel;

template <class C>
SafetensorsFile run(SafetensorsFile const& in, index_t budget) {
  auto const& q_entry = in.at("q");
  check(q_entry.shape.size() == 4, "q must have shape (B, T, heads, head_dim), got rank ",
        q_entry.shape.size(), ".");
  index_t const b = q_entry.shape[0], t = q_entry.shape[1], h = q_entry.shape[2],
                d = q_entry.shape[3];
  auto const shape = make_shape(b, t, h, d);
  auto load = [&](char const* name) {
    auto const& e = in.at(name);
    check(e.shape == q_entry.shape, name, " has shape ", detail::shape_text(e.shape), " but q has ",
          detail::shape_text(q_entry.shape), ".");
    std::vector<C> values = e.as<C>();
    auto tensor = make_host_tensor<C>(shape);
    for (index_t i = 0; i < b * t * h * d; ++i) tensor[i] = values[static_cast<std::size_t>(i)];
    return tensor;
  };
  auto q = load("q"), k = load("k"), v = load("v"), go = load("grad_out");
  auto out = make_host_tensor<C>(shape), dq = make_host_tensor<C>(shape),
       dk = make_host_tensor<C>(shape), dv = make_host_tensor<C>(shape);
  auto lse = make_host_tensor<C>(make_shape(b, h, t));
  auto const plan = budget > 0 ? nn::make_attention_plan<C>(b, h, t, d, budget)
                               : nn::make_attention_plan<C>(b, h, t, d);
  nn::attention_forward(plan, q, k, v, out, lse);
  nn::attention_backward(plan, nn::AttentionSaved{q, k, v, out, lse}, go,
                         nn::AttentionGrads{dq, dk, dv});
  SafetensorsFile result;
  auto add = [&](char const* name, auto const& tensor, std::vector<std::int64_t> dims) {
    std::vector<C> values(tensor.begin(), tensor.end());
    result.tensors.push_back(make_safetensors_entry(name, std::move(dims), values));
  };
  add("out", out, q_entry.shape);
  add("lse", lse, {b, h, t});
  add("grad_q", dq, q_entry.shape);
  add("grad_k", dk, q_entry.shape);
  add("grad_v", dv, q_entry.shape);
  result.metadata["q_tile"] = std::to_string(plan.q_tile);
  result.metadata["kv_tile"] = std::to_string(plan.kv_tile);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr,
                 "usage: tessel_attention_reference IN.safetensors OUT.safetensors "
                 "[TILE_BUDGET]\n");
    return 1;
  }
  try {
    SafetensorsFile const in = read_safetensors(argv[1]);
    index_t const budget = argc == 4 ? std::atoll(argv[3]) : 0;
    DType const dtype = in.at("q").dtype;
    check(dtype == DType::f32 || dtype == DType::f64, "q must be f32 or f64, got ",
          dtype_name(dtype), ".");
    write_safetensors(argv[2],
                      dtype == DType::f64 ? run<double>(in, budget) : run<float>(in, budget));
  } catch (std::exception const& e) {
    std::fprintf(stderr, "tessel_attention_reference: %s\n", e.what());
    return 1;
  }
  return 0;
}
