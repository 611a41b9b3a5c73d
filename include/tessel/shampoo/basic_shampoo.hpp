// The Shampoo optimizer, composed at compile time: Shampoo<T, Parts...> names its element type
// (float or double) and, in any order, the parts it is made of, each with a default:
//   a preconditioner family  RootInv (Shampoo), Eigendecomposed, EigenvalueCorrected (Soap),
//                            KlShampoo<...>, KlSoap, SpectralDescent, SignDescent
//                            (preconditioners/), or AnyPreconditioner, the family Options chooses
//                            at run time (the default; <tessel/shampoo/optimizer.hpp>);
//   a plan                   RuntimePlan (a plan value given to the constructor, the default) or
//                            static_plan<plan> (the plan as a type, plan/static_plan.hpp);
//   an executor              exec::Auto (the default), exec::Serial, exec::OpenMP, exec::Cuda.
// So Shampoo<float> is Distributed Shampoo with its family chosen by Options, and
// Shampoo<float, Soap, static_plan<plan>> is SOAP over a plan the compiler computed, which
// compiles SOAP's code and nothing of the other families. BasicShampoo<T, F, P, X> is the class
// these name: ShampooStep<T, F, X> (compose/shampoo_step.hpp) and the passes over the plan's
// segments, which a static plan instantiates with its segments' Int<> layouts.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "../exec/executors.hpp"
#include "compose/shampoo_step.hpp"
#include "plan/geometry.hpp"
#include "plan/plan.hpp"
#include "plan/segments.hpp"
#include "plan/static_plan.hpp"

namespace tessel::shampoo {

// The family Options::preconditioner and Options::kl_shampoo choose at run time
// (any_preconditioner.hpp).
class AnyPreconditioner;

template <class T, class F, PlanTag P = RuntimePlan, class X = exec::Auto>
requires(std::is_same_v<T, float> || std::is_same_v<T, double>) &&
    exec::Executor<X> class BasicShampoo final : public ShampooStep<T, F, X> {
  using Base = ShampooStep<T, F, X>;
  using typename Base::B;
  using typename Base::Group;

 public:
  using plan_type = P;

  // A run-time plan (any BasicPlan; a static one is copied into a Plan).
  // @pre validate(options) passes (checked; tessel::Error otherwise)
  template <class PP, class BB, class GG>
  requires std::same_as<P, RuntimePlan>
  explicit BasicShampoo(BasicPlan<PP, BB, GG> const& plan, Options options = {}, X executor = {})
      : Base(to_runtime(plan), std::move(options), executor, {}) {}
  // The same with the caller's index of each parameter in sentences and state keys.
  template <class PP, class BB, class GG>
  requires std::same_as<P, RuntimePlan> BasicShampoo(BasicPlan<PP, BB, GG> const& plan,
                                                     Options options, X executor, ParamKeys keys)
      : Base(to_runtime(plan), std::move(options), executor, std::move(keys)) {}

  // The plan of the type: Shampoo<float, static_plan<plan>> opt(options).
  explicit BasicShampoo(Options options = {}, X executor = {}) requires is_static_plan_v<P>
      : Base(to_runtime(P::value), std::move(options), executor, {}) {}
  BasicShampoo(Options options, X executor, ParamKeys keys) requires is_static_plan_v<P>
      : Base(to_runtime(P::value), std::move(options), executor, std::move(keys)) {}

  BasicShampoo(BasicShampoo const&) = delete;
  BasicShampoo& operator=(BasicShampoo const&) = delete;
  BasicShampoo(BasicShampoo&&) noexcept = default;
  BasicShampoo& operator=(BasicShampoo&&) noexcept = default;
  ~BasicShampoo() = default;

 private:
  // f(group, segment geometry) for every segment of a static plan (Int<> layouts). Segments of
  // equal shapes share one instantiation of every stage.
  template <class Fn>
  void for_each_static_segment(Fn&& f) {
    [&]<std::size_t... S>(std::index_sequence<S...>) {
      (f(this->groups_[static_cast<std::size_t>(P::segments[S].group)], static_segment<P, S>()),
       ...);
    }
    (std::make_index_sequence<P::num_segments>{});
  }

  // Every pass over the parameters' blocks — the gathered gradient (with or without L2 decay),
  // the update (plain, with momentum or Nesterov, decoupled decay, iterate averaging, or into a
  // distributed step's updates) — runs over each segment's geometry: a static plan's Int<>
  // layouts (static_segment_t), or the run-time geometry every run-time plan shares.
  void gather_segments(std::vector<T*> const& params, std::vector<T const*> const& grads,
                       StepScalars<T> const& s) override {
    if constexpr (is_static_plan_v<P>) {
      for_each_static_segment([&](Group& g, auto const& seg) {
        if (s.l2 == T(0))
          this->copy_gradient_segment(g, seg, grads);
        else
          this->gather_segment(g, seg, params, grads, s);
      });
    } else {
      this->gather_runtime_segments(params, grads, s);
    }
  }
  void update_segments(std::vector<T*> const& params, StepScalars<T> const& s,
                       std::vector<T*> const& direction, std::vector<T*> const& out,
                       bool into_updates, bool stage_momentum) override {
    if constexpr (is_static_plan_v<P>) {
      for_each_static_segment([&](Group& g, auto const& seg) {
        auto const gi = static_cast<std::size_t>(&g - this->groups_.data());
        if (direction[gi])
          this->update_segment(g, seg, params, s, direction[gi], out[gi], into_updates,
                               stage_momentum);
      });
    } else {
      this->update_runtime_segments(params, s, direction, out, into_updates, stage_momentum);
    }
  }
};

// The geometry a plan's segment S is moved with by every pass over the parameters' blocks: a
// static plan's Int<> layouts (static_segment_t<P, S>), the shared run-time geometry otherwise.
template <class P, std::size_t S = 0>
struct segment_geometry {
  using type = RuntimeSegment;
};
template <class P, std::size_t S>
requires is_static_plan_v<P>
struct segment_geometry<P, S> {
  using type = static_segment_t<P, S>;
};
template <class P, std::size_t S = 0>
using segment_geometry_t = typename segment_geometry<P, S>::type;

namespace detail {

// Shampoo<T, Parts...>: which of the parts is the family, the plan and the executor.
template <class Part>
inline constexpr int part_kind = PlanTag<Part>          ? 1
                                 : exec::Executor<Part> ? 2
                                                        : 0;

template <int Kind, class Default, class... Parts>
struct pick_part {
  static constexpr int count = ((part_kind<Parts> == Kind ? 1 : 0) + ... + 0);
  static_assert(count <= 1,
                "tessel: Shampoo<T, Parts...> takes at most one preconditioner family, one plan "
                "(RuntimePlan or static_plan<plan>) and one executor.");
  template <class Found, class... Rest>
  struct first {
    using type = Found;
  };
  template <class Found, class Head, class... Rest>
  struct first<Found, Head, Rest...> {
    using type = typename std::conditional_t<part_kind<Head> == Kind, first<Head>,
                                             first<Found, Rest...>>::type;
  };
  using type = typename first<Default, Parts...>::type;
};

}  // namespace detail

template <class T, class... Parts>
using Shampoo = BasicShampoo<T, typename detail::pick_part<0, AnyPreconditioner, Parts...>::type,
                             typename detail::pick_part<1, RuntimePlan, Parts...>::type,
                             typename detail::pick_part<2, exec::Auto, Parts...>::type>;

}  // namespace tessel::shampoo
