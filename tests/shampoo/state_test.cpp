// Optimizer state: Distributed Shampoo's key paths, a bit-exact state_dict / load_state_dict round
// trip that continues identically, key flattening, every load error with the optimizer left
// exactly as it was, and symmetric packing of the factors (the same steps as full matrices, the
// packed layout, its bytes, and loads across layouts).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/state_keys.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;

using tessel::test::error_of;

Plan state_plan() {
  return make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                   std::vector<std::vector<index_t>>{{6, 5}, {3}});
}

Options state_options() {
  Options o;
  o.momentum = 0.9;
  o.grafting = adam_grafting();
  o.beta2 = 0.99;
  return o;
}

struct Trainer {
  std::vector<std::vector<float>> params{std::vector<float>(30, 0.5f),
                                         std::vector<float>(3, -1.0f)};
  void steps(Shampoo<float>& opt, int from, int count) {
    for (int t = from; t < from + count; ++t) {
      std::vector<std::vector<float>> grads{std::vector<float>(30), std::vector<float>(3)};
      for (std::size_t p = 0; p < 2; ++p)
        for (std::size_t i = 0; i < grads[p].size(); ++i)
          grads[p][i] = std::sin(0.7f * static_cast<float>(i + 3 * p) + static_cast<float>(t));
      std::vector<std::span<float>> ps(params.begin(), params.end());
      std::vector<std::span<float const>> gs(grads.begin(), grads.end());
      opt.step(ps, gs);
    }
  }
};

TEST(ShampooState, KeysFollowDistributedShampoo) {
  Shampoo<float> opt(state_plan(), state_options());
  auto sd = opt.state_dict();
  // (6,5) in 4x4 blocks: 4 blocks; (3): 1 block. Each: 2 factors + 2 inverse roots (1 each for
  // the 1-D block) + filtered_grad + momentum_buffer + adagrad; plus one step per parameter.
  EXPECT_EQ(sd.size(), 4u * 7u + 5u + 2u);
  auto const& f = sd.at({"0", "block_1", "shampoo", "factor_matrices", "1"});
  EXPECT_EQ(f.dtype, DType::f32);
  EXPECT_EQ(f.shape, (std::vector<index_t>{1, 1}));  // block 1 is (4, 1)
  EXPECT_EQ(sd.at({"0", "block_2", "filtered_grad"}).shape, (std::vector<index_t>{2, 4}));
  EXPECT_TRUE(sd.contains({"1", "block_0", "shampoo", "inv_factor_matrices", "0"}));
  EXPECT_TRUE(sd.contains({"1", "block_0", "momentum_buffer"}));
  EXPECT_TRUE(sd.contains({"1", "block_0", "adagrad"}));
  EXPECT_EQ(sd.at({"1", "step"}).dtype, DType::i64);
  EXPECT_TRUE(sd.at({"1", "step"}).shape.empty());
  // Without momentum, filtering or grafting their entries are absent.
  Options plain;
  plain.beta1 = 0.0;
  auto bare = Shampoo<float>(state_plan(), plain).state_dict();
  EXPECT_EQ(bare.size(), 4u * 4u + 2u + 2u);
  EXPECT_FALSE(bare.contains({"0", "block_0", "filtered_grad"}));
}

TEST(ShampooState, RoundTripContinuesBitExactly) {
  Shampoo<float> a(state_plan(), state_options());
  Trainer ra;
  ra.steps(a, 0, 3);
  auto sd = a.state_dict();
  Shampoo<float> b(state_plan(), state_options());
  b.load_state_dict(sd);
  EXPECT_EQ(b.step_count(), 3);
  EXPECT_TRUE(b.state_dict() == sd);
  Trainer rb;
  rb.params = ra.params;
  ra.steps(a, 3, 3);
  rb.steps(b, 3, 3);
  EXPECT_EQ(ra.params, rb.params);  // bit for bit
  EXPECT_TRUE(a.state_dict() == b.state_dict());
}

TEST(ShampooState, KeysFlattenToJsonAndBack) {
  StateKey key{"0", "block_1", "shampoo", "factor_matrices", "0"};
  EXPECT_EQ(flatten_state_key(key), "[\"0\",\"block_1\",\"shampoo\",\"factor_matrices\",\"0\"]");
  EXPECT_EQ(parse_state_key(flatten_state_key(key)), key);
  EXPECT_EQ(parse_state_key("[\"a \\\"quoted\\\" name\"]"), (StateKey{"a \"quoted\" name"}));
  for (char const* bad : {"", "[]", "[1]", "{\"a\": 1}", "[\"0\"", "\"0\""})
    EXPECT_EQ(error_of([&] { parse_state_key(bad); }),
              std::string("the state key \"") + bad +
                  "\" is not a JSON array of strings such as [\"0\",\"step\"].");
}

TEST(ShampooState, KeysFlattenToTheBytesStateFilesHoldAlready) {
  // The names nlohmann/json wrote before io/json.hpp: JSON escapes, \u00xx in lowercase hex for
  // control characters, DEL, '/' and non-ASCII text as they are.
  StateKey const key{"0", "block_1", "a \"q\" \\ \n \x01 \xc3\xa9 \x7f /"};
  std::string const flat = R"(["0","block_1","a \"q\" \\ \n \u0001 )"
                           "\xc3\xa9 \x7f /\"]";
  EXPECT_EQ(flatten_state_key(key), flat);
  EXPECT_EQ(parse_state_key(flat), key);
  EXPECT_EQ(flatten_state_key({}), "[]");
  // Spaces and escapes another writer may use read the same.
  EXPECT_EQ(parse_state_key(" [ \"0\" , \"\\u0062lock_1\" ]\n"), (StateKey{"0", "block_1"}));
  for (char const* bad : {"[[\"0\"]]", "[\"0\",]", "[\"0\"] x", "[\"\\ud800\"]", "null"})
    EXPECT_EQ(error_of([&] { parse_state_key(bad); }),
              std::string("the state key \"") + bad +
                  "\" is not a JSON array of strings such as [\"0\",\"step\"].");
}

// Each broken state must be refused with its sentence and change nothing.
void expect_refused(StateDict const& broken, std::string const& message) {
  Shampoo<float> opt(state_plan(), state_options());
  Trainer r;
  r.steps(opt, 0, 2);
  auto const before = opt.state_dict();
  EXPECT_EQ(error_of([&] { opt.load_state_dict(broken); }), message);
  EXPECT_TRUE(opt.state_dict() == before);
  EXPECT_EQ(opt.step_count(), 2);
}

TEST(ShampooState, LoadErrorsLeaveTheOptimizerAsItWas) {
  Shampoo<float> source(state_plan(), state_options());
  Trainer r;
  r.steps(source, 0, 5);
  auto const good = source.state_dict();

  auto missing = good;
  missing.erase({"0", "block_3", "momentum_buffer"});
  expect_refused(missing,
                 "the state has no key [\"0\",\"block_3\",\"momentum_buffer\"]; it holds " +
                     std::to_string(good.size() - 1) + " keys where this optimizer has " +
                     std::to_string(good.size()) + ".");

  auto misshaped = good;
  misshaped[{"0", "block_0", "shampoo", "factor_matrices", "1"}].shape = {2, 8};
  expect_refused(misshaped,
                 "the state's [\"0\",\"block_0\",\"shampoo\",\"factor_matrices\",\"1\"] has shape "
                 "(2,8) but this optimizer's factor there is 4 x 4, which loads from shape (10) "
                 "(packed) or (4,4) (full).");

  auto misshaped_root = good;
  misshaped_root[{"0", "block_0", "shampoo", "inv_factor_matrices", "1"}].shape = {12};
  expect_refused(misshaped_root,
                 "the state's [\"0\",\"block_0\",\"shampoo\",\"inv_factor_matrices\",\"1\"] has "
                 "shape (12) but this optimizer's inverse root there is 4 x 4, which loads from "
                 "shape (10) (packed) or (4,4) (full).");
  // (10) is the packed layout: then the bytes must be a packed matrix's.
  misshaped_root[{"0", "block_0", "shampoo", "inv_factor_matrices", "1"}].shape = {10};
  expect_refused(misshaped_root,
                 "the state's [\"0\",\"block_0\",\"shampoo\",\"inv_factor_matrices\",\"1\"] "
                 "holds 64 bytes but its shape and dtype need 40.");

  auto retyped = good;
  auto& t = retyped[{"1", "block_0", "adagrad"}];
  t.dtype = DType::i32;
  expect_refused(retyped,
                 "the state's [\"1\",\"block_0\",\"adagrad\"] has dtype i32 but this optimizer "
                 "keeps f32.");

  auto truncated = good;
  truncated[{"1", "block_0", "filtered_grad"}].data.pop_back();
  expect_refused(truncated,
                 "the state's [\"1\",\"block_0\",\"filtered_grad\"] holds 11 bytes but its shape "
                 "and dtype need 12.");

  auto extra = good;
  extra[{"2", "step"}] = good.at({"0", "step"});
  expect_refused(extra,
                 "the state has the key [\"2\",\"step\"], which this optimizer does not keep.");

  auto steps_differ = good;
  std::int64_t other = 4;
  steps_differ[{"1", "step"}] = make_state_tensor<std::int64_t>({}, std::span(&other, 1));
  expect_refused(steps_differ,
                 "the state's step of parameter 1 is 4 but parameter 0's is 5; all parameters "
                 "share one step.");

  auto negative = good;
  std::int64_t minus = -1;
  negative[{"0", "step"}] = make_state_tensor<std::int64_t>({}, std::span(&minus, 1));
  expect_refused(negative, "the state's step of parameter 0 is -1; steps are >= 0.");
}

// ---- symmetric packing ----

TEST(SymmetricPacking, IndexIsRowMajorUpperTriangleOrder) {
  // Independent formula: the elements after (i, j) in row-major upper-triangle order are the rest
  // of row i and the triangle of the rows below, so index = P - 1 - (d - 1 - j) - T(d - 1 - i).
  for (index_t d = 0; d <= 9; ++d) {
    index_t const p = packed_size(d);
    EXPECT_EQ(p, d * (d + 1) / 2);
    EXPECT_EQ(packed_dim(p), d);
    index_t k = 0;
    for (index_t i = 0; i < d; ++i)
      for (index_t j = i; j < d; ++j, ++k) {
        EXPECT_EQ(packed_index(d, i, j), k);
        EXPECT_EQ(packed_index(d, i, j), p - 1 - (d - 1 - j) - packed_size(d - 1 - i));
      }
    EXPECT_EQ(k, p);
  }
  EXPECT_EQ(packed_dim(35), -1);
  static_assert(packed_index(4, 1, 1) == 4 && packed_index(4, 3, 3) == 9);
}

TEST(SymmetricPacking, BytesRoundTripAndKeepTheUpperTriangle) {
  index_t const d = 5;
  std::vector<double> full(static_cast<std::size_t>(d * d)), back(full.size());
  for (index_t i = 0; i < d; ++i)
    for (index_t j = 0; j < d; ++j)  // upper and lower triangles differ: packing keeps the upper
      full[static_cast<std::size_t>(i * d + j)] = i <= j ? 10.0 * i + j : -1.0;
  std::vector<double> packed(static_cast<std::size_t>(packed_size(d)));
  pack_symmetric_bytes(reinterpret_cast<std::byte const*>(full.data()),
                       reinterpret_cast<std::byte*>(packed.data()), d, sizeof(double));
  for (index_t i = 0; i < d; ++i)
    for (index_t j = i; j < d; ++j)
      EXPECT_EQ(packed[static_cast<std::size_t>(packed_index(d, i, j))], 10.0 * i + j);
  unpack_symmetric_bytes(reinterpret_cast<std::byte const*>(packed.data()),
                         reinterpret_cast<std::byte*>(back.data()), d, sizeof(double));
  for (index_t i = 0; i < d; ++i)
    for (index_t j = 0; j < d; ++j)
      EXPECT_EQ(back[static_cast<std::size_t>(i * d + j)], 10.0 * std::min(i, j) + std::max(i, j));
}

TEST(SymmetricPacking, ExecutorPassesMatchTheByteCopiesAcrossStrips) {
  // d up to 70 crosses the 32-row strips of unpack_symmetric's mirrored lower triangle.
  for (index_t d : {1, 5, 32, 33, 70}) {
    SCOPED_TRACE(d);
    index_t const count = 3, p = packed_size(d);
    std::vector<double> packed(static_cast<std::size_t>(count * p));
    for (std::size_t k = 0; k < packed.size(); ++k) packed[k] = 0.5 * static_cast<double>(k) + 1;
    std::vector<double> full(static_cast<std::size_t>(count * d * d), -1.0);
    unpack_symmetric(exec::Serial{}, packed.data(), full.data(), count, d);
    std::vector<double> expected(static_cast<std::size_t>(d * d));
    for (index_t c = 0; c < count; ++c) {
      unpack_symmetric_bytes(reinterpret_cast<std::byte const*>(packed.data() + c * p),
                             reinterpret_cast<std::byte*>(expected.data()), d, sizeof(double));
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), full.begin() + c * d * d));
    }
    std::vector<float> repacked(packed.size());
    pack_symmetric(exec::Auto{}, static_cast<double const*>(full.data()), repacked.data(), count,
                   d);
    for (std::size_t k = 0; k < packed.size(); ++k)
      EXPECT_EQ(repacked[k], static_cast<float>(packed[k]));
  }
}

// Parameters (6, 5) and (3), blocks of 4, and a 3-D one whose blocks have three factors.
Plan packing_plan() {
  return make_plan(PlanOptions<index_t, index_t>{4, 3, 1, DType::f32},
                   std::vector<std::vector<index_t>>{{6, 5}, {3}, {2, 3, 4}});
}

template <class T>
struct PackingRun {
  std::vector<std::vector<T>> params{std::vector<T>(30, T(0.5)), std::vector<T>(3, T(-1)),
                                     std::vector<T>(24, T(0.25))};
  void steps(Shampoo<T>& opt, int from, int count) {
    for (int t = from; t < from + count; ++t) {
      std::vector<std::vector<T>> grads;
      for (std::size_t p = 0; p < params.size(); ++p) {
        grads.emplace_back(params[p].size());
        for (std::size_t i = 0; i < grads[p].size(); ++i)
          grads[p][i] = static_cast<T>(std::sin(0.7 * static_cast<double>(i + 3 * p) + t));
      }
      std::vector<std::span<T>> ps(params.begin(), params.end());
      std::vector<std::span<T const>> gs(grads.begin(), grads.end());
      opt.step(ps, gs);
    }
  }
};

Options packing_options(DType factor_dtype, bool packed) {
  Options o = state_options();
  o.factor_matrix_dtype = factor_dtype;
  o.use_symmetric_packing = packed;
  o.epsilon = 1e-6;
  o.precondition_frequency = 2;
  return o;
}

// `variant` changes the options around the factors (preconditioner, KL-Shampoo, trace scaling,
// the eigendecomposition's method and tolerance). Packing changes no number at all: the factors
// are symmetric by construction (SYRK), and so are Shampoo's roots (Q diag(sqrt f) times its
// transpose, one SYRK: roots/eigen.hpp), so their upper triangles are all a state needs.
template <class T, class Variant = void (*)(Options&)>
void expect_packing_changes_no_number(
    DType factor_dtype, Variant variant = [](Options&) {}) {
  SCOPED_TRACE(std::string(dtype_name(dtype_of_v<T>)) + " steps, " +
               std::string(dtype_name(factor_dtype)) + " factors");
  Options o = packing_options(factor_dtype, false);
  variant(o);
  Shampoo<T> full(packing_plan(), o);
  o.use_symmetric_packing = true;
  Shampoo<T> packed(packing_plan(), o);
  PackingRun<T> rf, rp;
  rf.steps(full, 0, 5);
  rp.steps(packed, 0, 5);
  EXPECT_EQ(rf.params, rp.params);  // bit for bit
  for (std::size_t b = 0; b < full.plan().num_blocks(); ++b)
    for (std::size_t j = 0; j < full.preconditioned_dims(b).size(); ++j) {
      EXPECT_EQ(full.factor_matrix(b, j), packed.factor_matrix(b, j));
      EXPECT_EQ(full.inverse_root(b, j), packed.inverse_root(b, j));
    }
}

TEST(SymmetricPacking, PackingChangesNoFactorNoRootAndNoParameter) {
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
    expect_packing_changes_no_number<float>(d);
    expect_packing_changes_no_number<double>(d);
  }
}

// A d x d row-major matrix with its lower triangle replaced by the transposed upper one.
template <class T>
std::vector<T> symmetric_from_upper(std::vector<T> m) {
  auto const d = static_cast<std::size_t>(std::lround(std::sqrt(static_cast<double>(m.size()))));
  for (std::size_t i = 0; i < d; ++i)
    for (std::size_t j = i + 1; j < d; ++j) m[j * d + i] = m[i * d + j];
  return m;
}

// Coupled Newton's roots are symmetric only up to rounding: with packing each new one is made
// symmetric from its upper triangle, so the packed run's roots are the full run's mirrored (the
// synthetic gradients keep the factors bit-identical), and its parameters agree to the iteration's
// rounding (8e-12 seen in f64).
TEST(SymmetricPacking, CoupledNewtonRootsAreMadeSymmetricFromTheirUpperTriangles) {
  Options o = packing_options(DType::f64, false);
  o.root.method = RootMethod::coupled_newton;
  auto previous = set_warning_handler({});  // the eigen settings' "no effect" sentence
  Shampoo<double> full(packing_plan(), o);
  o.use_symmetric_packing = true;
  Shampoo<double> packed(packing_plan(), o);
  set_warning_handler(std::move(previous));
  PackingRun<double> rf, rp;
  rf.steps(full, 0, 5);
  rp.steps(packed, 0, 5);
  bool asymmetric = false;
  for (std::size_t b = 0; b < full.plan().num_blocks(); ++b)
    for (std::size_t j = 0; j < full.preconditioned_dims(b).size(); ++j) {
      EXPECT_EQ(full.factor_matrix(b, j), packed.factor_matrix(b, j));
      auto const root = full.inverse_root(b, j);
      EXPECT_EQ(symmetric_from_upper(root), packed.inverse_root(b, j));
      asymmetric = asymmetric || symmetric_from_upper(root) != root;
    }
  EXPECT_TRUE(asymmetric) << "no coupled-Newton root was asymmetric, so this test sees nothing";
  for (std::size_t p = 0; p < rf.params.size(); ++p)
    for (std::size_t i = 0; i < rf.params[p].size(); ++i)
      EXPECT_NEAR(rp.params[p][i], rf.params[p][i], 1e-10) << "parameter " << p << "[" << i << "]";
}

TEST(SymmetricPacking, EveryFactorKeepingPreconditionerStepsBitIdentically) {
  auto const variants = {
      +[](Options& o) { o.preconditioner = PreconditionerType::eigendecomposed; },
      +[](Options& o) { o.preconditioner = PreconditionerType::eigenvalue_corrected; },
      +[](Options& o) { o.kl_shampoo = true; },
      +[](Options& o) { o.use_trace_scaling = true; },
      // The warm-started decompositions read the unpacked factors too.
      +[](Options& o) {
        o.preconditioner = PreconditionerType::eigenvalue_corrected;
        o.root.eigendecomposition = {EigendecompositionMethod::qr, 0.0, 2};
      },
      +[](Options& o) {
        o.preconditioner = PreconditionerType::eigendecomposed;
        o.root.eigendecomposition = {EigendecompositionMethod::eigh, 0.3, 1};
      },
  };
  int i = 0;
  for (auto variant : variants) {
    SCOPED_TRACE("variant " + std::to_string(i++));
    expect_packing_changes_no_number<double>(DType::f64, variant);
    expect_packing_changes_no_number<float>(DType::bf16, variant);
  }
}

// Whether a key holds a symmetric matrix saved packed with use_symmetric_packing: a factor, or
// Shampoo's inverse root.
bool is_symmetric_key(StateKey const& key) {
  return key.size() >= 2 &&
         (key[key.size() - 2] == "factor_matrices" || key[key.size() - 2] == "inv_factor_matrices");
}

// Bytes of the tensors under [.., name, j] of a state.
std::size_t bytes_of(StateDict const& sd, std::string const& name) {
  std::size_t n = 0;
  for (auto const& [key, t] : sd)
    if (key.size() >= 2 && key[key.size() - 2] == name) n += t.data.size();
  return n;
}

template <class T>
std::vector<T> values_of(StateTensor const& t) {
  std::vector<T> v(static_cast<std::size_t>(t.numel()));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

TEST(SymmetricPacking, StateHoldsUpperTrianglesUnderTheSameKeys) {
  Shampoo<double> full(packing_plan(), packing_options(DType::f64, false));
  Shampoo<double> packed(packing_plan(), packing_options(DType::f64, true));
  PackingRun<double> rf, rp;
  rf.steps(full, 0, 3);
  rp.steps(packed, 0, 3);
  auto const sf = full.state_dict(), sp = packed.state_dict();
  ASSERT_EQ(sf.size(), sp.size());
  // Expected bytes: sum over blocks and modes of d (d + 1) / 2 against d * d elements, for the
  // factors and for the inverse roots alike.
  std::size_t tri = 0, square = 0;
  for (std::size_t b = 0; b < full.plan().num_blocks(); ++b) {
    auto const& shape =
        full.plan().groups[static_cast<std::size_t>(full.plan().blocks[b].group)].shape;
    for (index_t dim : full.preconditioned_dims(b)) {
      index_t const d = shape[dim];
      tri += static_cast<std::size_t>(packed_size(d)) * sizeof(double);
      square += static_cast<std::size_t>(d * d) * sizeof(double);
    }
  }
  for (char const* name : {"factor_matrices", "inv_factor_matrices"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(bytes_of(sp, name), tri);
    EXPECT_EQ(bytes_of(sf, name), square);
    EXPECT_LT(tri, square);
  }
  for (auto const& [key, t] : sf) {
    auto const& q = sp.at(key);
    std::vector<double> const f = values_of<double>(t), v = values_of<double>(q);
    if (!is_symmetric_key(key)) {
      // The same, but for rounding where the roots' lower triangles reach the numbers.
      ASSERT_EQ(q.shape, t.shape) << state_key_text(key);
      for (std::size_t i = 0; i < f.size(); ++i)
        EXPECT_NEAR(v[i], f[i], 1e-13) << state_key_text(key);
      continue;
    }
    // Packed element k of a (d, d) matrix is M[i][j] at the k-th (i <= j) in row-major order: the
    // full run's upper triangle, bit for bit (its factors are the packed run's, and so are its
    // roots' upper triangles).
    index_t const d = t.shape[0];
    ASSERT_EQ(q.shape, (std::vector<index_t>{packed_size(d)})) << state_key_text(key);
    bool const factor = key[key.size() - 2] == "factor_matrices";
    std::size_t k = 0;
    for (index_t i = 0; i < d; ++i)
      for (index_t j = i; j < d; ++j, ++k) {
        EXPECT_EQ(v[k], f[static_cast<std::size_t>(i * d + j)]) << state_key_text(key);
        if (factor) {
          EXPECT_EQ(f[static_cast<std::size_t>(i * d + j)], f[static_cast<std::size_t>(j * d + i)]);
        }
      }
  }
}

// A state's symmetric matrix as an optimizer of the other layout saves it: the upper triangle of
// a full one, or the full matrix of a packed one.
StateTensor in_other_layout(StateTensor t) {
  std::size_t const size = dtype_size(t.dtype);
  if (t.shape.size() == 2) {
    index_t const d = t.shape[0];
    std::vector<std::byte> upper(static_cast<std::size_t>(packed_size(d)) * size);
    pack_symmetric_bytes(t.data.data(), upper.data(), d, size);
    return StateTensor{t.dtype, {packed_size(d)}, std::move(upper)};
  }
  index_t const d = packed_dim(t.shape[0]);
  std::vector<std::byte> square(static_cast<std::size_t>(d * d) * size);
  unpack_symmetric_bytes(t.data.data(), square.data(), d, size);
  return StateTensor{t.dtype, {d, d}, std::move(square)};
}

TEST(SymmetricPacking, LoadsEitherLayoutAndResumesBitIdentically) {
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dtype));
    for (bool packed : {false, true}) {
      SCOPED_TRACE(packed ? "packed" : "full");
      // A run of 6 steps, and one resumed at step 3 from the first's state: the same parameters.
      Shampoo<float> uninterrupted(packing_plan(), packing_options(dtype, packed));
      PackingRun<float> ru;
      ru.steps(uninterrupted, 0, 3);
      auto const saved = uninterrupted.state_dict();
      auto const params_at_3 = ru.params;
      ru.steps(uninterrupted, 3, 3);
      Shampoo<float> resumed(packing_plan(), packing_options(dtype, packed));
      resumed.load_state_dict(saved);
      EXPECT_TRUE(resumed.state_dict() == saved);
      PackingRun<float> rr;
      rr.params = params_at_3;
      rr.steps(resumed, 3, 3);
      EXPECT_EQ(rr.params, ru.params);
      // Into an optimizer of the other layout: it reads every matrix back in its own layout.
      Shampoo<float> other(packing_plan(), packing_options(dtype, !packed));
      other.load_state_dict(saved);
      auto const back = other.state_dict();
      ASSERT_EQ(back.size(), saved.size());
      for (auto const& [key, t] : saved)
        EXPECT_TRUE(back.at(key) == (is_symmetric_key(key) ? in_other_layout(t) : t))
            << state_key_text(key);
    }
  }
}

TEST(SymmetricPacking, WrongSizesAreRefusedNamingTheKey) {
  Shampoo<float> source(packing_plan(), packing_options(DType::f32, true));
  PackingRun<float> r;
  r.steps(source, 0, 2);
  auto const good = source.state_dict();
  StateKey const key{"0", "block_0", "shampoo", "factor_matrices", "1"};
  for (bool packed : {false, true}) {
    Shampoo<float> opt(packing_plan(), packing_options(DType::f32, packed));
    PackingRun<float> ro;
    ro.steps(opt, 0, 2);
    auto const before = opt.state_dict();
    auto wrong = good;
    wrong[key].shape = {9};
    wrong[key].data.resize(9 * sizeof(float));
    EXPECT_EQ(error_of([&] { opt.load_state_dict(wrong); }),
              "the state's [\"0\",\"block_0\",\"shampoo\",\"factor_matrices\",\"1\"] has shape "
              "(9) but this optimizer's factor there is 4 x 4, which loads from shape (10) "
              "(packed) or (4,4) (full).");
    auto short_data = good;
    short_data[key].data.resize(9 * sizeof(float));
    EXPECT_EQ(error_of([&] { opt.load_state_dict(short_data); }),
              "the state's [\"0\",\"block_0\",\"shampoo\",\"factor_matrices\",\"1\"] holds 36 "
              "bytes but its shape and dtype need 40.");
    auto short_full = good;
    short_full[key].shape = {4, 4};
    EXPECT_EQ(error_of([&] { opt.load_state_dict(short_full); }),
              "the state's [\"0\",\"block_0\",\"shampoo\",\"factor_matrices\",\"1\"] holds 40 "
              "bytes but its shape and dtype need 64.");
    EXPECT_TRUE(opt.state_dict() == before);
  }
}

}  // namespace
