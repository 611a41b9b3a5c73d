#!/usr/bin/env python3
"""Compile-time cost of the tuple under tessel's layouts: Boost.Hana's tuple and algorithms versus
Hana's tuple with fold expressions versus a lean tuple with fold expressions.

Generates three translation units that compute the size and a dot product of 400 distinct static
shapes (ranks 2..5) and times `g++ -std=c++20 -O2 -c` on each. Usage: tuple_choice.py [runs]
"""
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMON = """#include <cstdint>
#include <utility>
#include <type_traits>
template <std::int64_t N> struct Int { static constexpr std::int64_t value = N;
  constexpr operator std::int64_t() const { return N; } };
template <std::int64_t A, std::int64_t B> constexpr Int<A * B> operator*(Int<A>, Int<B>) { return {}; }
template <std::int64_t A, std::int64_t B> constexpr Int<A + B> operator+(Int<A>, Int<B>) { return {}; }
struct Mul { template <class A, class B> constexpr auto operator()(A a, B b) const { return a * b; } };
struct Add { template <class A, class B> constexpr auto operator()(A a, B b) const { return a + b; } };
"""

HANA_ALGORITHMS = """#include <boost/hana/tuple.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/zip_with.hpp>
namespace hana = boost::hana;
template <class... T> constexpr auto mk(T... t) { return hana::tuple<T...>{t...}; }
template <class T> constexpr auto prod(T t) { return hana::fold_left(t, Int<1>{}, Mul{}); }
template <class A, class B> constexpr auto dot(A a, B b) {
  return hana::fold_left(hana::zip_with(Mul{}, a, b), Int<0>{}, Add{}); }
"""

HANA_FOLDS = """#include <boost/hana/tuple.hpp>
#include <boost/hana/at.hpp>
namespace hana = boost::hana;
template <class... T> constexpr auto mk(T... t) { return hana::tuple<T...>{t...}; }
template <class... T, std::size_t... I> constexpr auto prod_i(hana::tuple<T...> t, std::index_sequence<I...>) {
  return (Int<1>{} * ... * hana::at_c<I>(t)); }
template <class... T> constexpr auto prod(hana::tuple<T...> t) { return prod_i(t, std::index_sequence_for<T...>{}); }
template <class... T, class... U, std::size_t... I>
constexpr auto dot_i(hana::tuple<T...> a, hana::tuple<U...> b, std::index_sequence<I...>) {
  return (Int<0>{} + ... + (hana::at_c<I>(a) * hana::at_c<I>(b))); }
template <class... T, class... U> constexpr auto dot(hana::tuple<T...> a, hana::tuple<U...> b) {
  return dot_i(a, b, std::index_sequence_for<T...>{}); }
"""

LEAN = """template <std::size_t I, class T, bool E = std::is_empty_v<T>> struct Leaf { T v; constexpr T get() const { return v; } };
template <std::size_t I, class T> struct Leaf<I, T, true> { constexpr Leaf() = default; constexpr Leaf(T) {}
  constexpr T get() const { return {}; } };
template <class S, class... T> struct Base;
template <std::size_t... I, class... T> struct Base<std::index_sequence<I...>, T...> : Leaf<I, T>... {
  constexpr Base() = default; constexpr Base(T... t) : Leaf<I, T>{t}... {} };
template <class... T> struct tuple : Base<std::index_sequence_for<T...>, T...> {
  using Base<std::index_sequence_for<T...>, T...>::Base; };
template <std::size_t I, class T> constexpr T get_leaf(Leaf<I, T> const& l) { return l.get(); }
template <std::size_t I, class... T> constexpr auto at(tuple<T...> const& t) { return get_leaf<I>(t); }
template <class... T> constexpr auto mk(T... t) { return tuple<T...>{t...}; }
template <class... T, std::size_t... I> constexpr auto prod_i(tuple<T...> t, std::index_sequence<I...>) {
  return (Int<1>{} * ... * at<I>(t)); }
template <class... T> constexpr auto prod(tuple<T...> t) { return prod_i(t, std::index_sequence_for<T...>{}); }
template <class... T, class... U, std::size_t... I>
constexpr auto dot_i(tuple<T...> a, tuple<U...> b, std::index_sequence<I...>) {
  return (Int<0>{} + ... + (at<I>(a) * at<I>(b))); }
template <class... T, class... U> constexpr auto dot(tuple<T...> a, tuple<U...> b) {
  return dot_i(a, b, std::index_sequence_for<T...>{}); }
"""


def body(count=400, seed=1):
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        r = rng.randint(2, 5)
        s = ",".join(f"Int<{rng.randint(1, 64)}>{{}}" for _ in range(r))
        d = ",".join(f"Int<{rng.randint(1, 64)}>{{}}" for _ in range(r))
        lines.append(f"static_assert(decltype(dot(mk({s}), mk({d})))::value >= 0 && "
                     f"decltype(prod(mk({s})))::value > 0);")
    return "\n".join(lines) + "\nint main() {}\n"


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    variants = {"hana tuple + hana algorithms": HANA_ALGORITHMS,
                "hana tuple + fold expressions": HANA_FOLDS,
                "lean tuple + fold expressions": LEAN}
    with tempfile.TemporaryDirectory() as tmp:
        for name, code in variants.items():
            src = Path(tmp) / "probe.cpp"
            src.write_text(COMMON + code + body())
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                subprocess.run(["g++", "-std=c++20", "-O2", "-c", str(src), "-o", str(Path(tmp) / "p.o")],
                               check=True)
                times.append(time.perf_counter() - t0)
            times.sort()
            print(f"{name:32s} median {times[len(times) // 2]:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
