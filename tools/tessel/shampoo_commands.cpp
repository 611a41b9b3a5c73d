// `tessel plan shampoo`, `tessel plan distribute` and `tessel shampoo inv-root | run`: Shampoo's
// blocking plan and rank assignment as JSON, inverse roots of a matrix in a .npy file, and a run
// of Shampoo steps on parameters from .npy files, with options named after Distributed
// Shampoo's, for cross-checks against the PyTorch implementation.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <tessel/io/npy.hpp>
#include <tessel/shampoo/checkpoint.hpp>
#include <tessel/shampoo/distribute.hpp>
#include <tessel/shampoo/matrix_functions.hpp>
#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/param_groups.hpp>
#include <tessel/shampoo/plan.hpp>
#include <tessel/shampoo/plan/print.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

namespace tessel::cli {

namespace {

using shampoo::infinite;

// "4096x11008" or "4096,11008" -> {4096, 11008}; "" is a 0-D parameter.
std::vector<index_t> parse_param_shape(std::string const& text) {
  std::vector<index_t> extents;
  std::size_t start = 0;
  while (!text.empty()) {
    std::size_t const end = text.find_first_of("x,", start);
    std::string const item = text.substr(start, end == std::string::npos ? end : end - start);
    index_t v = -1;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc{} || ptr != item.data() + item.size() || v < 0)
      detail::throw_error(detail::sentence("--param: \"", item, "\" in \"", text,
                                           "\" is not a non-negative integer."));
    extents.push_back(v);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (extents.size() > shampoo::max_param_rank)
    detail::throw_error(detail::sentence(
        "--param \"", text, "\" has ", extents.size(),
        " extents; Shampoo plans take parameters of rank <= ", shampoo::max_param_rank, "."));
  return extents;
}

// An integer >= minimum, or "inf" for Distributed Shampoo's math.inf.
index_t parse_integer_or_inf(std::string const& text, std::string_view option, index_t minimum) {
  if (text == "inf") return infinite;
  index_t v = parse_integer(text, option);
  if (v < minimum)
    detail::throw_error(detail::sentence(option, " must be >= ", minimum, " or inf, got ", v, "."));
  return v;
}

bool parse_bool(std::string const& text, std::string_view option) {
  if (text == "true") return true;
  if (text == "false") return false;
  detail::throw_error(detail::sentence(option, " must be true or false, got \"", text, "\"."));
}

nlohmann::json inf_or_number(index_t v) {
  return v == infinite ? nlohmann::json("inf") : nlohmann::json(v);
}

// ---- tessel plan shampoo ----

struct PlanShampooOptions {
  std::vector<std::string> params;
  std::string max_dim = "1024";
  std::string target_dims = "1";
  std::string ranks = "1";
  std::string dtype = "f32";
  std::string format = "json";
  std::string indent;  // empty: the JSON on one line
};

void run_plan_shampoo(PlanShampooOptions const& o) {
  std::vector<std::vector<index_t>> shapes;
  for (auto const& p : o.params) shapes.push_back(parse_param_shape(p));
  index_t const max_dim = parse_integer_or_inf(o.max_dim, "--max-dim", 1);
  index_t const target = parse_integer_or_inf(o.target_dims, "--target-dims", 1);
  index_t const ranks = parse_integer(o.ranks, "--ranks");
  if (ranks < 1) detail::throw_error(detail::sentence("--ranks must be >= 1, got ", ranks, "."));
  DType const dtype = parse_dtype(o.dtype);
  if (o.format != "json" && o.format != "table")
    detail::throw_error(
        detail::sentence("--format must be json or table, got \"", o.format, "\"."));
  index_t const indent = o.indent.empty() ? -1 : parse_integer(o.indent, "--indent");
  if (!o.indent.empty() && indent < 0)
    detail::throw_error(detail::sentence("--indent must be >= 0, got ", indent, "."));
  if (!o.indent.empty() && o.format == "table")
    detail::throw_error(
        detail::sentence("--indent ", indent, " applies to --format json, not table."));
  auto plan = shampoo::make_plan(
      shampoo::PlanOptions<index_t, index_t>{max_dim, target, ranks, dtype}, shapes);
  if (o.format == "table") {  // the library's printer (shampoo/plan/print.hpp)
    std::cout << plan << '\n';
    return;
  }
  nlohmann::json params = nlohmann::json::array();
  for (std::size_t p = 0; p < plan.num_params(); ++p) {
    nlohmann::json blocks = nlohmann::json::array();
    auto const& pp = plan.params[p];
    for (index_t b = pp.first_block; b < pp.first_block + pp.num_blocks; ++b) {
      auto const i = static_cast<std::size_t>(b);
      auto const& g = plan.group_of(i);
      auto const shape = to_vector(plan.block_shape(i));
      blocks.push_back({{"index", plan.blocks[i].index},
                        {"offset", to_vector(plan.block_offset(i))},
                        {"shape", shape},
                        {"factor_dims", shape},
                        {"bytes", g.bytes},
                        {"factor_bytes", g.factor_numel() * 4},
                        {"rank", plan.blocks[i].rank}});
    }
    params.push_back({{"shape", to_vector(pp.shape)},
                      {"merged_shape", to_vector(pp.merged_shape)},
                      {"blocks", blocks}});
  }
  nlohmann::json rank_bytes = nlohmann::json::array();
  for (index_t r = 0; r < ranks; ++r) rank_bytes.push_back(plan.rank_bytes(r));
  nlohmann::json const out = {{"max_preconditioner_dim", inf_or_number(max_dim)},
                              {"target_parameter_dimensionality", inf_or_number(target)},
                              {"ranks", ranks},
                              {"dtype", std::string(dtype_name(dtype))},
                              {"num_blocks", plan.num_blocks()},
                              {"params", params},
                              {"rank_bytes", rank_bytes}};
  std::cout << (indent < 0 ? json_line(out) : json_indented(out, static_cast<std::size_t>(indent)))
            << '\n';
}

// ---- tessel plan distribute ----

struct DistributeOptions {
  std::string bytes;
  std::string ranks;
};

void run_distribute(DistributeOptions const& o) {
  auto sizes = parse_extents(o.bytes, "--bytes");
  index_t const ranks = parse_integer(o.ranks, "--ranks");
  if (ranks < 1) detail::throw_error(detail::sentence("--ranks must be >= 1, got ", ranks, "."));
  nlohmann::json pairs = nlohmann::json::array();
  for (auto const& [bytes, rank] : shampoo::distribute_buffer_sizes(sizes, ranks))
    pairs.push_back({bytes, rank});
  std::cout << json_line({{"assignments", pairs}}) << '\n';
}

// ---- tessel shampoo inv-root ----

struct InvRootOptions {
  std::string input;
  std::string root;
  std::string epsilon = "0";
  std::string method = "eigen";
  std::string out;
};

shampoo::RootMethod parse_method(std::string const& text, std::string_view option) {
  if (text == "eigen") return shampoo::RootMethod::eigen;
  if (text == "coupled-newton") return shampoo::RootMethod::coupled_newton;
  detail::throw_error(
      detail::sentence(option, " must be eigen or coupled-newton, got \"", text, "\"."));
}

template <class T>
std::vector<T> inverse_root_of(NpyArray const& a, index_t d, double root, double epsilon,
                               shampoo::RootConfig const& config, shampoo::RootResult& result) {
  std::vector<T> A = a.as<T>();
  std::vector<T> X(A.size());
  result = shampoo::matrix_inverse_root<T>(A.data(), d, root, epsilon, config, X.data());
  return X;
}

void run_inv_root(InvRootOptions const& o) {
  double const root = parse_number(o.root, "--root");
  double const epsilon = parse_number(o.epsilon, "--epsilon");
  shampoo::RootConfig config;
  config.method = parse_method(o.method, "--method");
  shampoo::check_root_arguments(root, epsilon, config);
  NpyArray a = read_npy(o.input);
  if (a.shape.size() != 2 || a.shape[0] != a.shape[1])
    detail::throw_error(detail::sentence(o.input, " holds an array of shape ",
                                         tessel::detail::shape_text(a.shape),
                                         "; inv-root needs a square matrix."));
  if (a.dtype != DType::f32 && a.dtype != DType::f64)
    detail::throw_error(detail::sentence(o.input, " holds ", dtype_name(a.dtype),
                                         " values; inv-root reads f32 or f64."));
  index_t const d = a.shape[0];
  auto check_finite_symmetric = [&](auto const& A) {
    for (index_t i = 0; i < d; ++i)
      for (index_t j = 0; j < d; ++j) {
        double const x = static_cast<double>(A[static_cast<std::size_t>(i * d + j)]);
        double const y = static_cast<double>(A[static_cast<std::size_t>(j * d + i)]);
        if (!std::isfinite(x))
          detail::throw_error(detail::sentence(o.input, " has the value ", x, " at (", i, ", ", j,
                                               "); the matrix must be finite."));
        if (std::abs(x - y) > 1e-6 * (std::abs(x) + std::abs(y)) + 1e-30)
          detail::throw_error(detail::sentence(o.input, " is not symmetric: (", i, ", ", j,
                                               ") differs from (", j, ", ", i, ")."));
      }
  };
  shampoo::RootResult result;
  auto finish = [&](auto const& X) {
    if (!result.ok())
      detail::throw_error(detail::sentence("the inverse root of ", o.input, " failed: ",
                                           shampoo::root_status_name(result.status), "."));
    write_npy(o.out, std::span<std::int64_t const>(a.shape), X);
    std::cout << json_line({{"shape", a.shape},
                            {"dtype", std::string(dtype_name(a.dtype))},
                            {"root", root},
                            {"epsilon", epsilon},
                            {"method", o.method},
                            {"iterations", result.iterations},
                            {"out", o.out}})
              << '\n';
  };
  if (a.dtype == DType::f32) {
    check_finite_symmetric(a.as<float>());
    finish(inverse_root_of<float>(a, d, root, epsilon, config, result));
  } else {
    check_finite_symmetric(a.as<double>());
    finish(inverse_root_of<double>(a, d, root, epsilon, config, result));
  }
}

// ---- tessel shampoo run ----

struct RunOptions {
  std::vector<std::string> params, grads, outs;
  std::string save_state, load_state;
  std::string lr = "0.01", beta1 = "0.9", beta2 = "1.0", beta3 = "-1", epsilon = "1e-12";
  std::string momentum = "0", dampening = "0";
  bool nesterov = false;
  std::string weight_decay = "0", weight_decay_type = "decoupled";
  std::string max_dim = "1024", frequency = "1", start = "-1", bias_correction = "true";
  std::string grafting = "none", grafting_beta2, grafting_epsilon = "1e-10";
  std::string root_method = "eigen", target_dims = "1", factor_dtype = "f32";
  std::vector<std::string> exponent_overrides;
  std::vector<std::string> ignored_basis_change_dims;  // "ORDER=DIM[,DIM...]"
  bool pseudo_inverse = false;
  std::string rank_atol = "0", rank_rtol = "0";
  std::string perturb = "true", retry_double = "true";
  std::string newton_iterations = "100", newton_tolerance = "1e-06";
  std::string eigendecomposition = "eigh", eigendecomposition_tolerance = "0";
  std::string qr_iterations = "1";
  std::string tolerated_failures = "3";
  std::string preconditioner = "shampoo";
  bool drop_weighting = false, grafting_drop = false, trace_scaling = false, kl = false;
  bool symmetric_packing = false, keep_rotated = false;
  std::string trace_exponent = "0.5";
  std::string ns_iterations = "5", ns_coefficients = "3.4445,-4.775,2.0315";
  std::string orthogonalization = "newton-schulz";
  bool svd_nuclear_norm = false;
  std::string averaging = "none", eval_interp = "0.9", train_interp = "0.8", lr_power = "2";
  std::vector<std::string> groups;  // --group "P[,P...] FLAGS"
};

// "ORDER=E" (every dimension of order-ORDER blocks) or "ORDER:DIM=E" (one dimension), added to
// `overrides`; the two forms may not be mixed for one order.
void add_exponent_override(std::string const& text, shampoo::InverseExponentOverride& overrides) {
  constexpr std::string_view option = "--inverse-exponent-override";
  std::size_t const eq = text.find('=');
  if (eq == std::string::npos)
    detail::throw_error(detail::sentence(option, " \"", text,
                                         "\" must read ORDER=EXPONENT or ORDER:DIM=EXPONENT."));
  std::string const key = text.substr(0, eq);
  double const e = parse_number(text.substr(eq + 1), option);
  std::size_t const colon = key.find(':');
  index_t const order = parse_integer(key.substr(0, colon), option);
  auto [it, fresh] = overrides.try_emplace(order);
  if (colon == std::string::npos) {
    if (!fresh)
      detail::throw_error(detail::sentence(option, " gives order ", order,
                                           " twice; give each order one ORDER=EXPONENT, or "
                                           "ORDER:DIM=EXPONENT items with distinct dimensions."));
    it->second = e;
    return;
  }
  if (fresh) it->second = std::map<index_t, double>{};
  auto* per_dim = std::get_if<std::map<index_t, double>>(&it->second);
  index_t const dim = parse_integer(key.substr(colon + 1), option);
  if (per_dim == nullptr || !per_dim->emplace(dim, e).second)
    detail::throw_error(detail::sentence(option, " gives order ", order,
                                         " twice; give each order one ORDER=EXPONENT, or "
                                         "ORDER:DIM=EXPONENT items with distinct dimensions."));
}

// "ORDER=DIM[,DIM...]", added to `ignored`; each order once.
void add_ignored_basis_change_dims(std::string const& text,
                                   shampoo::IgnoredBasisChangeDims& ignored) {
  constexpr std::string_view option = "--ignored-basis-change-dims";
  std::size_t const eq = text.find('=');
  if (eq == std::string::npos || eq + 1 == text.size())
    detail::throw_error(
        detail::sentence(option, " \"", text, "\" must read ORDER=DIM or ORDER=DIM,DIM,..."));
  index_t const order = parse_integer(text.substr(0, eq), option);
  auto [it, fresh] = ignored.try_emplace(order);
  if (!fresh)
    detail::throw_error(detail::sentence(option, " gives order ", order,
                                         " twice; list its dimensions in one ORDER=DIM,DIM,..."));
  for (std::size_t start = eq + 1; start <= text.size();) {
    std::size_t const comma = std::min(text.find(',', start), text.size());
    it->second.push_back(parse_integer(text.substr(start, comma - start), option));
    start = comma + 1;
  }
}

shampoo::Options to_options(RunOptions const& r) {
  shampoo::Options o;
  o.lr = parse_number(r.lr, "--lr");
  o.beta1 = parse_number(r.beta1, "--beta1");
  o.beta2 = parse_number(r.beta2, "--beta2");
  o.beta3 = parse_number(r.beta3, "--beta3");
  o.epsilon = parse_number(r.epsilon, "--epsilon");
  o.momentum = parse_number(r.momentum, "--momentum");
  o.dampening = parse_number(r.dampening, "--dampening");
  o.use_nesterov = r.nesterov;
  o.weight_decay = parse_number(r.weight_decay, "--weight-decay");
  if (r.weight_decay_type == "decoupled")
    o.weight_decay_type = shampoo::WeightDecayType::decoupled;
  else if (r.weight_decay_type == "l2")
    o.weight_decay_type = shampoo::WeightDecayType::l2;
  else if (r.weight_decay_type == "corrected")
    o.weight_decay_type = shampoo::WeightDecayType::corrected;
  else if (r.weight_decay_type == "independent")
    o.weight_decay_type = shampoo::WeightDecayType::independent;
  else
    detail::throw_error(detail::sentence(
        "--weight-decay-type must be decoupled, l2, corrected or independent, got \"",
        r.weight_decay_type, "\"."));
  o.precondition_frequency = parse_integer(r.frequency, "--precondition-frequency");
  o.start_preconditioning_step = parse_integer(r.start, "--start-preconditioning-step");
  o.use_bias_correction = parse_bool(r.bias_correction, "--use-bias-correction");
  double const graft_eps = parse_number(r.grafting_epsilon, "--grafting-epsilon");
  auto beta2_or = [&](double fallback) {
    return r.grafting_beta2.empty() ? fallback : parse_number(r.grafting_beta2, "--grafting-beta2");
  };
  // Given for a grafting type that has no beta2 (or epsilon), the value is still passed on, so
  // the optimizer's warning names it.
  if (r.grafting == "none")
    o.grafting = {shampoo::GraftingType::none, beta2_or(1.0), graft_eps, r.grafting_drop};
  else if (r.grafting == "sgd")
    o.grafting = {shampoo::GraftingType::sgd, beta2_or(1.0), graft_eps, r.grafting_drop};
  else if (r.grafting == "adagrad")
    o.grafting = {shampoo::GraftingType::adagrad, beta2_or(1.0), graft_eps, r.grafting_drop};
  else if (r.grafting == "rmsprop")
    o.grafting = {shampoo::GraftingType::rmsprop, beta2_or(0.99), graft_eps, r.grafting_drop};
  else if (r.grafting == "adam")
    o.grafting = {shampoo::GraftingType::adam, beta2_or(0.999), graft_eps, r.grafting_drop};
  else
    detail::throw_error(detail::sentence(
        "--grafting must be none, sgd, adagrad, rmsprop or adam, got \"", r.grafting, "\"."));
  o.root.method = parse_method(r.root_method, "--root-method");
  o.root.eigen.pseudo_inverse = r.pseudo_inverse;
  o.root.eigen.rank_atol = parse_number(r.rank_atol, "--rank-atol");
  o.root.eigen.rank_rtol = parse_number(r.rank_rtol, "--rank-rtol");
  o.root.eigen.perturb_before_computation = parse_bool(r.perturb, "--perturb-before-computation");
  o.root.eigen.retry_double_precision = parse_bool(r.retry_double, "--retry-double-precision");
  o.root.coupled_newton.max_iterations =
      parse_integer(r.newton_iterations, "--coupled-newton-max-iterations");
  o.root.coupled_newton.tolerance = parse_number(r.newton_tolerance, "--coupled-newton-tolerance");
  if (r.eigendecomposition == "eigh")
    o.root.eigendecomposition.method = shampoo::EigendecompositionMethod::eigh;
  else if (r.eigendecomposition == "qr")
    o.root.eigendecomposition.method = shampoo::EigendecompositionMethod::qr;
  else
    detail::throw_error(detail::sentence("--eigendecomposition must be eigh or qr, got \"",
                                         r.eigendecomposition, "\"."));
  o.root.eigendecomposition.tolerance =
      parse_number(r.eigendecomposition_tolerance, "--eigendecomposition-tolerance");
  o.root.eigendecomposition.max_iterations = parse_integer(r.qr_iterations, "--qr-max-iterations");
  o.num_tolerated_failed_amortized_computations =
      parse_integer(r.tolerated_failures, "--num-tolerated-failed-amortized-computations");
  if (r.preconditioner == "shampoo")
    o.preconditioner = shampoo::PreconditionerType::shampoo;
  else if (r.preconditioner == "spectral-descent")
    o.preconditioner = shampoo::PreconditionerType::spectral_descent;
  else if (r.preconditioner == "sign-descent")
    o.preconditioner = shampoo::PreconditionerType::sign_descent;
  else if (r.preconditioner == "eigenvalue-corrected")
    o.preconditioner = shampoo::PreconditionerType::eigenvalue_corrected;
  else if (r.preconditioner == "eigendecomposed")
    o.preconditioner = shampoo::PreconditionerType::eigendecomposed;
  else
    detail::throw_error(detail::sentence(
        "--preconditioner must be shampoo, eigendecomposed, spectral-descent, sign-descent or "
        "eigenvalue-corrected, got \"",
        r.preconditioner, "\"."));
  o.kl_shampoo = r.kl;
  if (r.averaging == "none")
    o.averaging.type = shampoo::AveragingType::none;
  else if (r.averaging == "generalized-primal")
    o.averaging.type = shampoo::AveragingType::generalized_primal;
  else if (r.averaging == "schedule-free")
    o.averaging.type = shampoo::AveragingType::schedule_free;
  else
    detail::throw_error(detail::sentence(
        "--iterate-averaging must be none, generalized-primal or schedule-free, got \"",
        r.averaging, "\"."));
  o.averaging.eval_interp_coeff = parse_number(r.eval_interp, "--eval-interp-coeff");
  o.averaging.train_interp_coeff = parse_number(r.train_interp, "--train-interp-coeff");
  o.averaging.eval_coeff_lr_power = parse_number(r.lr_power, "--eval-coeff-lr-power");
  o.newton_schulz.num_iterations = parse_integer(r.ns_iterations, "--newton-schulz-iterations");
  std::vector<double> abc;
  for (std::size_t start = 0; start <= r.ns_coefficients.size();) {
    std::size_t const end = std::min(r.ns_coefficients.find(',', start), r.ns_coefficients.size());
    abc.push_back(
        parse_number(r.ns_coefficients.substr(start, end - start), "--newton-schulz-coefficients"));
    start = end + 1;
  }
  if (abc.size() != 3)
    detail::throw_error(detail::sentence("--newton-schulz-coefficients \"", r.ns_coefficients,
                                         "\" has ", abc.size(), " numbers; give three: a,b,c."));
  o.newton_schulz.a = abc[0];
  o.newton_schulz.b = abc[1];
  o.newton_schulz.c = abc[2];
  if (r.orthogonalization == "newton-schulz")
    o.orthogonalization = shampoo::OrthogonalizationMethod::newton_schulz;
  else if (r.orthogonalization == "svd")
    o.orthogonalization = shampoo::OrthogonalizationMethod::svd;
  else
    detail::throw_error(detail::sentence("--orthogonalization must be newton-schulz or svd, got \"",
                                         r.orthogonalization, "\"."));
  o.svd.scale_by_nuclear_norm = r.svd_nuclear_norm;
  for (auto const& text : r.exponent_overrides)
    add_exponent_override(text, o.inverse_exponent_override);
  for (auto const& text : r.ignored_basis_change_dims)
    add_ignored_basis_change_dims(text, o.ignored_basis_change_dims);
  o.factor_matrix_dtype = parse_dtype(r.factor_dtype);
  o.drop_weighting_factor_on_gsquare = r.drop_weighting;
  o.use_trace_scaling = r.trace_scaling;
  o.use_symmetric_packing = r.symmetric_packing;
  o.keep_rotated_filtered_grad = r.keep_rotated;
  o.trace_scaling_exponent = parse_number(r.trace_exponent, "--trace-scaling-exponent");
  shampoo::validate(o);
  return o;
}

// The step's options (everything but the files), on `tessel shampoo run` and on each --group.
void add_step_options(CLI::App& cmd, RunOptions& run) {
  cmd.add_option("--lr", run.lr)->capture_default_str();
  cmd.add_option("--beta1", run.beta1)->capture_default_str();
  cmd.add_option("--beta2", run.beta2, "In [0, 1]")->capture_default_str();
  cmd.add_option("--beta3", run.beta3, "-1: equal to beta1")->capture_default_str();
  cmd.add_option("--epsilon", run.epsilon)->capture_default_str();
  cmd.add_option("--momentum", run.momentum)->capture_default_str();
  cmd.add_option("--dampening", run.dampening)->capture_default_str();
  cmd.add_flag("--nesterov", run.nesterov, "Nesterov momentum");
  cmd.add_option("--weight-decay", run.weight_decay)->capture_default_str();
  cmd.add_option("--weight-decay-type", run.weight_decay_type,
                 "decoupled, l2, corrected (times lr / peak lr) or independent (/ peak lr)")
      ->capture_default_str();
  cmd.add_option("--max-preconditioner-dim", run.max_dim, "An integer or inf")
      ->capture_default_str();
  cmd.add_option("--precondition-frequency", run.frequency)->capture_default_str();
  cmd.add_option("--start-preconditioning-step", run.start, "-1: precondition-frequency")
      ->capture_default_str();
  cmd.add_option("--use-bias-correction", run.bias_correction, "true or false")
      ->capture_default_str();
  cmd.add_option("--grafting", run.grafting, "none, sgd, adagrad, rmsprop or adam")
      ->capture_default_str();
  cmd.add_option("--grafting-beta2", run.grafting_beta2,
                 "Default 0.99 for rmsprop, 0.999 for adam");
  cmd.add_option("--grafting-epsilon", run.grafting_epsilon)->capture_default_str();
  cmd.add_option("--root-method", run.root_method, "eigen or coupled-newton")
      ->capture_default_str();
  cmd.add_option("--inverse-exponent-override", run.exponent_overrides,
                 "ORDER=EXPONENT or ORDER:DIM=EXPONENT (repeatable; 0 leaves a dimension "
                 "unpreconditioned; eigenvalue-corrected: ORDER=EXPONENT, the power of the "
                 "corrected eigenvalues)");
  cmd.add_option("--ignored-basis-change-dims", run.ignored_basis_change_dims,
                 "ORDER=DIM[,DIM...] (repeatable): eigenvalue-corrected Shampoo leaves these "
                 "dimensions of order-ORDER blocks in the gradient's own basis");
  cmd.add_flag("--pseudo-inverse", run.pseudo_inverse,
               "Eigen roots drop small eigenvalues instead of perturbing (needs --epsilon 0)");
  cmd.add_option("--rank-atol", run.rank_atol, "Pseudo-inverse absolute threshold")
      ->capture_default_str();
  cmd.add_option("--rank-rtol", run.rank_rtol, "Pseudo-inverse relative threshold")
      ->capture_default_str();
  cmd.add_option("--perturb-before-computation", run.perturb,
                 "Eigen roots add epsilon to the eigenvalues (true or false)")
      ->capture_default_str();
  cmd.add_option("--retry-double-precision", run.retry_double,
                 "A failed float eigendecomposition is retried in double (true or false)")
      ->capture_default_str();
  cmd.add_option("--coupled-newton-max-iterations", run.newton_iterations)->capture_default_str();
  cmd.add_option("--coupled-newton-tolerance", run.newton_tolerance)->capture_default_str();
  cmd.add_option("--eigendecomposition", run.eigendecomposition,
                 "How eigenvalue-corrected and eigendecomposed Shampoo decompose their factors: "
                 "eigh or qr (the QR iteration, warm-started; DefaultSOAPConfig's)")
      ->capture_default_str();
  cmd.add_option("--eigendecomposition-tolerance", run.eigendecomposition_tolerance,
                 "In [0, 1]: eigh is skipped, and the QR iteration stops, when the kept "
                 "eigenvectors diagonalize the factor to this relative off-diagonal norm")
      ->capture_default_str();
  cmd.add_option("--qr-max-iterations", run.qr_iterations,
                 "QR iterations per amortized computation")
      ->capture_default_str();
  cmd.add_option("--num-tolerated-failed-amortized-computations", run.tolerated_failures,
                 "Failed inverse roots in a row before a step fails")
      ->capture_default_str();
  cmd.add_option("--target-dims", run.target_dims,
                 "target_parameter_dimensionality (an integer or inf)")
      ->capture_default_str();
  cmd.add_option("--factor-dtype", run.factor_dtype, "bf16, f16, f32 or f64")
      ->capture_default_str();
  cmd.add_option("--preconditioner", run.preconditioner,
                 "shampoo, eigendecomposed, spectral-descent (Muon), sign-descent or "
                 "eigenvalue-corrected (SOAP)")
      ->capture_default_str();
  cmd.add_option("--iterate-averaging", run.averaging,
                 "none, generalized-primal (GPA) or schedule-free (with --momentum 0); the "
                 "parameters written are the training sequence")
      ->capture_default_str();
  cmd.add_option("--eval-interp-coeff", run.eval_interp, "mu_x of generalized-primal, in [0, 1)")
      ->capture_default_str();
  cmd.add_option("--train-interp-coeff", run.train_interp, "mu_y, in (0, 1]")
      ->capture_default_str();
  cmd.add_option("--eval-coeff-lr-power", run.lr_power,
                 "schedule-free: mu_x = 1 - lr^p / sum_t lr_t^p")
      ->capture_default_str();
  cmd.add_flag("--kl-shampoo", run.kl,
               "KL-Shampoo: each factor accumulates the gradient preconditioned along the "
               "other modes (shampoo, eigendecomposed; with eigenvalue-corrected: KL-SOAP)");
  cmd.add_option("--newton-schulz-iterations", run.ns_iterations)->capture_default_str();
  cmd.add_flag("--drop-weighting-factor-on-gsquare", run.drop_weighting,
               "Factors gain G G^T, not (1 - beta2) G G^T, and no bias correction");
  cmd.add_flag("--grafting-drop-weighting-factor-on-gsquare", run.grafting_drop,
               "The same for the rmsprop / adam grafting accumulator");
  cmd.add_flag("--use-trace-scaling", run.trace_scaling,
               "Scale each factor by trace^(-exponent) before its root");
  cmd.add_option("--trace-scaling-exponent", run.trace_exponent, "In (0, 1]")
      ->capture_default_str();
  cmd.add_flag("--use-symmetric-packing", run.symmetric_packing,
               "Keep and save each factor as its upper triangle, d (d + 1) / 2 elements (the "
               "same steps); --load-state reads either layout");
  cmd.add_flag("--keep-rotated-filtered-grad", run.keep_rotated,
               "Eigenvalue-corrected, beta1 != 0: filter in the eigenbasis too (one rotation "
               "fewer between refreshes, one more parameter-sized buffer)");
  cmd.add_option("--newton-schulz-coefficients", run.ns_coefficients,
                 "a,b,c of X <- a X + b (X X^T) X + c (X X^T)^2 X")
      ->capture_default_str();
  cmd.add_option("--orthogonalization", run.orthogonalization,
                 "spectral-descent's U V^T: newton-schulz (the iteration) or svd (exact, from "
                 "the eigendecomposition of the Gram matrix)")
      ->capture_default_str();
  cmd.add_flag("--svd-scale-by-nuclear-norm", run.svd_nuclear_norm,
               "With --orthogonalization svd: multiply U V^T by the nuclear norm sum(S)");
}

// The parameters and their gradient files, read and checked before any step.
struct RunInputs {
  std::vector<NpyArray> params, grads;
  DType dtype = DType::f32;
  index_t steps = 0;
};

RunInputs read_run_inputs(RunOptions const& r) {
  if (r.grads.size() != r.params.size() || r.outs.size() != r.params.size())
    detail::throw_error(detail::sentence(
        "--param is given ", r.params.size(), " times, --grads ", r.grads.size(), " and --out ",
        r.outs.size(), "; give one --grads and one --out per --param, in the same order."));
  RunInputs in;
  for (std::size_t p = 0; p < r.params.size(); ++p) {
    NpyArray w = read_npy(r.params[p]);
    NpyArray g = read_npy(r.grads[p]);
    if (w.dtype != DType::f32 && w.dtype != DType::f64)
      detail::throw_error(detail::sentence(r.params[p], " holds ", dtype_name(w.dtype),
                                           " values; shampoo run reads f32 or f64 parameters."));
    if (p > 0 && w.dtype != in.dtype)
      detail::throw_error(detail::sentence(r.params[p], " holds ", dtype_name(w.dtype), " but ",
                                           r.params[0], " holds ", dtype_name(in.dtype),
                                           "; one run steps parameters of one dtype."));
    if (w.shape.size() > shampoo::max_param_rank)
      detail::throw_error(detail::sentence(r.params[p], " has rank ", w.shape.size(),
                                           "; Shampoo takes parameters of rank <= 8."));
    bool fits = g.shape.size() == w.shape.size() + 1;
    for (std::size_t k = 0; fits && k < w.shape.size(); ++k) fits = g.shape[k + 1] == w.shape[k];
    if (!fits)
      detail::throw_error(detail::sentence(
          r.grads[p], " has shape ", tessel::detail::shape_text(g.shape), " but must be [steps, *",
          tessel::detail::shape_text(w.shape), "] for the parameter in ", r.params[p], "."));
    if (p > 0 && g.shape[0] != in.steps)
      detail::throw_error(detail::sentence(r.grads[p], " holds ", g.shape[0], " steps but ",
                                           r.grads[0], " holds ", in.steps,
                                           "; every parameter takes the same steps."));
    in.dtype = w.dtype;
    in.steps = g.shape[0];
    in.params.push_back(std::move(w));
    in.grads.push_back(std::move(g));
  }
  return in;
}

// The --group specs as parameter groups, and one more with the run's options for the parameters
// no spec names. A spec's flags are parsed over a copy of the run's options, so the run's values
// are the group's defaults; its errors name the spec.
std::vector<shampoo::ParamGroup> parse_groups(RunOptions const& r, std::size_t num_params) {
  std::vector<shampoo::ParamGroup> groups;
  std::vector<char> named(num_params, 0);
  auto group_of = [](RunOptions const& o) {
    shampoo::ParamGroup g;
    g.options = to_options(o);
    g.max_preconditioner_dim = parse_integer_or_inf(o.max_dim, "--max-preconditioner-dim", 1);
    g.target_parameter_dimensionality = parse_integer_or_inf(o.target_dims, "--target-dims", 1);
    return g;
  };
  for (std::string const& spec : r.groups) {
    std::size_t const split = std::min(spec.find_first_of(" \t"), spec.size());
    std::string const list = spec.substr(0, split);
    RunOptions o = r;
    // A group's --inverse-exponent-override and --ignored-basis-change-dims replace the run's.
    o.exponent_overrides.clear();
    o.ignored_basis_change_dims.clear();
    shampoo::ParamGroup g;
    try {
      CLI::App app{"--group"};
      add_step_options(app, o);
      app.parse(spec.substr(split), false);
      if (o.exponent_overrides.empty()) o.exponent_overrides = r.exponent_overrides;
      if (o.ignored_basis_change_dims.empty())
        o.ignored_basis_change_dims = r.ignored_basis_change_dims;
      g = group_of(o);
    } catch (CLI::ParseError const& e) {  // CLI11's message has no full stop
      detail::throw_error(detail::sentence("--group \"", spec, "\": ", e.what(), "."));
    } catch (Error const& e) {
      detail::throw_error(detail::sentence("--group \"", spec, "\": ", e.what()));
    }
    for (std::size_t start = 0; start <= list.size();) {
      std::size_t const end = std::min(list.find(',', start), list.size());
      index_t const p = parse_integer(list.substr(start, end - start), "--group");
      g.params.push_back(p);
      if (p >= 0 && static_cast<std::size_t>(p) < num_params)
        named[static_cast<std::size_t>(p)] = 1;
      start = end + 1;
    }
    groups.push_back(std::move(g));
  }
  shampoo::ParamGroup rest = group_of(r);
  for (std::size_t p = 0; p < num_params; ++p)
    if (!named[p]) rest.params.push_back(static_cast<index_t>(p));
  if (!rest.params.empty()) groups.push_back(std::move(rest));
  return groups;
}

// Steps `opt` through every gradient of `in`, between --load-state and --save-state.
template <class T, class Optimizer>
std::vector<std::vector<T>> run_steps(RunOptions const& r, Optimizer& opt, RunInputs const& in) {
  if (!r.load_state.empty()) opt.load_state_dict(shampoo::load_state(r.load_state));
  std::vector<std::vector<T>> params, grads;
  for (std::size_t p = 0; p < in.params.size(); ++p) {
    params.push_back(in.params[p].template as<T>());
    grads.push_back(in.grads[p].template as<T>());
  }
  std::vector<std::span<T>> ps(params.begin(), params.end());
  std::vector<std::span<T const>> gs(params.size());
  for (index_t t = 0; t < in.steps; ++t) {
    for (std::size_t p = 0; p < params.size(); ++p) {
      std::size_t const n = params[p].size();
      gs[p] = std::span<T const>(grads[p].data() + static_cast<std::size_t>(t) * n, n);
    }
    opt.step(ps, gs);
  }
  if (!r.save_state.empty())
    shampoo::save_state(r.save_state, opt.state_dict(),
                        {{"step", std::to_string(opt.step_count())}});
  return params;
}

// One Shampoo over every parameter with the run's options, or the groups' GroupedShampoo.
template <class T>
std::vector<std::vector<T>> run_optimizer(RunOptions const& r, RunInputs const& in,
                                          shampoo::ParamGroup const& all,
                                          std::vector<shampoo::ParamGroup> const& groups) {
  std::vector<std::vector<index_t>> shapes;
  for (auto const& w : in.params) shapes.emplace_back(w.shape.begin(), w.shape.end());
  if (!groups.empty()) {
    shampoo::GroupedShampoo<T> opt(shapes, groups);
    return run_steps<T>(r, opt, in);
  }
  shampoo::Shampoo<T> opt(
      shampoo::make_plan(
          shampoo::PlanOptions<index_t, index_t>{all.max_preconditioner_dim,
                                                 all.target_parameter_dimensionality, 1},
          shapes),
      all.options);
  return run_steps<T>(r, opt, in);
}

void run_shampoo(RunOptions const& r) {
  // The options first: a bad flag is reported before any file is read.
  shampoo::ParamGroup all;
  all.options = to_options(r);
  all.max_preconditioner_dim = parse_integer_or_inf(r.max_dim, "--max-preconditioner-dim", 1);
  all.target_parameter_dimensionality = parse_integer_or_inf(r.target_dims, "--target-dims", 1);
  std::vector<shampoo::ParamGroup> const groups =
      r.groups.empty() ? std::vector<shampoo::ParamGroup>{} : parse_groups(r, r.params.size());
  RunInputs const in = read_run_inputs(r);
  auto report = [&](auto const& results) {
    for (std::size_t p = 0; p < results.size(); ++p)
      write_npy(r.outs[p], std::span<std::int64_t const>(in.params[p].shape), results[p]);
    nlohmann::json shapes = nlohmann::json::array();
    for (auto const& w : in.params) shapes.push_back(w.shape);
    bool const one = results.size() == 1;
    nlohmann::json summary = {{"steps", in.steps},
                              {"shape", one ? shapes[0] : shapes},
                              {"dtype", std::string(dtype_name(in.dtype))},
                              {"out", one ? nlohmann::json(r.outs[0]) : nlohmann::json(r.outs)}};
    // What was written where: the state file too, when there is one.
    if (!r.save_state.empty()) summary["state"] = r.save_state;
    std::cout << json_line(summary) << '\n';
  };
  if (in.dtype == DType::f32)
    report(run_optimizer<float>(r, in, all, groups));
  else
    report(run_optimizer<double>(r, in, all, groups));
}

}  // namespace

void add_shampoo_commands(CLI::App& app) {
  // `tessel plan shampoo` and `tessel plan distribute` join the plan family.
  CLI::App* plan = app.get_subcommand("plan");

  auto ps = std::make_shared<PlanShampooOptions>();
  auto* ps_cmd = plan->add_subcommand(
      "shampoo", "Shampoo's blocking plan: merged shapes, blocks, factor sizes and owner ranks.");
  ps_cmd->add_option("--param", ps->params, "A parameter shape, e.g. 4096x11008 (repeatable)")
      ->required();
  ps_cmd->add_option("--max-dim", ps->max_dim, "max_preconditioner_dim (an integer or inf)")
      ->capture_default_str();
  ps_cmd
      ->add_option("--target-dims", ps->target_dims,
                   "target_parameter_dimensionality (an integer or inf)")
      ->capture_default_str();
  ps_cmd->add_option("--ranks", ps->ranks, "Ranks the blocks are distributed over")
      ->capture_default_str();
  ps_cmd->add_option("--dtype", ps->dtype, "Element type of the block buffers")
      ->capture_default_str();
  ps_cmd
      ->add_option("--format", ps->format,
                   "json (one line) or table (the plan as std::cout << plan prints it: "
                   "parameters and batch groups)")
      ->capture_default_str();
  ps_cmd->add_option("--indent", ps->indent,
                     "With --format json: the same JSON over several lines, N spaces per level");
  ps_cmd->callback([ps] { run_plan_shampoo(*ps); });

  auto dist = std::make_shared<DistributeOptions>();
  auto* dist_cmd = plan->add_subcommand(
      "distribute", "Assign buffers to ranks (Distributed Shampoo's distribute_buffer_sizes).");
  dist_cmd->add_option("--bytes", dist->bytes, "Buffer sizes in bytes, comma-separated")
      ->required();
  dist_cmd->add_option("--ranks", dist->ranks, "Group size")->required();
  dist_cmd->callback([dist] { run_distribute(*dist); });

  auto* sh = app.add_subcommand("shampoo", "Shampoo's inverse roots and steps on .npy files.");
  sh->require_subcommand(1);

  auto inv = std::make_shared<InvRootOptions>();
  auto* inv_cmd =
      sh->add_subcommand("inv-root", "Write A^(-1/root) of the symmetric matrix in --input.");
  inv_cmd->add_option("--input", inv->input, "A square f32 or f64 .npy matrix")->required();
  inv_cmd->add_option("--root", inv->root, "The root (2 gives the inverse square root)")
      ->required();
  inv_cmd->add_option("--epsilon", inv->epsilon, "Added to the diagonal")->capture_default_str();
  inv_cmd->add_option("--method", inv->method, "eigen or coupled-newton")->capture_default_str();
  inv_cmd->add_option("--out", inv->out, "Output .npy")->required();
  inv_cmd->callback([inv] { run_inv_root(*inv); });

  auto run = std::make_shared<RunOptions>();
  auto* run_cmd = sh->add_subcommand(
      "run",
      "Run Shampoo on parameters from .npy files: one step per leading index of their --grads.");
  run_cmd
      ->add_option("--param", run->params,
                   "An initial parameter (.npy, f32 or f64); repeat for several")
      ->required();
  run_cmd
      ->add_option("--grads", run->grads,
                   "Its gradients (.npy) of shape [steps, *param.shape]; one per --param")
      ->required();
  run_cmd->add_option("--out", run->outs, "Its final value (.npy); one per --param")->required();
  run_cmd->add_option("--save-state", run->save_state, "Also write the state (.safetensors)");
  run_cmd->add_option("--load-state", run->load_state,
                      "Start from a state written by --save-state (same parameters and options)");
  add_step_options(*run_cmd, *run);
  run_cmd->add_option(
      "--group", run->groups,
      "A parameter group: \"P[,P...] FLAGS\", the indices of its --params (0 for the first) "
      "and the step options it sets (the run's are its defaults; repeatable). Parameters in no "
      "group form one more group with the run's options.");
  run_cmd->callback([run] { run_shampoo(*run); });
}

}  // namespace tessel::cli
