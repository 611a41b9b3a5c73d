// A float64 reference of Distributed Shampoo's step, written for the tests from the math alone:
// nested loops over multi-indices for the factor contractions and mode products, and a plain
// symmetric eigendecomposition for the inverse roots. It uses only the core's merge_small_dims and
// multi_dim_split (tested in tests/core) to cut parameters into blocks, never the optimizer's code.
#pragma once

#include <cmath>
#include <map>
#include <vector>

#include <Eigen/Dense>

#include <tessel/core/merge_small_dims.hpp>
#include <tessel/core/multi_dim_split.hpp>
#include <tessel/core/shape.hpp>

namespace tessel::shampoo::reference {

struct ReferenceOptions {
  double lr = 1e-2, beta1 = 0.9, beta2 = 1.0, beta3 = -1.0, epsilon = 1e-12;
  double momentum = 0.0, dampening = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;
  bool l2 = false;
  long frequency = 1, start = -1;
  bool bias_correction = true;
  int grafting = 0;  // 0 none, 1 sgd, 2 adagrad, 3 rmsprop, 4 adam
  double graft_beta2 = 1.0, graft_eps = 1e-10;
  // exponent[order][dim]; missing entries use 1 / (2 max(order, 1)).
  std::map<long, std::map<long, double>> exponent;
  long max_dim = 4;      // small, so that the test shapes keep several modes and blocks
  long target_dims = 1;  // 0: keep the shape as it is
  // KL-Shampoo: factor k accumulates the gradient multiplied along every other preconditioned
  // mode by that mode's inverse root from before the step.
  bool kl = false;
  // Iterate averaging: 0 none, 1 generalized primal (mu_x), 2 schedule-free (mu_x from the lr).
  int averaging = 0;
  double mu_x = 0.9, mu_y = 0.8, lr_power = 2.0;
};

// Row-major multi-index helpers.
inline std::vector<long> unravel(long i, std::vector<long> const& shape) {
  std::vector<long> idx(shape.size());
  for (long k = static_cast<long>(shape.size()) - 1; k >= 0; --k) {
    idx[static_cast<std::size_t>(k)] = i % shape[static_cast<std::size_t>(k)];
    i /= shape[static_cast<std::size_t>(k)];
  }
  return idx;
}
inline long ravel(std::vector<long> const& idx, std::vector<long> const& shape) {
  long i = 0;
  for (std::size_t k = 0; k < shape.size(); ++k) i = i * shape[k] + idx[k];
  return i;
}
inline long numel(std::vector<long> const& shape) {
  long n = 1;
  for (long e : shape) n *= e;
  return n;
}

using Mat = Eigen::MatrixXd;

// Y[idx] = sum_a X[idx with mode k = a] M(a, idx_k): X multiplied along mode k by M.
inline std::vector<double> mode_multiply(std::vector<double> const& X,
                                         std::vector<long> const& shape, std::size_t k,
                                         Mat const& M) {
  std::vector<double> Y(X.size(), 0.0);
  for (long e = 0; e < numel(shape); ++e) {
    auto idx = unravel(e, shape);
    long const j = idx[k];
    double s = 0.0;
    for (long a = 0; a < shape[k]; ++a) {
      idx[k] = a;
      s += X[static_cast<std::size_t>(ravel(idx, shape))] * M(a, j);
    }
    Y[static_cast<std::size_t>(e)] = s;
  }
  return Y;
}

struct RefBlock {
  long param = 0;
  std::vector<long> offset, shape, merged;
  std::vector<Mat> factor, inverse;  // per mode; empty matrix = not preconditioned
  std::vector<double> root;          // per mode
  std::vector<double> filtered, momentum, graft;
  std::vector<double> z;  // iterate averaging's descent sequence (the parameter at step 1)
};

class ReferenceShampoo {
 public:
  ReferenceShampoo(std::vector<std::vector<long>> const& shapes, ReferenceOptions o) : o_(o) {
    if (o_.beta3 == -1.0) o_.beta3 = o_.beta1;
    if (o_.start == -1) o_.start = o_.frequency;
    for (std::size_t p = 0; p < shapes.size(); ++p) {
      std::vector<long> merged;
      bool zero = false;
      for (long e : shapes[p]) zero = zero || e == 0;
      if (zero) {
        merged = {0};
      } else if (o_.target_dims == 0) {
        merged = shapes[p];
      } else {
        DynRankTuple<8> s{};
        for (long e : shapes[p]) s.push_back(e);
        for (auto e : merge_small_dims(s, o_.max_dim, o_.target_dims)) merged.push_back(e);
      }
      DynRankTuple<8> m{};
      for (long e : merged) m.push_back(e);
      long largest = 1;
      for (long e : merged) largest = std::max(largest, e);
      for (auto const& b : multi_dim_split(m, std::min(o_.max_dim, largest))) {
        RefBlock rb;
        rb.param = static_cast<long>(p);
        rb.merged = merged;
        for (auto e : b.offset) rb.offset.push_back(e);
        for (auto e : b.shape) rb.shape.push_back(e);
        long const order = static_cast<long>(rb.shape.size());
        for (long k = 0; k < order; ++k) {
          double e = 1.0 / (2.0 * std::max(order, 1L));
          auto it = o_.exponent.find(order);
          if (it != o_.exponent.end() && it->second.count(k)) e = it->second.at(k);
          long d = rb.shape[static_cast<std::size_t>(k)];
          rb.root.push_back(e == 0.0 ? 0.0 : 1.0 / e);
          rb.factor.push_back(e == 0.0 ? Mat() : Mat::Zero(d, d));
          rb.inverse.push_back(e == 0.0 ? Mat() : Mat::Identity(d, d));
        }
        long n = numel(rb.shape);
        rb.filtered.assign(static_cast<std::size_t>(n), 0.0);
        rb.momentum.assign(static_cast<std::size_t>(n), 0.0);
        rb.graft.assign(static_cast<std::size_t>(n), 0.0);
        blocks_.push_back(rb);
      }
    }
  }

  std::vector<RefBlock> const& blocks() const { return blocks_; }

  void step(std::vector<std::vector<double>>& params,
            std::vector<std::vector<double>> const& grads) {
    ++t_;
    double const t = static_cast<double>(t_);
    bool const amortized = (t_ % o_.frequency == 0 && t_ > o_.start) || t_ == o_.start;
    double const bc2 = o_.bias_correction && o_.beta2 < 1.0 ? 1.0 - std::pow(o_.beta2, t) : 1.0;
    double const w = o_.beta2 == 1.0 ? 1.0 : 1.0 - o_.beta2;
    double const bc1 =
        o_.bias_correction && o_.beta1 != 0.0 ? 1.0 - o_.beta3 * std::pow(o_.beta1, t - 1.0) : 1.0;
    double mu_x = o_.mu_x;
    if (o_.averaging == 2) {
      lr_sum_ += std::pow(o_.lr, o_.lr_power);
      mu_x = 1.0 - std::pow(o_.lr, o_.lr_power) / lr_sum_;
    }
    for (auto& b : blocks_) {
      long const n = numel(b.shape);
      // Element e of the block lives at ravel(offset + idx, merged) in the parameter.
      std::vector<long> where(static_cast<std::size_t>(n));
      for (long e = 0; e < n; ++e) {
        auto idx = unravel(e, b.shape);
        for (std::size_t k = 0; k < idx.size(); ++k) idx[k] += b.offset[k];
        where[static_cast<std::size_t>(e)] = ravel(idx, b.merged);
      }
      auto& W = params[static_cast<std::size_t>(b.param)];
      auto const& Graw = grads[static_cast<std::size_t>(b.param)];
      std::vector<double> G(static_cast<std::size_t>(n)), Wb(static_cast<std::size_t>(n));
      for (long e = 0; e < n; ++e) {
        Wb[static_cast<std::size_t>(e)] =
            W[static_cast<std::size_t>(where[static_cast<std::size_t>(e)])];
        G[static_cast<std::size_t>(e)] =
            Graw[static_cast<std::size_t>(where[static_cast<std::size_t>(e)])] +
            (o_.l2 ? o_.weight_decay * Wb[static_cast<std::size_t>(e)] : 0.0);
      }
      // What factor k takes: G, or with KL G multiplied along the other preconditioned modes.
      std::vector<std::vector<double>> input(b.shape.size(), G);
      if (o_.kl)
        for (std::size_t k = 0; k < b.shape.size(); ++k)
          for (std::size_t i = 0; i < b.shape.size(); ++i)
            if (i != k && b.root[i] != 0.0)
              input[k] = mode_multiply(input[k], b.shape, i, b.inverse[i]);
      // Factors: F_k[a][c] += w * sum over the other indices of H[..a..] H[..c..], H = input[k].
      for (std::size_t k = 0; k < b.shape.size(); ++k) {
        if (b.root[k] == 0.0) continue;
        Mat& F = b.factor[k];
        F *= o_.beta2;
        std::vector<double> const& H = input[k];
        for (long e = 0; e < n; ++e) {
          auto idx = unravel(e, b.shape);
          long const a = idx[k];
          for (long c = 0; c < b.shape[k]; ++c) {
            idx[k] = c;
            F(a, c) += w * H[static_cast<std::size_t>(e)] *
                       H[static_cast<std::size_t>(ravel(idx, b.shape))];
          }
        }
        if (amortized) {
          Mat A = F / bc2 + o_.epsilon * Mat::Identity(F.rows(), F.cols());
          Eigen::SelfAdjointEigenSolver<Mat> es(A);
          Eigen::VectorXd L = es.eigenvalues();
          double const lmin = L.size() ? L.minCoeff() : 0.0;
          if (lmin < o_.epsilon) L.array() += o_.epsilon - lmin;
          for (long i = 0; i < L.size(); ++i) L[i] = std::pow(L[i], -1.0 / b.root[k]);
          b.inverse[k] = es.eigenvectors() * L.asDiagonal() * es.eigenvectors().transpose();
        }
      }
      // Grafting state.
      double gb = 1.0, gw = 1.0, gbc = 1.0;
      if (o_.grafting == 3 || o_.grafting == 4) {
        gb = o_.graft_beta2;
        gw = 1.0 - o_.graft_beta2;
      }
      if (o_.grafting == 4) gbc = 1.0 - std::pow(o_.graft_beta2, t);
      if (o_.grafting >= 2)
        for (long e = 0; e < n; ++e)
          b.graft[static_cast<std::size_t>(e)] =
              gb * b.graft[static_cast<std::size_t>(e)] +
              gw * G[static_cast<std::size_t>(e)] * G[static_cast<std::size_t>(e)];
      // Filtered gradient.
      std::vector<double> X(static_cast<std::size_t>(n));
      for (long e = 0; e < n; ++e) {
        auto i = static_cast<std::size_t>(e);
        if (o_.beta1 == 0.0) {
          X[i] = G[i];
          continue;
        }
        double const old = b.filtered[i];
        b.filtered[i] = o_.beta1 * old + (1.0 - o_.beta1) * G[i];
        X[i] =
            (o_.beta3 == o_.beta1 ? b.filtered[i] : o_.beta3 * old + (1.0 - o_.beta3) * G[i]) / bc1;
      }
      // Grafting direction.
      std::vector<double> D(static_cast<std::size_t>(n));
      for (long e = 0; e < n; ++e) {
        auto i = static_cast<std::size_t>(e);
        D[i] = o_.grafting == 1 ? X[i] : X[i] / (std::sqrt(b.graft[i] / gbc) + o_.graft_eps);
      }
      // Shampoo direction: P[idx] = sum_a X[idx with mode k = a] Q_k[a][idx_k], mode by mode.
      std::vector<double> P = X;
      bool const graft_only = o_.grafting != 0 && t_ < o_.start;
      if (graft_only) {
        P = D;
      } else {
        for (std::size_t k = 0; k < b.shape.size(); ++k)
          if (b.root[k] != 0.0) P = mode_multiply(P, b.shape, k, b.inverse[k]);
        if (o_.grafting != 0) {
          double pn = 0.0, dn = 0.0;
          for (long e = 0; e < n; ++e) {
            pn += P[static_cast<std::size_t>(e)] * P[static_cast<std::size_t>(e)];
            dn += D[static_cast<std::size_t>(e)] * D[static_cast<std::size_t>(e)];
          }
          double const scale = std::sqrt(dn) / (std::sqrt(pn) + 1e-16);
          for (auto& x : P) x *= scale;
        }
      }
      if (o_.averaging != 0 && t_ == 1) b.z = Wb;
      for (long e = 0; e < n; ++e) {
        auto i = static_cast<std::size_t>(e);
        if (o_.averaging !=
            0) {  // z' = (1 - lr a) z; y += (1 - mu_x)(z' - y) - (1 - mu_x mu_y) lr P
          double const zs = (1.0 - o_.lr * (o_.l2 ? 0.0 : o_.weight_decay)) * b.z[i];
          W[static_cast<std::size_t>(where[i])] =
              Wb[i] + (1.0 - mu_x) * (zs - Wb[i]) - (1.0 - mu_x * o_.mu_y) * o_.lr * P[i];
          b.z[i] = zs - o_.lr * P[i];
          continue;
        }
        double p = P[i] + (o_.l2 ? 0.0 : o_.weight_decay * Wb[i]);
        if (o_.momentum != 0.0) {
          b.momentum[i] = o_.momentum * b.momentum[i] + (1.0 - o_.dampening) * p;
          p = o_.nesterov ? (1.0 - o_.dampening) * p + o_.momentum * b.momentum[i] : b.momentum[i];
        }
        W[static_cast<std::size_t>(where[i])] = Wb[i] - o_.lr * p;
      }
    }
  }

 private:
  ReferenceOptions o_;
  std::vector<RefBlock> blocks_;
  long t_ = 0;
  double lr_sum_ = 0.0;
};

}  // namespace tessel::shampoo::reference
