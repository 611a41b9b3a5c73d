// A GPT-2-style model's parameters in one flat buffer: their order, offsets, static shapes and
// GPT-2's names (those of Hugging Face's GPT-2 checkpoints: wte.weight, h.0.attn.c_attn.weight,
// ...). Linear weights are (in, out), as GPT-2's Conv1D stores them. ParamViews<Cfg, T> gives each
// parameter as a statically shaped view of the buffer; for_each_param walks them by name (the
// checkpoint, the optimizer's shapes, the PyTorch comparison).
#pragma once

#include <string>
#include <vector>

#include <tessel/tensor/tensor.hpp>

#include "config.hpp"

namespace gpt {

using tessel::make_shape;
using tessel::make_tensor;

// One block's parameters as views (P: T or T const).
template <class Cfg, class P>
struct BlockViews {
  static constexpr auto C = Cfg::channels;
  using C3 = Int<3 * C>;
  using C4 = Int<4 * C>;
  decltype(make_tensor(std::declval<P*>(), make_shape(C))) ln_1_weight, ln_1_bias;
  decltype(make_tensor(std::declval<P*>(), make_shape(C, C3{}))) c_attn_weight;
  decltype(make_tensor(std::declval<P*>(), make_shape(C3{}))) c_attn_bias;
  decltype(make_tensor(std::declval<P*>(), make_shape(C, C))) attn_proj_weight;
  decltype(make_tensor(std::declval<P*>(), make_shape(C))) attn_proj_bias, ln_2_weight, ln_2_bias;
  decltype(make_tensor(std::declval<P*>(), make_shape(C, C4{}))) fc_weight;
  decltype(make_tensor(std::declval<P*>(), make_shape(C4{}))) fc_bias;
  decltype(make_tensor(std::declval<P*>(), make_shape(C4{}, C))) mlp_proj_weight;
  decltype(make_tensor(std::declval<P*>(), make_shape(C))) mlp_proj_bias;

  explicit BlockViews(P* p, index_t const c = C)
      : ln_1_weight(make_tensor(p, make_shape(C))),
        ln_1_bias(make_tensor(p + c, make_shape(C))),
        c_attn_weight(make_tensor(p + 2 * c, make_shape(C, C3{}))),
        c_attn_bias(make_tensor(p + 2 * c + c * 3 * c, make_shape(C3{}))),
        attn_proj_weight(make_tensor(p + 5 * c + 3 * c * c, make_shape(C, C))),
        attn_proj_bias(make_tensor(p + 5 * c + 4 * c * c, make_shape(C))),
        ln_2_weight(make_tensor(p + 6 * c + 4 * c * c, make_shape(C))),
        ln_2_bias(make_tensor(p + 7 * c + 4 * c * c, make_shape(C))),
        fc_weight(make_tensor(p + 8 * c + 4 * c * c, make_shape(C, C4{}))),
        fc_bias(make_tensor(p + 8 * c + 8 * c * c, make_shape(C4{}))),
        mlp_proj_weight(make_tensor(p + 12 * c + 8 * c * c, make_shape(C4{}, C))),
        mlp_proj_bias(make_tensor(p + 12 * c + 12 * c * c, make_shape(C))) {
    static_assert(13 * C.value + 12 * C.value * C.value == Cfg::block_params);
  }
};

// Every parameter of the model as a view of the flat buffer at base (P: T or T const).
template <class Cfg, class P>
class ParamViews {
  static constexpr auto C = Cfg::channels;
  static constexpr index_t blocks_at = (Cfg::vocab + Cfg::context) * C;

 public:
  explicit ParamViews(P* base) : base_(base) {}

  auto wte() const { return make_tensor(base_, make_shape(Cfg::vocab, C)); }
  auto wpe() const { return make_tensor(base_ + Cfg::vocab * C, make_shape(Cfg::context, C)); }
  BlockViews<Cfg, P> block(index_t l) const {
    return BlockViews<Cfg, P>(base_ + blocks_at + l * Cfg::block_params);
  }
  auto ln_f_weight() const { return make_tensor(ln_f(), make_shape(C)); }
  auto ln_f_bias() const { return make_tensor(ln_f() + C, make_shape(C)); }

 private:
  P* ln_f() const { return base_ + blocks_at + Cfg::layers * Cfg::block_params; }
  P* base_;
};

// One parameter: its GPT-2 name, offset in the flat buffer and shape.
struct NamedParam {
  std::string name;
  index_t offset;
  std::vector<index_t> shape;
  index_t numel() const {
    index_t n = 1;
    for (index_t e : shape) n *= e;
    return n;
  }
};

// The model's parameters in buffer order, by GPT-2's names.
template <class Cfg>
std::vector<NamedParam> named_params() {
  index_t const C = Cfg::channels, V = Cfg::vocab, S = Cfg::context;
  std::vector<NamedParam> out;
  index_t at = 0;
  auto add = [&](std::string name, std::vector<index_t> shape) {
    NamedParam p{std::move(name), at, std::move(shape)};
    at += p.numel();
    out.push_back(std::move(p));
  };
  add("wte.weight", {V, C});
  add("wpe.weight", {S, C});
  for (index_t l = 0; l < Cfg::layers; ++l) {
    std::string const h = "h." + std::to_string(l) + ".";
    add(h + "ln_1.weight", {C});
    add(h + "ln_1.bias", {C});
    add(h + "attn.c_attn.weight", {C, 3 * C});
    add(h + "attn.c_attn.bias", {3 * C});
    add(h + "attn.c_proj.weight", {C, C});
    add(h + "attn.c_proj.bias", {C});
    add(h + "ln_2.weight", {C});
    add(h + "ln_2.bias", {C});
    add(h + "mlp.c_fc.weight", {C, 4 * C});
    add(h + "mlp.c_fc.bias", {4 * C});
    add(h + "mlp.c_proj.weight", {4 * C, C});
    add(h + "mlp.c_proj.bias", {C});
  }
  add("ln_f.weight", {C});
  add("ln_f.bias", {C});
  return out;
}

}  // namespace gpt
