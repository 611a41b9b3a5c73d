// `tessel plan shampoo`, `tessel plan distribute` and `tessel shampoo inv-root | run`: Shampoo's
// blocking plan and rank assignment as JSON, inverse roots of a matrix in a .npy file, and a run
// of Shampoo steps on one parameter from .npy files, with options named after Distributed
// Shampoo's, for cross-checks against the PyTorch implementation.
#include <charconv>
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tessel/io/npy.hpp>
#include <tessel/shampoo/checkpoint.hpp>
#include <tessel/shampoo/distribute.hpp>
#include <tessel/shampoo/matrix_functions.hpp>
#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/plan.hpp>

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

double parse_real(std::string const& text, std::string_view option) {
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(text, &used);
  } catch (std::exception const&) {
    used = 0;
  }
  if (text.empty() || used != text.size())
    detail::throw_error(detail::sentence(option, ": \"", text, "\" is not a number."));
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
};

void run_plan_shampoo(PlanShampooOptions const& o) {
  std::vector<std::vector<index_t>> shapes;
  for (auto const& p : o.params) shapes.push_back(parse_param_shape(p));
  index_t const max_dim = parse_integer_or_inf(o.max_dim, "--max-dim", 1);
  index_t const target = parse_integer_or_inf(o.target_dims, "--target-dims", 1);
  index_t const ranks = parse_integer(o.ranks, "--ranks");
  if (ranks < 1) detail::throw_error(detail::sentence("--ranks must be >= 1, got ", ranks, "."));
  DType const dtype = parse_dtype(o.dtype);
  auto plan = shampoo::make_plan(
      shampoo::PlanOptions<index_t, index_t>{max_dim, target, ranks, dtype}, shapes);
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
  std::cout << json_line({{"max_preconditioner_dim", inf_or_number(max_dim)},
                          {"target_parameter_dimensionality", inf_or_number(target)},
                          {"ranks", ranks},
                          {"dtype", std::string(dtype_name(dtype))},
                          {"num_blocks", plan.num_blocks()},
                          {"params", params},
                          {"rank_bytes", rank_bytes}})
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
  double const root = parse_real(o.root, "--root");
  double const epsilon = parse_real(o.epsilon, "--epsilon");
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
  std::string param, grads, out, save_state;
  std::string lr = "0.01", beta1 = "0.9", beta2 = "1.0", beta3 = "-1", epsilon = "1e-12";
  std::string momentum = "0", dampening = "0";
  bool nesterov = false;
  std::string weight_decay = "0", weight_decay_type = "decoupled";
  std::string max_dim = "1024", frequency = "1", start = "-1", bias_correction = "true";
  std::string grafting = "none", grafting_beta2, grafting_epsilon = "1e-10";
  std::string root_method = "eigen", target_dims = "1", factor_dtype = "f32";
};

shampoo::Options to_options(RunOptions const& r) {
  shampoo::Options o;
  o.lr = parse_real(r.lr, "--lr");
  o.beta1 = parse_real(r.beta1, "--beta1");
  o.beta2 = parse_real(r.beta2, "--beta2");
  o.beta3 = parse_real(r.beta3, "--beta3");
  o.epsilon = parse_real(r.epsilon, "--epsilon");
  o.momentum = parse_real(r.momentum, "--momentum");
  o.dampening = parse_real(r.dampening, "--dampening");
  o.use_nesterov = r.nesterov;
  o.weight_decay = parse_real(r.weight_decay, "--weight-decay");
  if (r.weight_decay_type == "decoupled")
    o.weight_decay_type = shampoo::WeightDecayType::decoupled;
  else if (r.weight_decay_type == "l2")
    o.weight_decay_type = shampoo::WeightDecayType::l2;
  else
    detail::throw_error(detail::sentence("--weight-decay-type must be decoupled or l2, got \"",
                                         r.weight_decay_type, "\"."));
  o.precondition_frequency = parse_integer(r.frequency, "--precondition-frequency");
  o.start_preconditioning_step = parse_integer(r.start, "--start-preconditioning-step");
  o.use_bias_correction = parse_bool(r.bias_correction, "--use-bias-correction");
  double const graft_eps = parse_real(r.grafting_epsilon, "--grafting-epsilon");
  auto beta2_or = [&](double fallback) {
    return r.grafting_beta2.empty() ? fallback : parse_real(r.grafting_beta2, "--grafting-beta2");
  };
  if (r.grafting == "none")
    o.grafting = shampoo::no_grafting();
  else if (r.grafting == "sgd")
    o.grafting = shampoo::sgd_grafting();
  else if (r.grafting == "adagrad")
    o.grafting = shampoo::adagrad_grafting(graft_eps);
  else if (r.grafting == "rmsprop")
    o.grafting = shampoo::rmsprop_grafting(beta2_or(0.99), graft_eps);
  else if (r.grafting == "adam")
    o.grafting = shampoo::adam_grafting(beta2_or(0.999), graft_eps);
  else
    detail::throw_error(detail::sentence(
        "--grafting must be none, sgd, adagrad, rmsprop or adam, got \"", r.grafting, "\"."));
  o.root.method = parse_method(r.root_method, "--root-method");
  o.factor_matrix_dtype = parse_dtype(r.factor_dtype);
  shampoo::validate(o);
  return o;
}

template <class T>
std::vector<T> run_steps(RunOptions const& r, shampoo::Options const& o, NpyArray const& w,
                         NpyArray const& g, index_t steps, index_t max_dim, index_t target) {
  std::vector<index_t> shape(w.shape.begin(), w.shape.end());
  auto plan = shampoo::make_plan(shampoo::PlanOptions<index_t, index_t>{max_dim, target, 1},
                                 std::vector<std::vector<index_t>>{shape});
  shampoo::Shampoo<T> opt(plan, o);
  std::vector<T> param = w.as<T>();
  std::vector<T> grads = g.as<T>();
  std::size_t const n = param.size();
  for (index_t t = 0; t < steps; ++t) {
    std::span<T const> grad(grads.data() + static_cast<std::size_t>(t) * n, n);
    opt.step({std::span<T>(param)}, {grad});
  }
  if (!r.save_state.empty()) shampoo::save_checkpoint(opt, r.save_state);
  return param;
}

void run_shampoo(RunOptions const& r) {
  shampoo::Options const o = to_options(r);
  index_t const max_dim = parse_integer_or_inf(r.max_dim, "--max-preconditioner-dim", 1);
  index_t const target = parse_integer_or_inf(r.target_dims, "--target-dims", 1);
  NpyArray w = read_npy(r.param);
  NpyArray g = read_npy(r.grads);
  if (w.dtype != DType::f32 && w.dtype != DType::f64)
    detail::throw_error(detail::sentence(r.param, " holds ", dtype_name(w.dtype),
                                         " values; shampoo run reads f32 or f64 parameters."));
  if (w.shape.size() > shampoo::max_param_rank)
    detail::throw_error(detail::sentence(r.param, " has rank ", w.shape.size(),
                                         "; Shampoo takes parameters of rank <= 8."));
  bool fits = g.shape.size() == w.shape.size() + 1;
  for (std::size_t k = 0; fits && k < w.shape.size(); ++k) fits = g.shape[k + 1] == w.shape[k];
  if (!fits)
    detail::throw_error(detail::sentence(
        r.grads, " has shape ", tessel::detail::shape_text(g.shape), " but must be [steps, *",
        tessel::detail::shape_text(w.shape), "] for the parameter in ", r.param, "."));
  index_t const steps = g.shape[0];
  auto report = [&](auto const& result) {
    write_npy(r.out, std::span<std::int64_t const>(w.shape), result);
    std::cout << json_line({{"steps", steps},
                            {"shape", w.shape},
                            {"dtype", std::string(dtype_name(w.dtype))},
                            {"out", r.out}})
              << '\n';
  };
  if (w.dtype == DType::f32)
    report(run_steps<float>(r, o, w, g, steps, max_dim, target));
  else
    report(run_steps<double>(r, o, w, g, steps, max_dim, target));
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
      "run", "Run Shampoo on one parameter: one step per leading index of --grads.");
  run_cmd->add_option("--param", run->param, "The initial parameter (.npy, f32 or f64)")
      ->required();
  run_cmd->add_option("--grads", run->grads, "Gradients (.npy) of shape [steps, *param.shape]")
      ->required();
  run_cmd->add_option("--out", run->out, "The final parameter (.npy)")->required();
  run_cmd->add_option("--save-state", run->save_state, "Also write the state (.safetensors)");
  run_cmd->add_option("--lr", run->lr)->capture_default_str();
  run_cmd->add_option("--beta1", run->beta1)->capture_default_str();
  run_cmd->add_option("--beta2", run->beta2)->capture_default_str();
  run_cmd->add_option("--beta3", run->beta3, "-1: equal to beta1")->capture_default_str();
  run_cmd->add_option("--epsilon", run->epsilon)->capture_default_str();
  run_cmd->add_option("--momentum", run->momentum)->capture_default_str();
  run_cmd->add_option("--dampening", run->dampening)->capture_default_str();
  run_cmd->add_flag("--nesterov", run->nesterov, "Nesterov momentum");
  run_cmd->add_option("--weight-decay", run->weight_decay)->capture_default_str();
  run_cmd->add_option("--weight-decay-type", run->weight_decay_type, "decoupled or l2")
      ->capture_default_str();
  run_cmd->add_option("--max-preconditioner-dim", run->max_dim, "An integer or inf")
      ->capture_default_str();
  run_cmd->add_option("--precondition-frequency", run->frequency)->capture_default_str();
  run_cmd->add_option("--start-preconditioning-step", run->start, "-1: precondition-frequency")
      ->capture_default_str();
  run_cmd->add_option("--use-bias-correction", run->bias_correction, "true or false")
      ->capture_default_str();
  run_cmd->add_option("--grafting", run->grafting, "none, sgd, adagrad, rmsprop or adam")
      ->capture_default_str();
  run_cmd->add_option("--grafting-beta2", run->grafting_beta2,
                      "Default 0.99 for rmsprop, 0.999 for adam");
  run_cmd->add_option("--grafting-epsilon", run->grafting_epsilon)->capture_default_str();
  run_cmd->add_option("--root-method", run->root_method, "eigen or coupled-newton")
      ->capture_default_str();
  run_cmd
      ->add_option("--target-dims", run->target_dims,
                   "target_parameter_dimensionality (an integer or inf)")
      ->capture_default_str();
  run_cmd->add_option("--factor-dtype", run->factor_dtype, "bf16, f16, f32 or f64")
      ->capture_default_str();
  run_cmd->callback([run] { run_shampoo(*run); });
}

}  // namespace tessel::cli
