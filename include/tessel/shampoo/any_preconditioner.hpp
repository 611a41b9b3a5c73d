// AnyPreconditioner: the preconditioner family chosen at run time, by Options::preconditioner and
// Options::kl_shampoo, for the front ends that choose it so (the CLI, Python, parameter groups with
// different families, state files keyed like Distributed Shampoo's). It is a family like the
// others (preconditioners/preconditioner.hpp): each batch group holds the chosen family's state
// behind one virtual call per stage, so the step is the same code, and a program that names its
// family at compile time instantiates none of this. Shampoo<T> (no family named) uses it.
//
// The families it chooses among are RunTimeFamilies, in order: the first whose (type, kl) is the
// options' is chosen, else the first of that type (a family without a KL variant ignores
// kl_shampoo, with a warning from ignored_options). A new family reaches the run-time front ends by
// being added to this list.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "basic_shampoo.hpp"
#include "preconditioners/eigendecomposed.hpp"
#include "preconditioners/eigenvalue_corrected.hpp"
#include "preconditioners/kl_shampoo.hpp"
#include "preconditioners/kl_soap.hpp"
#include "preconditioners/preconditioner.hpp"
#include "preconditioners/root_inverse.hpp"
#include "preconditioners/sign_descent.hpp"
#include "preconditioners/spectral_descent.hpp"

namespace tessel::shampoo {

template <class... Fs>
struct FamilyList {};

using RunTimeFamilies =
    FamilyList<RootInv, KlShampoo<RootInv>, Eigendecomposed, KlShampoo<Eigendecomposed>,
               EigenvalueCorrected, KlSoap, SpectralDescent, SignDescent>;

namespace detail {

// One group's family behind virtual calls: what the step calls of a family (the concept's members
// and the optional ones, through family::).
template <class T, class X>
struct ErasedFamily {
  using Ctx = StepContext<T, X>;
  using Group = GroupState<T, X>;
  virtual ~ErasedFamily() = default;
  virtual void accumulate(Ctx const& c, Group& g, StepScalars<T> const& s) = 0;
  virtual T* direction(Ctx const& c, Group& g, T* x, StepScalars<T> const& s) = 0;
  virtual void for_each_buffer(Ctx const& c, Group const& g,
                               std::function<void(StateBuffer const&)> const& f) const = 0;
  virtual T const* factor_input(Group const& g, std::size_t j) const = 0;
  virtual void prepare_factor_inputs(Ctx const& c, Group& g) = 0;
  virtual void invalidate() = 0;
  virtual KroneckerFactors<T, X>* kronecker() = 0;
};

template <class T, class X, class F>
struct ErasedFamilyOf final : ErasedFamily<T, X> {
  using Ctx = StepContext<T, X>;
  using Group = GroupState<T, X>;
  F family;
  typename F::template State<T, X> state;

  ErasedFamilyOf(Ctx const& c, Group const& g) : family(make_family<F>(c.options)) {
    family.init(c, g, state);
  }
  void accumulate(Ctx const& c, Group& g, StepScalars<T> const& s) override {
    family.accumulate(c, g, state, s);
  }
  T* direction(Ctx const& c, Group& g, T* x, StepScalars<T> const& s) override {
    return family.direction(c, g, state, x, s);
  }
  void for_each_buffer(Ctx const& c, Group const& g,
                       std::function<void(StateBuffer const&)> const& f) const override {
    family.for_each_buffer(c, g, state, f);
  }
  T const* factor_input(Group const& g, std::size_t j) const override {
    return shampoo::family::factor_input(family, g, state, j);
  }
  void prepare_factor_inputs(Ctx const& c, Group& g) override {
    shampoo::family::prepare_factor_inputs(family, c, g, state);
  }
  void invalidate() override { shampoo::family::invalidate(family, state); }
  KroneckerFactors<T, X>* kronecker() override { return shampoo::family::kronecker<T, X>(state); }
};

// The index in RunTimeFamilies of the family the options choose (0 for a value outside the
// enumerations, which validate() then refuses).
template <class... Fs>
std::size_t choose_family(Options const& o, FamilyList<Fs...>) {
  std::size_t i = 0, exact = sizeof...(Fs), of_type = sizeof...(Fs);
  ((Fs::type == o.preconditioner && exact == sizeof...(Fs) && Fs::kl == o.kl_shampoo
        ? void(exact = i)
        : void(),
    Fs::type == o.preconditioner && of_type == sizeof...(Fs) ? void(of_type = i) : void(), ++i),
   ...);
  if (exact < sizeof...(Fs)) return exact;
  return of_type < sizeof...(Fs) ? of_type : 0;
}

}  // namespace detail

class AnyPreconditioner {
 public:
  static constexpr bool kl = false;  // the options say; they are not overridden

  explicit AnyPreconditioner(Options const& o)
      : index_(detail::choose_family(o, RunTimeFamilies{})) {}

  // The index of the chosen family in RunTimeFamilies.
  std::size_t index() const noexcept { return index_; }

  template <class T, class X>
  struct State {
    std::unique_ptr<detail::ErasedFamily<T, X>> chosen;
    KroneckerFactors<T, X>* kronecker() { return chosen->kronecker(); }
  };

  template <class T, class X>
  void init(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s) const {
    make(c, g, s, RunTimeFamilies{});
  }
  template <class T, class X>
  void accumulate(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s,
                  StepScalars<T> const& sc) const {
    s.chosen->accumulate(c, g, sc);
  }
  template <class T, class X>
  T* direction(StepContext<T, X> const& c, GroupState<T, X>& g, State<T, X>& s, T* x,
               StepScalars<T> const& sc) const {
    return s.chosen->direction(c, g, x, sc);
  }
  template <class T, class X, class F>
  void for_each_buffer(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X> const& s,
                       F&& f) const {
    s.chosen->for_each_buffer(c, g, [&](StateBuffer const& b) { f(b); });
  }
  template <class T, class X>
  T const* factor_input(GroupState<T, X> const& g, State<T, X> const& s, std::size_t j) const {
    return s.chosen->factor_input(g, j);
  }
  template <class T, class X>
  void prepare_factor_inputs(StepContext<T, X> const& c, GroupState<T, X>& g,
                             State<T, X>& s) const {
    s.chosen->prepare_factor_inputs(c, g);
  }
  template <class T, class X>
  void invalidate(State<T, X>& s) const {
    s.chosen->invalidate();
  }

 private:
  template <class T, class X, class... Fs>
  void make(StepContext<T, X> const& c, GroupState<T, X> const& g, State<T, X>& s,
            FamilyList<Fs...>) const {
    std::size_t i = 0;
    ((i++ == index_ ? void(s.chosen = std::make_unique<detail::ErasedFamilyOf<T, X, Fs>>(c, g))
                    : void()),
     ...);
  }

  std::size_t index_ = 0;
};

}  // namespace tessel::shampoo
