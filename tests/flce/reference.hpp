// The unfused float64 reference FLCE tests compare against: materialize all (BT, V) logits, apply
// the softcap, take log_softmax, and form the loss the way PyTorch's cross_entropy does (nll_loss
// plus the label-smoothing term, each normalized by the sum of the non-ignored targets' weights
// for mean) plus Liger-Kernel's z-loss (normalized by the non-ignored row count for mean). The
// gradients are derived by hand from those formulas; reference_test.cpp checks them against
// finite differences of the loss.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <tessel/flce/types.hpp>

namespace tessel::flce::test {

struct Problem {
  std::int64_t bt = 0, h = 0, v = 0;
  std::vector<double> x;              // (BT, H)
  std::vector<double> w;              // (V, H)
  std::vector<std::int64_t> target;   // (BT)
  std::vector<double> bias;           // (V) or empty
  std::vector<double> class_weights;  // (V) or empty
};

struct ReferenceOptions {
  Reduction reduction = Reduction::mean;
  std::int64_t ignore_index = -100;
  double label_smoothing = 0;
  double lse_square_scale = 0;
  double softcap = 0;
  double temperature = 1;                  // raw logits are divided by it before the softcap
  std::int64_t shift_sequence_length = 0;  // causal shift: row i against target[i + 1]
  double entropy_bonus = 0;                // each row's loss term gets -beta * H
  double grad_output = 1;
  std::vector<double> grad_output_rows;  // (BT) or empty
  // Soft targets, (BT, soft_k) row-major: row i puts soft_probs[i*K + k] on soft_classes[i*K + k]
  // (not shifted); soft_k = 0: none. The loss is (1 - soft_weight) hard + soft_weight soft.
  std::int64_t soft_k = 0;
  std::vector<std::int64_t> soft_classes;
  std::vector<double> soft_probs;
  double soft_weight = 1;
};

struct ReferenceResult {
  std::vector<double> loss;    // (1) or (BT)
  std::vector<double> z_loss;  // same
  std::vector<double> grad_input, grad_weight, grad_bias;
  std::vector<double> lse, target_logprob, entropy;  // (BT), 0 for ignored rows
  std::vector<std::int64_t> argmax;  // (BT) the first largest logit's class, -1 for ignored rows
  std::vector<double> accuracy;      // like loss: [argmax == target], unweighted
  std::vector<double> logits;        // (BT, V) after temperature and softcap, to judge near-ties
};

// The targets each row is scored against: the causal shift written out (row i predicts
// target[i + 1]; each sequence's last row is ignored).
inline std::vector<std::int64_t> shifted_targets(std::vector<std::int64_t> const& target,
                                                 std::int64_t sequence_length,
                                                 std::int64_t ignore_index) {
  if (sequence_length == 0) return target;
  std::vector<std::int64_t> out(target.size());
  for (std::size_t i = 0; i < target.size(); ++i)
    out[i] =
        (static_cast<std::int64_t>(i) + 1) % sequence_length == 0 ? ignore_index : target[i + 1];
  return out;
}

inline ReferenceResult reference(Problem const& original, ReferenceOptions const& o) {
  Problem p = original;
  p.target = shifted_targets(original.target, o.shift_sequence_length, o.ignore_index);
  auto const bt = p.bt, h = p.h, v = p.v;
  bool const has_cw = !p.class_weights.empty();
  auto cw = [&](std::int64_t j) { return has_cw ? p.class_weights[j] : 1.0; };
  double const eps = o.label_smoothing;

  // Materialized logits, divided by the temperature, then softcapped: z = c tanh(raw / (T c)).
  // `raw` keeps the tempered logit raw / T.
  std::vector<double> raw(bt * v), z(bt * v);
  for (std::int64_t i = 0; i < bt; ++i)
    for (std::int64_t j = 0; j < v; ++j) {
      double s = p.bias.empty() ? 0.0 : p.bias[j];
      for (std::int64_t k = 0; k < h; ++k) s += p.x[i * h + k] * p.w[j * h + k];
      s /= o.temperature;
      raw[i * v + j] = s;
      z[i * v + j] = o.softcap > 0 ? o.softcap * std::tanh(s / o.softcap) : s;
    }
  std::vector<double> lse(bt), logp(bt * v);
  for (std::int64_t i = 0; i < bt; ++i) {
    double m = -INFINITY;
    for (std::int64_t j = 0; j < v; ++j) m = std::max(m, z[i * v + j]);
    double s = 0;
    for (std::int64_t j = 0; j < v; ++j) s += std::exp(z[i * v + j] - m);
    lse[i] = m + std::log(s);
    for (std::int64_t j = 0; j < v; ++j) logp[i * v + j] = z[i * v + j] - lse[i];
  }

  // H_i = -sum_j p_j logp_j, and the softmax mean of z, E_i = sum_j p_j z_j (= lse - H).
  std::vector<double> entropy(bt, 0.0), mean_z(bt, 0.0);
  for (std::int64_t i = 0; i < bt; ++i)
    for (std::int64_t j = 0; j < v; ++j) {
      double const pj = std::exp(logp[i * v + j]);
      entropy[i] -= pj * logp[i * v + j];
      mean_z[i] += pj * z[i * v + j];
    }

  // PyTorch: nll_i = -w[t] logp[t]; smooth_i = -sum_j w_j logp_j; both 0 for ignored rows.
  std::vector<double> nll(bt, 0.0), smooth(bt, 0.0), zl(bt, 0.0);
  double target_weight_sum = 0;
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < bt; ++i) {
    auto t = p.target[i];
    if (t == o.ignore_index) continue;
    ++count;
    target_weight_sum += cw(t);
    nll[i] = -cw(t) * logp[i * v + t];
    for (std::int64_t j = 0; j < v; ++j) smooth[i] -= cw(j) * logp[i * v + j];
    zl[i] = o.lse_square_scale * lse[i] * lse[i];
  }
  // tessel's rule for a zero divisor: the term contributes 0 (PyTorch: NaN).
  double const inv_w = target_weight_sum != 0 ? 1.0 / target_weight_sum : 0.0;
  double const inv_n = count != 0 ? 1.0 / static_cast<double>(count) : 0.0;

  ReferenceResult r;
  for (std::int64_t i = 0; i < bt; ++i) {
    bool const ignored = p.target[i] == o.ignore_index;
    r.lse.push_back(ignored ? 0.0 : lse[i]);
    r.target_logprob.push_back(ignored ? 0.0 : logp[i * v + p.target[i]]);
    r.entropy.push_back(ignored ? 0.0 : entropy[i]);
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < v; ++j)
      if (z[i * v + j] > z[i * v + best]) best = j;
    r.argmax.push_back(ignored ? -1 : best);
  }
  r.logits = z;
  // The token accuracy: hits over the non-ignored rows (mean), their count (sum), or per row.
  double hits = 0;
  for (std::int64_t i = 0; i < bt; ++i) {
    double const hit = r.argmax[i] >= 0 && r.argmax[i] == p.target[i] ? 1.0 : 0.0;
    hits += hit;
    if (o.reduction == Reduction::none) r.accuracy.push_back(hit);
  }
  if (o.reduction == Reduction::sum) r.accuracy.push_back(hits);
  if (o.reduction == Reduction::mean) r.accuracy.push_back(count != 0 ? hits / count : 0.0);
  // The entropy bonus joins the cross-entropy term (same reduction).
  std::vector<double> bonus(bt, 0.0);
  for (std::int64_t i = 0; i < bt; ++i)
    if (p.target[i] != o.ignore_index) bonus[i] = -o.entropy_bonus * entropy[i];
  // Soft targets: PyTorch's cross-entropy with probability targets q' = (1 - e) q + e / V (dense
  // q from the top-k, repeated classes added), -sum_j w_j q'_j logp_j, scaled by alpha; the hard
  // terms by 1 - alpha. Mean divides the soft term by the non-ignored rows.
  bool const soft = o.soft_k > 0;
  double const alpha = soft ? o.soft_weight : 0.0, hard = 1.0 - alpha;
  std::vector<double> q(bt * v, 0.0), soft_term(bt, 0.0);
  if (soft)
    for (std::int64_t i = 0; i < bt; ++i) {
      if (p.target[i] == o.ignore_index) continue;
      for (std::int64_t k = 0; k < o.soft_k; ++k)
        q[i * v + o.soft_classes[i * o.soft_k + k]] += o.soft_probs[i * o.soft_k + k];
      for (std::int64_t j = 0; j < v; ++j)
        soft_term[i] -= alpha * cw(j) * ((1 - eps) * q[i * v + j] + eps / static_cast<double>(v)) *
                        logp[i * v + j];
    }
  if (o.reduction == Reduction::none) {
    for (std::int64_t i = 0; i < bt; ++i) {
      r.loss.push_back(hard * ((1 - eps) * nll[i] + eps / static_cast<double>(v) * smooth[i]) +
                       bonus[i] + soft_term[i] + zl[i]);
      r.z_loss.push_back(zl[i]);
    }
  } else {
    double nll_sum = 0, smooth_sum = 0, z_sum = 0, bonus_sum = 0, soft_sum = 0;
    for (std::int64_t i = 0; i < bt; ++i) {
      nll_sum += nll[i];
      smooth_sum += smooth[i];
      z_sum += zl[i];
      bonus_sum += bonus[i];
      soft_sum += soft_term[i];
    }
    double ce =
        hard * ((1 - eps) * nll_sum + eps / static_cast<double>(v) * smooth_sum) + bonus_sum;
    if (o.reduction == Reduction::mean) {
      ce *= inv_w;
      z_sum *= inv_n;
      soft_sum *= inv_n;
    }
    r.loss.push_back(ce + soft_sum + z_sum);
    r.z_loss.push_back(z_sum);
  }

  // d loss / d raw logits.
  double weight_total = 0;
  for (std::int64_t j = 0; j < v; ++j) weight_total += cw(j);
  std::vector<double> g(bt * v, 0.0);
  for (std::int64_t i = 0; i < bt; ++i) {
    auto t = p.target[i];
    if (t == o.ignore_index) continue;
    double const dy = o.grad_output_rows.empty() ? o.grad_output : o.grad_output_rows[i];
    double const ce_scale = dy * (o.reduction == Reduction::mean ? inv_w : 1.0);
    double const z_scale = dy * (o.reduction == Reduction::mean ? inv_n : 1.0);
    double soft_mass = 0;  // sum_j w_j q_j
    for (std::int64_t j = 0; j < v; ++j) soft_mass += cw(j) * q[i * v + j];
    for (std::int64_t j = 0; j < v; ++j) {
      double const pj = std::exp(logp[i * v + j]);
      double const d_nll = cw(t) * (pj - (j == t ? 1.0 : 0.0));
      double const d_smooth = weight_total * pj - cw(j);
      double const d_z = 2 * o.lse_square_scale * lse[i] * pj;
      // d(-beta H)/dz_j = beta p_j (z_j - E[z]).
      double const d_bonus = o.entropy_bonus * pj * (z[i * v + j] - mean_z[i]);
      // d soft / dz_j = alpha [(1 - e)(Q p_j - w_j q_j) + (e / V)(W p_j - w_j)].
      double const d_soft = soft ? alpha * ((1 - eps) * (soft_mass * pj - cw(j) * q[i * v + j]) +
                                            eps / static_cast<double>(v) * d_smooth)
                                 : 0.0;
      double dz = ce_scale * (hard * ((1 - eps) * d_nll + eps / static_cast<double>(v) * d_smooth) +
                              d_bonus) +
                  z_scale * (d_z + d_soft);
      if (o.softcap > 0) {
        double const th = std::tanh(raw[i * v + j] / o.softcap);
        dz *= 1 - th * th;
      }
      dz /= o.temperature;
      g[i * v + j] = dz;
    }
  }
  r.grad_input.assign(bt * h, 0.0);
  r.grad_weight.assign(v * h, 0.0);
  r.grad_bias.assign(v, 0.0);
  for (std::int64_t i = 0; i < bt; ++i)
    for (std::int64_t j = 0; j < v; ++j) {
      double const gij = g[i * v + j];
      r.grad_bias[j] += gij;
      for (std::int64_t k = 0; k < h; ++k) {
        r.grad_input[i * h + k] += gij * p.w[j * h + k];
        r.grad_weight[j * h + k] += gij * p.x[i * h + k];
      }
    }
  return r;
}

// A teacher's top-k for every row of an (bt, v) problem: k distinct-or-not classes (the first
// row repeats a class) with random probabilities summing to 0.9.
inline void add_soft_targets(ReferenceOptions& o, std::int64_t bt, std::int64_t v, std::int64_t k,
                             unsigned seed, double weight) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> classes(0, v - 1);
  std::uniform_real_distribution<double> u(0.05, 1.0);
  o.soft_k = k;
  o.soft_weight = weight;
  o.soft_classes.clear();
  o.soft_probs.clear();
  for (std::int64_t i = 0; i < bt; ++i) {
    std::vector<double> q(k);
    double sum = 0;
    for (auto& e : q) sum += (e = u(rng));
    for (std::int64_t e = 0; e < k; ++e) {
      o.soft_classes.push_back(i == 0 && e == k - 1 && k > 1 ? o.soft_classes.front()
                                                             : classes(rng));
      o.soft_probs.push_back(0.9 * q[e] / sum);
    }
  }
}

// A random problem: inputs ~ N(0, x_scale), weights ~ N(0, w_scale), targets uniform in [0, V),
// each replaced by ignore_index with probability ignore_fraction.
inline Problem random_problem(std::int64_t bt, std::int64_t h, std::int64_t v, unsigned seed,
                              bool bias = false, bool class_weights = false,
                              double ignore_fraction = 0.0, std::int64_t ignore_index = -100,
                              double x_scale = 1.0, double w_scale = 0.5) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nx(0.0, x_scale), nw(0.0, w_scale);
  std::uniform_int_distribution<std::int64_t> classes(0, v - 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Problem p;
  p.bt = bt;
  p.h = h;
  p.v = v;
  for (std::int64_t i = 0; i < bt * h; ++i) p.x.push_back(nx(rng));
  for (std::int64_t i = 0; i < v * h; ++i) p.w.push_back(nw(rng));
  for (std::int64_t i = 0; i < bt; ++i)
    p.target.push_back(unit(rng) < ignore_fraction ? ignore_index : classes(rng));
  if (bias)
    for (std::int64_t j = 0; j < v; ++j) p.bias.push_back(nx(rng));
  if (class_weights)
    for (std::int64_t j = 0; j < v; ++j) p.class_weights.push_back(0.25 + 1.5 * unit(rng));
  return p;
}

}  // namespace tessel::flce::test
