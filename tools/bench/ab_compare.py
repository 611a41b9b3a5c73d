#!/usr/bin/env python3
"""Runs two builds of one Google Benchmark program turn by turn and reports medians and ratios.

A "before" and an "after" binary of the same benchmark source, measured in the same run: each
round runs A then B (then B then A on the next round, so neither always runs first), one
repetition each, and the table gives, per benchmark, the median real time of each side over the
rounds, the ratio after/before (< 1: faster), and the load average before and after. This is how
docs/benchmarks.md compares a change with the commit before it on a shared machine.

  tools/bench/ab_compare.py BEFORE AFTER [--rounds 5] [--filter REGEX] [--cpu-time]
                            [-- extra benchmark args]

--cpu-time compares the process's CPU time per iteration instead of the real time: for
one-thread runs on a machine that other work shares, where waiting for a core inflates the real
time but not the CPU time (cache and memory contention still show in both).

Example (host FLCE, before = the commit a change starts from, after = the working tree):
  tools/bench/ab_compare.py /work/base/build/bench/bin/bench_flce_host \\
      build/bench/bin/bench_flce_host --rounds 5 --filter 'BM_Flce.*'
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run_once(binary, bench_filter, extra, clock):
    args = [binary, "--benchmark_format=json", "--benchmark_repetitions=1"]
    if bench_filter:
        args.append(f"--benchmark_filter={bench_filter}")
    args += extra
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    result = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        # The clock's time in the benchmark's own unit; the unit is kept to label the table.
        result[b["name"]] = (float(b[clock]), b.get("time_unit", "ns"))
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--filter", default="")
    p.add_argument("--cpu-time", action="store_true",
                   help="compare CPU time rather than real time (one-thread runs, shared machine)")
    p.add_argument("extra", nargs="*", help="arguments passed to both binaries (after --)")
    a = p.parse_args()
    load_before = os.getloadavg()
    times = {"before": {}, "after": {}}
    units = {}
    for r in range(a.rounds):
        order = [("before", a.before), ("after", a.after)]
        if r % 2:
            order.reverse()
        for side, binary in order:
            clock = "cpu_time" if a.cpu_time else "real_time"
            for name, (t, unit) in run_once(binary, a.filter, a.extra, clock).items():
                times[side].setdefault(name, []).append(t)
                units[name] = unit
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    load_after = os.getloadavg()
    names = [n for n in times["before"] if n in times["after"]]
    width = max([len(n) for n in names] + [9])
    print(f"{'benchmark':<{width}}  {'before':>12}  {'after':>12}  {'after/before':>12}")
    for n in names:
        b = statistics.median(times["before"][n])
        f = statistics.median(times["after"][n])
        unit = units[n]
        print(f"{n:<{width}}  {b:>9.3f} {unit:<2}  {f:>9.3f} {unit:<2}  {f / b:>12.3f}")
    print(f"{'CPU' if a.cpu_time else 'real'} time, medians of {a.rounds} interleaved rounds; load average (1, 5, 15 min) "
          f"{load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} before, "
          f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} after")


if __name__ == "__main__":
    main()
