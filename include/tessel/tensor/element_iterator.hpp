// ElementIterator: a random-access iterator over a host tensor's elements in logical row-major
// order (the order of t[i]), whatever the layout: `for (float& x : t)`, std::accumulate(t.begin(),
// t.end(), 0.0), std::ranges algorithms. Dereferencing computes the element's offset from its
// index (a division per mode), so it is for convenience; passes over whole tensors belong to the
// executors.
#pragma once

#include <compare>
#include <cstddef>
#include <iterator>

#include "../core/config.hpp"

namespace tessel {

// T is the tensor type; the iterator refers to a tensor that must outlive it (a range-for over a
// view temporary keeps the view alive for the loop).
template <class T>
class ElementIterator {
 public:
  using iterator_concept = std::random_access_iterator_tag;
  using iterator_category = std::random_access_iterator_tag;
  using value_type = typename T::value_type;
  using difference_type = std::ptrdiff_t;
  using reference = typename T::reference;

  ElementIterator() = default;
  ElementIterator(T const* tensor, index_t i) : tensor_(tensor), i_(i) {}

  reference operator*() const { return (*tensor_)[i_]; }
  reference operator[](difference_type n) const { return (*tensor_)[i_ + n]; }

  ElementIterator& operator++() {
    ++i_;
    return *this;
  }
  ElementIterator operator++(int) {
    auto old = *this;
    ++i_;
    return old;
  }
  ElementIterator& operator--() {
    --i_;
    return *this;
  }
  ElementIterator operator--(int) {
    auto old = *this;
    --i_;
    return old;
  }
  ElementIterator& operator+=(difference_type n) {
    i_ += n;
    return *this;
  }
  ElementIterator& operator-=(difference_type n) {
    i_ -= n;
    return *this;
  }
  friend ElementIterator operator+(ElementIterator it, difference_type n) { return it += n; }
  friend ElementIterator operator+(difference_type n, ElementIterator it) { return it += n; }
  friend ElementIterator operator-(ElementIterator it, difference_type n) { return it -= n; }
  friend difference_type operator-(ElementIterator const& a, ElementIterator const& b) {
    return static_cast<difference_type>(a.i_ - b.i_);
  }
  friend bool operator==(ElementIterator const& a, ElementIterator const& b) {
    return a.i_ == b.i_;
  }
  friend auto operator<=>(ElementIterator const& a, ElementIterator const& b) {
    return a.i_ <=> b.i_;
  }

 private:
  T const* tensor_ = nullptr;
  index_t i_ = 0;
};

}  // namespace tessel
