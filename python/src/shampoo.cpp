// tessel._tessel's Shampoo: the host optimizer (GroupedShampoo<float/double>, one Shampoo over a
// run-time plan per parameter group), its blocking plan and the core's merge_small_dims and
// multi_dim_split, for tessel.torch.Shampoo and tessel.plan. Parameters and gradients are read
// and written where they are (DLPack views, no copy); options are validated by tessel, whose
// sentences become ValueError. The state dictionary crosses as (key path, dtype name, shape,
// bytes) entries, so every factor dtype and the bool/int64 scalars round-trip bit for bit.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arrays.hpp"

#include <tessel/core/merge_small_dims.hpp>
#include <tessel/core/multi_dim_split.hpp>
#include <tessel/core/shape.hpp>
#include <tessel/core/warning.hpp>
#include <tessel/shampoo/options.hpp>
#include <tessel/shampoo/param_groups.hpp>
#include <tessel/shampoo/plan/plan.hpp>

namespace tessel_python {

namespace {

namespace sh = tessel::shampoo;
using Shape = std::vector<index_t>;

std::string shape_text(Shape const& s) {
  return tessel::detail::shape_text(s);
}

// ---- options ----

// The value of `values` whose name (names[i] names values[i]) is `text`, or a sentence listing
// the valid names. Python spells the enumerations whose tessel names are prose (preconditioners,
// methods) in snake_case, given here as `names`.
template <class E, std::size_t N>
E parse_choice(std::string_view text, char const* option, std::array<E, N> const& values,
               std::array<std::string_view, N> const& names) {
  std::string valid;
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return values[i];
    valid += sentence(i == 0 ? "" : i + 1 == N ? " and " : ", ", names[i]);
  }
  refuse(sentence("unknown ", option, " \"", text, "\"; valid values are ", valid, "."));
}

// The same with the names a tessel function gives (weight_decay_name, grafting_name).
template <class E, std::size_t N, class Name>
E parse_choice(std::string_view text, char const* option, std::array<E, N> const& values,
               Name name) {
  std::array<std::string_view, N> names;
  for (std::size_t i = 0; i < N; ++i) names[i] = name(values[i]);
  return parse_choice(text, option, values, names);
}

// Distributed Shampoo's inverse_exponent_override: {order: exponent or {dim: exponent}}.
sh::InverseExponentOverride exponent_override(nb::handle value) {
  constexpr char const* key = "inverse_exponent_override";
  sh::InverseExponentOverride out;
  if (value.is_none()) return out;
  for (auto [order, e] : cast_option<nb::dict>(value, key)) {
    auto& entry = out[cast_option<index_t>(order, key)];
    if (nb::isinstance<nb::dict>(e)) {
      std::map<index_t, double> per_dim;
      for (auto [dim, x] : nb::cast<nb::dict>(e))
        per_dim[cast_option<index_t>(dim, key)] = cast_option<double>(x, key);
      entry = std::move(per_dim);
    } else {
      entry = cast_option<double>(e, key);
    }
  }
  return out;
}

// Distributed Shampoo's ignored_basis_change_dims: {order: [dims]}.
sh::IgnoredBasisChangeDims ignored_dims(nb::handle value) {
  constexpr char const* key = "ignored_basis_change_dims";
  sh::IgnoredBasisChangeDims out;
  if (value.is_none()) return out;
  for (auto [order, dims] : cast_option<nb::dict>(value, key))
    out[cast_option<index_t>(order, key)] = cast_option<std::vector<index_t>>(dims, key);
  return out;
}

// Distributed Shampoo's scale_by_dims_fn, evaluated by tessel.torch (Python, with the GIL, where
// its exceptions belong) for the (d_in, d_out) of every 2-D block of the group's plan: the C++
// step looks the scale up instead of calling back into Python. None: no scaling.
std::function<double(index_t, index_t)> scale_by_dims(nb::handle value) {
  constexpr char const* key = "scale_by_dims";
  if (value.is_none()) return {};
  std::map<std::pair<index_t, index_t>, double> table;
  for (auto [dims, scale] : cast_option<nb::dict>(value, key)) {
    auto const d = cast_option<std::array<index_t, 2>>(dims, key);
    table[{d[0], d[1]}] = cast_option<double>(scale, key);
  }
  return [table = std::move(table)](index_t d_in, index_t d_out) {
    auto const it = table.find({d_in, d_out});
    if (it == table.end())
      tessel::detail::throw_error(sentence("scale_by_dims_fn was not evaluated for d_in ", d_in,
                                           " and d_out ", d_out, ", a block the plan lacks."));
    return it->second;
  };
}

// math.inf (None here) is Distributed Shampoo's "no limit", tessel's shampoo::infinite.
index_t dim_or_infinite(std::optional<index_t> v) {
  return v ? *v : sh::infinite;
}

// One parameter group as tessel.torch.Shampoo describes it: its parameters' indices and its
// options under Distributed Shampoo's names (tessel.torch fills every key).
sh::ParamGroup param_group(std::vector<index_t> params, nb::dict const& d) {
  sh::Options o;
  o.lr = dict_option<double>(d, "lr");
  o.beta1 = dict_option<double>(d, "beta1");
  o.beta2 = dict_option<double>(d, "beta2");
  o.beta3 = dict_option<double>(d, "beta3");
  o.epsilon = dict_option<double>(d, "epsilon");
  o.momentum = dict_option<double>(d, "momentum");
  o.dampening = dict_option<double>(d, "dampening");
  o.use_nesterov = dict_option<bool>(d, "use_nesterov");
  o.weight_decay = dict_option<double>(d, "weight_decay");
  o.weight_decay_type =
      parse_choice(dict_option<std::string>(d, "weight_decay_type"), "weight_decay_type",
                   std::array{sh::WeightDecayType::decoupled, sh::WeightDecayType::l2,
                              sh::WeightDecayType::corrected, sh::WeightDecayType::independent},
                   sh::weight_decay_name);
  o.precondition_frequency = dict_option<index_t>(d, "precondition_frequency");
  o.start_preconditioning_step = dict_option<index_t>(d, "start_preconditioning_step");
  o.use_bias_correction = dict_option<bool>(d, "use_bias_correction");
  // Each method with its defaults (RMSprop's beta2 0.99, Adam's 0.999); None keeps them.
  o.grafting =
      parse_choice(dict_option<std::string>(d, "grafting"), "grafting",
                   std::array{sh::no_grafting(), sh::sgd_grafting(), sh::adagrad_grafting(),
                              sh::rmsprop_grafting(), sh::adam_grafting()},
                   [](sh::GraftingConfig const& c) { return sh::grafting_name(c.type); });
  if (auto beta2 = dict_option<std::optional<double>>(d, "grafting_beta2"))
    o.grafting.beta2 = *beta2;
  o.grafting.epsilon = dict_option<double>(d, "grafting_epsilon");
  o.grafting.drop_weighting_factor_on_gsquare =
      dict_option<bool>(d, "grafting_drop_weighting_factor_on_gsquare");
  o.preconditioner = parse_choice(
      dict_option<std::string>(d, "preconditioner"), "preconditioner",
      std::array{sh::PreconditionerType::shampoo, sh::PreconditionerType::eigendecomposed,
                 sh::PreconditionerType::eigenvalue_corrected,
                 sh::PreconditionerType::spectral_descent, sh::PreconditionerType::sign_descent},
      {"shampoo", "eigendecomposed", "eigenvalue_corrected", "spectral_descent", "sign_descent"});
  o.factor_matrix_dtype = tessel::parse_dtype(dict_option<std::string>(d, "factor_matrix_dtype"));
  o.use_symmetric_packing = dict_option<bool>(d, "use_symmetric_packing");
  o.keep_rotated_filtered_grad = dict_option<bool>(d, "keep_rotated_filtered_grad");
  o.inverse_exponent_override = exponent_override(d["inverse_exponent_override"]);
  o.ignored_basis_change_dims = ignored_dims(d["ignored_basis_change_dims"]);
  o.use_trace_scaling = dict_option<bool>(d, "use_trace_scaling");
  o.trace_scaling_exponent = dict_option<double>(d, "trace_scaling_exponent");
  o.drop_weighting_factor_on_gsquare = dict_option<bool>(d, "drop_weighting_factor_on_gsquare");
  o.num_tolerated_failed_amortized_computations =
      dict_option<index_t>(d, "num_tolerated_failed_amortized_computations");
  o.kl_shampoo = dict_option<bool>(d, "kl_shampoo");
  o.root.eigendecomposition.method =
      parse_choice(dict_option<std::string>(d, "eigendecomposition"), "eigendecomposition",
                   std::array{sh::EigendecompositionMethod::eigh, sh::EigendecompositionMethod::qr},
                   {"eigh", "qr"});
  o.root.eigendecomposition.tolerance = dict_option<double>(d, "eigendecomposition_tolerance");
  o.root.eigendecomposition.max_iterations = dict_option<index_t>(d, "qr_max_iterations");
  o.orthogonalization = parse_choice(
      dict_option<std::string>(d, "orthogonalization"), "orthogonalization",
      std::array{sh::OrthogonalizationMethod::newton_schulz, sh::OrthogonalizationMethod::svd},
      {"newton_schulz", "svd"});
  o.svd.scale_by_nuclear_norm = dict_option<bool>(d, "svd_scale_by_nuclear_norm");
  o.newton_schulz.num_iterations = dict_option<index_t>(d, "newton_schulz_num_iterations");
  auto const [a, b, c] = dict_option<std::array<double, 3>>(d, "newton_schulz_coefficients");
  o.newton_schulz.a = a;
  o.newton_schulz.b = b;
  o.newton_schulz.c = c;
  // Distributed Shampoo's scale_by_dims_fn belongs to the orthogonalization config in use.
  auto& scale = o.orthogonalization == sh::OrthogonalizationMethod::svd
                    ? o.svd.scale_by_dims
                    : o.newton_schulz.scale_by_dims;
  scale = scale_by_dims(d["scale_by_dims"]);
  o.root.method = parse_choice(dict_option<std::string>(d, "root_method"), "root_method",
                               std::array{sh::RootMethod::eigen, sh::RootMethod::coupled_newton},
                               {"eigen", "coupled_newton"});
  o.root.coupled_newton.max_iterations = dict_option<index_t>(d, "coupled_newton_max_iterations");
  o.root.coupled_newton.tolerance = dict_option<double>(d, "coupled_newton_tolerance");
  o.root.eigen.retry_double_precision = dict_option<bool>(d, "retry_double_precision");
  o.root.eigen.perturb_before_computation = dict_option<bool>(d, "perturb_before_computation");
  o.root.eigen.pseudo_inverse = dict_option<bool>(d, "pseudo_inverse");
  o.root.eigen.rank_atol = dict_option<double>(d, "rank_atol");
  o.root.eigen.rank_rtol = dict_option<double>(d, "rank_rtol");
  o.averaging.type =
      parse_choice(dict_option<std::string>(d, "iterate_averaging"), "iterate_averaging",
                   std::array{sh::AveragingType::none, sh::AveragingType::generalized_primal,
                              sh::AveragingType::schedule_free},
                   {"none", "generalized_primal", "schedule_free"});
  o.averaging.eval_interp_coeff = dict_option<double>(d, "eval_interp_coeff");
  o.averaging.train_interp_coeff = dict_option<double>(d, "train_interp_coeff");
  o.averaging.eval_coeff_lr_power = dict_option<double>(d, "eval_coeff_lr_power");
  return sh::ParamGroup{
      std::move(params), std::move(o),
      dim_or_infinite(dict_option<std::optional<index_t>>(d, "max_preconditioner_dim")),
      dim_or_infinite(dict_option<std::optional<index_t>>(d, "target_parameter_dimensionality"))};
}

// Runs `make` with tessel's warnings collected, then raises each as a Python UserWarning: raised
// from inside the handler, a warning filter set to "error" would throw through tessel's
// constructor.
template <class F>
auto with_python_warnings(F&& make) {
  std::vector<std::string> sentences;
  auto previous =
      tessel::set_warning_handler([&](std::string_view s) { sentences.emplace_back(s); });
  struct Restore {
    tessel::WarningHandler& previous;
    ~Restore() { tessel::set_warning_handler(std::move(previous)); }
  } restore{previous};
  auto result = make();
  for (auto const& s : sentences)
    if (PyErr_WarnEx(PyExc_UserWarning, s.c_str(), 2) < 0) throw nb::python_error();
  return result;
}

// ---- the optimizer ----

// Whether `a` is C-contiguous (extents of 1 may have any stride, as in DLPack from PyTorch).
template <class Array>
bool row_major(Array const& a) {
  std::int64_t expected = 1;
  for (std::size_t k = a.ndim(); k-- > 0;) {
    if (a.shape(k) != 1 && a.stride(k) != expected) return false;
    expected *= static_cast<std::int64_t>(a.shape(k));
  }
  return true;
}

template <class Array>
Shape shape_of(Array const& a) {
  Shape s(a.ndim());
  for (std::size_t k = 0; k < s.size(); ++k) s[k] = static_cast<index_t>(a.shape(k));
  return s;
}

// What the C++ step takes as spans and cannot see on Python objects: the device, the dtype,
// contiguity and the shape (the step itself checks only element counts).
template <class T, class Array>
void check_step_array(Array const& a, std::string const& name, Shape const& shape) {
  check_host(a, name);
  if (dtype_of(a) != tessel::dtype_of_v<T>)
    refuse(sentence(name, " has dtype ", dtype_text(a), " but the optimizer steps ",
                    tessel::dtype_name(tessel::dtype_of_v<T>),
                    " parameters (its parameters' dtype)."));
  if (shape_of(a) != shape)
    refuse(sentence(name, " has shape ", shape_text(shape_of(a)), " but the parameter has shape ",
                    shape_text(shape), "."));
  if (!row_major(a))
    refuse(sentence(name, " is not contiguous (shape ", shape_text(shape), ", strides ",
                    shape_text(Shape(a.stride_ptr(), a.stride_ptr() + a.ndim())),
                    "); tessel's Shampoo reads and writes row-major memory in place."));
}

template <class T>
class Optimizer {
 public:
  Optimizer(std::vector<Shape> shapes, nb::list groups) : shapes_(std::move(shapes)) {
    std::vector<sh::ParamGroup> pgs;
    for (nb::handle g : groups) {
      auto pair = nb::cast<nb::tuple>(g);
      pgs.push_back(
          param_group(nb::cast<std::vector<index_t>>(pair[0]), nb::cast<nb::dict>(pair[1])));
    }
    shampoo_ = with_python_warnings(
        [&] { return std::make_unique<sh::GroupedShampoo<T>>(shapes_, std::move(pgs)); });
  }

  // params[i] and grads[i]: parameter i's tensor (updated in place) and its gradient, or None
  // (the parameter's blocks are skipped).
  void step(nb::list params, nb::list grads) {
    if (params.size() != shapes_.size() || grads.size() != shapes_.size())
      refuse(sentence("step got ", params.size(), " parameters and ", grads.size(),
                      " gradients but the optimizer has ", shapes_.size(), " parameters."));
    std::vector<nb::ndarray<>> ps;  // keep the views alive while the step runs
    std::vector<InArray> gs;
    auto const p_spans = spans<T>(params, ps, "parameter ");
    auto const g_spans = spans<T const>(grads, gs, "the gradient of parameter ", true);
    nb::gil_scoped_release released;
    shampoo_->step(p_spans, g_spans);
  }

  // Iterate averaging's eval() and train(): the parameters move to the averaged sequence and
  // back, in place (params as for step()).
  void switch_mode(nb::list params, bool to_train) {
    if (params.size() != shapes_.size())
      refuse(sentence(to_train ? "train" : "eval", " got ", params.size(),
                      " parameters but the optimizer has ", shapes_.size(), " parameters."));
    std::vector<nb::ndarray<>> ps;
    auto const p_spans = spans<T>(params, ps, "parameter ");
    nb::gil_scoped_release released;
    to_train ? shampoo_->train(p_spans) : shampoo_->eval(p_spans);
  }

  void set_lr(std::size_t group, double lr) { shampoo_->set_lr(group, lr); }
  index_t step_count() const { return shampoo_->step_count(); }

  // [(key path, dtype name, shape, bytes)] in key order.
  nb::list state_dict() const {
    nb::list out;
    for (auto const& [key, t] : shampoo_->state_dict())
      out.append(nb::make_tuple(key, std::string(tessel::dtype_name(t.dtype)), t.shape,
                                nb::bytes(t.data.data(), t.data.size())));
    return out;
  }

  void load_state_dict(nb::list entries) {
    sh::StateDict state;
    for (nb::handle e : entries) {
      auto entry = nb::cast<nb::tuple>(e);
      auto data = nb::cast<nb::bytes>(entry[3]);
      auto const* bytes = static_cast<std::byte const*>(data.data());
      state.emplace(nb::cast<sh::StateKey>(entry[0]),
                    sh::StateTensor{tessel::parse_dtype(nb::cast<std::string>(entry[1])),
                                    nb::cast<Shape>(entry[2]),
                                    std::vector<std::byte>(bytes, bytes + data.size())});
    }
    shampoo_->load_state_dict(state);
  }

 private:
  // Spans over arrays[i], one per parameter, each checked against parameter i (its name: `what`
  // and i); `views` keeps the arrays' views alive while the C++ reads them.
  template <class E, class Array>
  std::vector<std::span<E>> spans(nb::list arrays, std::vector<Array>& views, char const* what,
                                  bool none_skips = false) const {
    std::vector<std::span<E>> out;
    for (std::size_t i = 0; i < shapes_.size(); ++i) {
      if (none_skips && arrays[i].is_none()) {
        out.emplace_back();  // an empty span: no gradient
        continue;
      }
      views.push_back(nb::cast<Array>(arrays[i]));
      check_step_array<T>(views.back(), sentence(what, i), shapes_[i]);
      out.emplace_back(static_cast<E*>(views.back().data()), views.back().size());
    }
    return out;
  }

  std::vector<Shape> shapes_;
  std::unique_ptr<sh::GroupedShampoo<T>> shampoo_;
};

template <class T>
void bind_optimizer(nb::module_& m, char const* name) {
  nb::class_<Optimizer<T>>(m, name)
      .def(nb::init<std::vector<Shape>, nb::list>(), nb::arg("shapes"), nb::arg("groups"))
      .def("step", &Optimizer<T>::step, nb::arg("params"), nb::arg("grads"))
      .def("set_lr", &Optimizer<T>::set_lr, nb::arg("group"), nb::arg("lr"))
      .def("switch_mode", &Optimizer<T>::switch_mode, nb::arg("params"), nb::arg("to_train"))
      .def_prop_ro("step_count", &Optimizer<T>::step_count)
      .def("state_dict", &Optimizer<T>::state_dict)
      .def("load_state_dict", &Optimizer<T>::load_state_dict, nb::arg("entries"));
}

// ---- plans ----

using Extents = tessel::DynRankTuple<sh::max_param_rank>;

Extents extents_of(Shape const& shape, char const* what) {
  if (shape.size() > sh::max_param_rank)
    refuse(sentence(what, " ", shape_text(shape), " has ", shape.size(),
                    " dimensions; tessel takes at most ", sh::max_param_rank, "."));
  Extents e;
  for (index_t x : shape) e.push_back(x);
  tessel::check_extents(e);
  return e;
}

// The plan's merged shape: the core's merge_small_dims, and Distributed Shampoo's rules for an
// empty shape ((0)) and an infinite target (the shape as given).
Shape merge_small_dims(Shape const& shape, index_t threshold, std::optional<index_t> target_dims) {
  if (target_dims && *target_dims < 1)
    refuse(sentence("target_dims must be >= 1 or math.inf, got ", *target_dims, "."));
  return tessel::to_vector(sh::detail::merged_shape_of(extents_of(shape, "shape"), threshold,
                                                       dim_or_infinite(target_dims)));
}

nb::list multi_dim_split(Shape const& shape, std::optional<index_t> split_size) {
  nb::list out;
  Extents const e = extents_of(shape, "shape");
  // An infinite split is the largest extent, as the plan takes it (no overflow in the grid).
  index_t const split = split_size ? *split_size : sh::detail::effective_split(e, sh::infinite);
  for (auto const& b : tessel::multi_dim_split(e, split))
    out.append(nb::make_tuple(tessel::to_vector(b.offset), tessel::to_vector(b.shape)));
  return out;
}

// make_plan for run-time shapes, as plain values: per parameter its shape, merged shape and
// blocks (index, offset, shape, batch group, owner rank, bytes).
nb::dict shampoo_plan(std::vector<Shape> const& shapes, std::optional<index_t> max_dim,
                      std::optional<index_t> target_dims, index_t group_size,
                      std::string_view dtype) {
  auto const plan = sh::make_plan(
      sh::PlanOptions<index_t, index_t>{dim_or_infinite(max_dim), dim_or_infinite(target_dims),
                                        group_size, tessel::parse_dtype(dtype)},
      shapes);
  nb::list params;
  for (auto const& pp : plan.params) {
    nb::list blocks;
    for (index_t b = pp.first_block; b < pp.first_block + pp.num_blocks; ++b) {
      auto const i = static_cast<std::size_t>(b);
      nb::dict block;
      block["index"] = plan.blocks[i].index;
      block["offset"] = tessel::to_vector(plan.block_offset(i));
      block["shape"] = tessel::to_vector(plan.block_shape(i));
      block["group"] = plan.blocks[i].group;
      block["rank"] = plan.blocks[i].rank;
      block["bytes"] = plan.group_of(i).bytes;
      blocks.append(block);
    }
    nb::dict p;
    p["shape"] = tessel::to_vector(pp.shape);
    p["merged_shape"] = tessel::to_vector(pp.merged_shape);
    p["blocks"] = blocks;
    params.append(p);
  }
  nb::dict d;
  d["params"] = params;
  d["num_groups"] = plan.groups.size();
  std::vector<index_t> rank_bytes;
  for (index_t r = 0; r < group_size; ++r) rank_bytes.push_back(plan.rank_bytes(r));
  d["rank_bytes"] = rank_bytes;
  return d;
}

}  // namespace

void bind_shampoo(nb::module_& m) {
  bind_optimizer<float>(m, "ShampooF32");
  bind_optimizer<double>(m, "ShampooF64");
  m.def("merge_small_dims", &merge_small_dims, nb::arg("shape"), nb::arg("threshold"),
        nb::arg("target_dims").none());
  m.def("multi_dim_split", &multi_dim_split, nb::arg("shape"), nb::arg("split_size").none());
  m.def("shampoo_plan", &shampoo_plan, nb::arg("shapes"), nb::arg("max_preconditioner_dim").none(),
        nb::arg("target_parameter_dimensionality").none(), nb::arg("group_size"), nb::arg("dtype"));
}

}  // namespace tessel_python
