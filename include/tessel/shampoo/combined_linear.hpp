// CombinedLinear: a linear layer whose weight and bias live in one (out, in + 1) parameter, so
// Shampoo preconditions them together as one matrix (Distributed Shampoo's CombinedLinear). The
// weight (out, in) and the bias (out) are write-through views of that parameter; forward computes
// x W^T + b; backward gives the gradient of the combined parameter (and of the input). The
// initialization draws from nn.Linear's distribution, U(-1/sqrt(in), 1/sqrt(in)).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <type_traits>

#include <Eigen/Core>

#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "../core/shape.hpp"
#include "../tensor/host_tensor.hpp"
#include "../tensor/slicer.hpp"
#include "../tensor/tensor.hpp"

namespace tessel::shampoo {

template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double>
class CombinedLinear {
 public:
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  // @pre in_features >= 0, out_features >= 0 (tessel::Error otherwise)
  CombinedLinear(index_t in_features, index_t out_features, bool bias = true,
                 std::uint64_t seed = 0)
      : in_(check_features(in_features, "in_features")),
        out_(check_features(out_features, "out_features")),
        bias_(bias),
        combined_(make_host_tensor<T>(make_shape(out_features, in_features + (bias ? 1 : 0)))) {
    reset_parameters(seed);
  }

  index_t in_features() const noexcept { return in_; }
  index_t out_features() const noexcept { return out_; }
  bool has_bias() const noexcept { return bias_; }
  // in_features + 1 with a bias, in_features without.
  index_t in_features_with_bias() const noexcept { return in_ + (bias_ ? 1 : 0); }

  // The (out, in + 1) parameter Shampoo optimizes, as a tensor and as contiguous values.
  auto const& combined_weight() const noexcept { return combined_; }
  std::span<T> parameter() noexcept {
    return {combined_.data(), static_cast<std::size_t>(out_ * in_features_with_bias())};
  }

  // The weight: columns [0, in) of the combined parameter, a write-through view.
  auto weight() const { return combined_(_, range(index_t{0}, in_)); }
  // The bias: the last column, a write-through view. @pre has_bias()
  auto bias() const {
    if (!bias_) tessel::detail::throw_error("this CombinedLinear was built without a bias.");
    return combined_(_, in_);
  }

  // Draws weight and bias from U(-1/sqrt(in), 1/sqrt(in)), nn.Linear's distribution (kaiming
  // uniform with a = sqrt(5)); the numbers come from std::mt19937_64, not PyTorch's generator.
  void reset_parameters(std::uint64_t seed);

  // output (batch, out) = input (batch, in) W^T + b.
  void forward(std::span<T const> input, index_t batch, std::span<T> output) const;

  // grad_combined (out, in + 1) = grad_output^T [input, 1]; grad_input (batch, in) =
  // grad_output W when given (may be empty).
  void backward(std::span<T const> input, std::span<T const> grad_output, index_t batch,
                std::span<T> grad_combined, std::span<T> grad_input = {}) const;

 private:
  static index_t check_features(index_t n, char const* name) {
    if (n < 0)
      tessel::detail::throw_error(tessel::detail::sentence(name, " must be >= 0, got ", n, "."));
    return n;
  }
  static void check_sizes(std::size_t got, index_t want, char const* name, index_t rows,
                          index_t cols) {
    if (static_cast<index_t>(got) != want)
      tessel::detail::throw_error(tessel::detail::sentence(
          name, " has ", got, " elements but must be ",
          tessel::detail::shape_text(make_shape(rows, cols)), ", ", want, " elements."));
  }
  Eigen::Map<Matrix const> combined_map() const {
    return Eigen::Map<Matrix const>(combined_.data(), out_, in_features_with_bias());
  }

  index_t in_;
  index_t out_;
  bool bias_;
  decltype(make_host_tensor<T>(make_shape(index_t{}, index_t{}))) combined_;
};

// Out of the class, so that a translation unit with TESSEL_SHAMPOO_PREBUILT (below) compiles
// none of Eigen's products.
template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double>
void CombinedLinear<T>::reset_parameters(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  double const bound = in_ > 0 ? 1.0 / std::sqrt(static_cast<double>(in_)) : 0.0;
  std::uniform_real_distribution<double> u(-bound, bound);
  for (T& x : parameter()) x = static_cast<T>(bound > 0.0 ? u(rng) : 0.0);
}

template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double>
void CombinedLinear<T>::forward(std::span<T const> input, index_t batch,
                                std::span<T> output) const {
  check_sizes(input.size(), batch * in_, "input", batch, in_);
  check_sizes(output.size(), batch * out_, "output", batch, out_);
  auto w = combined_map();
  Eigen::Map<Matrix const> x(input.data(), batch, in_);
  Eigen::Map<Matrix> y(output.data(), batch, out_);
  y.noalias() = x * w.leftCols(in_).transpose();
  if (bias_) y.rowwise() += w.col(in_).transpose();
}

template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double>
void CombinedLinear<T>::backward(std::span<T const> input, std::span<T const> grad_output,
                                 index_t batch, std::span<T> grad_combined,
                                 std::span<T> grad_input) const {
  check_sizes(input.size(), batch * in_, "input", batch, in_);
  check_sizes(grad_output.size(), batch * out_, "grad_output", batch, out_);
  check_sizes(grad_combined.size(), out_ * in_features_with_bias(), "grad_combined", out_,
              in_features_with_bias());
  Eigen::Map<Matrix const> x(input.data(), batch, in_);
  Eigen::Map<Matrix const> dy(grad_output.data(), batch, out_);
  Eigen::Map<Matrix> dw(grad_combined.data(), out_, in_features_with_bias());
  dw.leftCols(in_).noalias() = dy.transpose() * x;
  if (bias_) dw.col(in_) = dy.colwise().sum().transpose();
  if (!grad_input.empty()) {
    check_sizes(grad_input.size(), batch * in_, "grad_input", batch, in_);
    Eigen::Map<Matrix>(grad_input.data(), batch, in_).noalias() = dy * combined_map().leftCols(in_);
  }
}

}  // namespace tessel::shampoo

// tessel::shampoo_prebuilt (kernels/shampoo_prebuilt*.cpp) compiles both layers once.
#if defined(TESSEL_SHAMPOO_PREBUILT)
namespace tessel::shampoo {
extern template class CombinedLinear<float>;
extern template class CombinedLinear<double>;
}  // namespace tessel::shampoo
#endif
