#!/usr/bin/env python3
"""tessel's host FLCE and Shampoo step side by side with PyTorch and Meta's Shampoo (CPU).

Usage (from the repository root, after ``cmake --preset bench && ninja -C build/bench
bench_flce_host tessel_bench_shampoo``; not part of CI, run it on a quiet machine)::

    tools/bench/compare_pytorch.py --meta ~/src/optimizers [--compile]
        [--python /path/to/venv/bin/python] [--tessel-bin build/bench/bin]
        [--threads 1,2] [--runs 5] [--warmup 1] [--rounds 1]
        [--flce-shapes 2048x512x32000,4096x2048x32000]
        [--svg build/compare_pytorch.svg] [--json results.json] [--quick]

Without ``--python`` the script uses the interpreter running it when ``torch`` imports there,
and otherwise creates a virtual environment (``--venv``, default ``build/compare-venv``) and
installs ``torch`` and ``matplotlib`` from PyPI into it; it then runs itself under that
interpreter. ``matplotlib`` is installed into a ``--python`` interpreter that lacks it.
Without ``--meta`` the Shampoo comparison is skipped.

What it measures, each configuration in fresh processes, with OMP_NUM_THREADS,
MKL_NUM_THREADS and OPENBLAS_NUM_THREADS set to the thread count (and torch.set_num_threads;
tessel's executors default to omp_get_max_threads(), OpenBLAS's OpenMP build shares it):

FLCE, f32, mean reduction: the loss, d loss / d x and d loss / d w of
``F.cross_entropy(x @ w.T, y)`` with x (BT, H), w (V, H), y (BT,) int64, at BT 2048 / H 512 /
V 32000 and BT 4096 / H 2048 / V 32000, at 1 and 2 threads.
  * tessel: ``bench_flce_host`` (``BM_FlceHostShape/BT/H/V``: ``flce::forward`` with the host
    plan), Google Benchmark JSON; warmup + runs repetitions, the warm-up ones dropped.
  * PyTorch eager: ``loss = F.cross_entropy(x @ w.T, y); loss.backward()`` with x and w leaf
    tensors requiring grad (grads set to None before each call); with ``--compile`` also the
    same function under ``torch.compile`` (default mode; compiled during the warm-up).
  * time: the median of ``--runs`` calls after ``--warmup`` calls.
  * ``--rounds R`` measures each configuration R times, tessel and its peer back to back, the
    side that goes first alternating: on a machine whose speed drifts over minutes (a shared VM),
    one tessel run and one peer run minutes apart compare two machines. Each side's time is then
    the median of its R medians, the ratio the median of the R per-round ratios, and the table
    adds their range.
  * extra memory: the growth of the process's peak resident set (VmHWM) over one call, in a
    fresh process per configuration, measured the same way on every side: after the warm-up,
    free heap memory is returned to the system (glibc malloc_trim) and the peak is reset to the
    current resident set (``/proc/self/clear_refs`` with 5), then VmHWM - VmRSS over the call.
    The inputs and tessel's preallocated outputs are resident before the call; PyTorch allocates
    grad_x and grad_w inside it, so their (BT*H + V*H)*4 bytes are subtracted: both figures are
    the memory a call needs beyond its inputs and outputs. Measuring after a warm-up excludes
    one-time costs (thread pools, BLAS buffers, torch.compile's compiler) from every side
    alike; the first call in a fresh process would charge the compiler to torch.compile.

Shampoo, one optimizer step of a 2-layer MLP (parameters 1024x4096 and 4096x1024 f32, fixed
gradients drawn from N(0, 0.02)), the options of ``tools/bench/shampoo_step_bench.cpp``:
  * regular step: precondition_frequency 100, start_preconditioning_step 1000000 (the factor
    matrices are updated, no inverse root is computed; Adam grafting gives the update);
  * all-roots step: precondition_frequency 1, start_preconditioning_step 1 (every step
    recomputes the inverse roots of the sixteen 1024x1024 factors);
  * preconditioned step: precondition_frequency 10, start_preconditioning_step 10, steps 11 to
    19 (preconditioned with the roots of step 10, none computed: 9 of 10 steps in training);
  * SOAP steps the same way with eigenvalue-corrected Shampoo (Meta's
    ``EigenvalueCorrectedShampooPreconditionerConfig``, its default eigh, f32 factors): tessel
    by default ("soap") and with ``keep_rotated_filtered_grad`` ("soap_rotated"; the same
    steps to rounding, docs/shampoo.md).
  * tessel: ``tessel_bench_shampoo`` ``BM_ShampooStep/0``, ``/1``, ``/2`` and ``BM_SoapStep/2/0``,
    ``/2/1`` (in each repetition one untimed step before the timed ones, ten before the
    preconditioned and SOAP steps); Meta: ``DistributedShampoo.step()`` from the checkout given
    with ``--meta`` (imported from there, not copied), max(warmup, 1) untimed steps (max(warmup,
    10) for the preconditioned and SOAP steps), then the median of ``--runs`` steps. Meta's
    gradients are set once and kept, like tessel's.
  Option by option (tessel ``shampoo::Options`` / ``PlanOptions`` -> Meta's constructor):
    lr 1e-2 (default)                     -> lr=1e-2
    beta1 0.9, beta2 1.0 (defaults)       -> betas=(0.9, 1.0)
    beta3 -1 (= beta1)                    -> beta3=-1.0
    epsilon 1e-8                          -> epsilon=1e-8
    weight_decay 0, decoupled             -> weight_decay=0.0
    momentum 0 (default)                  -> iterate_averaging_config=None
    use_bias_correction true              -> use_bias_correction=True
    max_preconditioner_dim 1024           -> max_preconditioner_dim=1024
    precondition_frequency                -> precondition_frequency (100 or 1)
    start_preconditioning_step            -> start_preconditioning_step (1000000 or 1)
    grafting adam_grafting(): beta2 0.999, epsilon 1e-10
                                          -> grafting_config=AdamPreconditionerConfig(
                                                 beta2=0.999, epsilon=1e-10)
    root: eigendecomposition, retried in f64, perturbed (RootConfig{} default)
                                          -> preconditioner_config=
                                             RootInvShampooPreconditionerConfig(
                                                 amortized_computation_config=EigenConfig(),
    factor_matrix_dtype f32                      factor_matrix_dtype=torch.float32,
    dense d x d factors                          use_symmetric_packing=False)
                                             (Meta's default packs the factors' upper
                                             triangles; tessel keeps them dense)
    one process, no distribution          -> distributed_config default (single device)

Output: one table (times in ms, ratio tessel/peer, extra memory in MB, the load average at the
start and the end), an SVG plot (``--svg``, default ``build/compare_pytorch.svg``: a run changes
no tracked file unless it names one, as docs/benchmarks.md's runs name their plots under
docs/img) and, with ``--json``, the raw figures. ``--quick`` is a smoke test of the whole
pipeline: FLCE at BT 256 / H 128 / V 4000 and BT 512 / H 256 / V 8000, one warm-up and two
runs, the Shampoo MLP with one run; its figures say nothing about speed.
"""

import argparse
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FULL_SHAPES = ((2048, 512, 32000), (4096, 2048, 32000))
QUICK_SHAPES = ((256, 128, 4000), (512, 256, 8000))
MLP_SHAPES = ((1024, 4096), (4096, 1024))
# Shampoo steps: mode -> (precondition_frequency, start_preconditioning_step, steps before the
# timed ones, Meta's preconditioner, tessel's benchmark). "preconditioned" and the SOAP modes
# time steps 11 to 19, between the root (eigenvector) computations of steps 10 and 20.
SHAMPOO_MODES = {
    "regular": (100, 1000000, 1, "shampoo", "BM_ShampooStep/0/"),
    "all_roots": (1, 1, 1, "shampoo", "BM_ShampooStep/1/"),
    "preconditioned": (10, 10, 10, "shampoo", "BM_ShampooStep/2/"),
    "soap": (10, 10, 10, "eigenvalue_corrected", "BM_SoapStep/2/0/"),
    "soap_rotated": (10, 10, 10, "eigenvalue_corrected", "BM_SoapStep/2/1/"),
}
MIB = 1024.0 * 1024.0
GOALS = {"flce": 0.8, "regular": 0.8, "all_roots": 0.7}  # issue 15; FLCE's against eager


def fail(message):
    """Stops the script with one sentence on stderr."""
    sys.exit(f"compare_pytorch.py: {message}")


# --- measurement helpers shared by the workers ----------------------------------------------


def proc_status_bytes(field):
    """A field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field} field")


def reset_peak_rss():
    """Returns free heap memory to the system and resets VmHWM to VmRSS; False if refused."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def rss_growth(call):
    """Peak resident-set growth in bytes over call(), or -1 when the peak cannot be reset."""
    ok = reset_peak_rss()
    base = proc_status_bytes("VmRSS")
    call()
    peak = proc_status_bytes("VmHWM")
    return peak - base if ok else -1


def median_time_ms(call, warmup, runs):
    """The median wall time of runs calls after warmup calls, in milliseconds."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


# --- workers: run in a fresh interpreter that has torch, print one JSON object -------------


def worker_flce(args):
    """PyTorch eager or compiled cross-entropy forward and backward at one shape."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(args.threads)
    bt, hidden, vocab = args.shape
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(bt, hidden, generator=gen).requires_grad_()
    w = (0.05 * torch.randn(vocab, hidden, generator=gen)).requires_grad_()
    y = torch.randint(0, vocab, (bt,), generator=gen)

    def loss_of(x, w, y):
        return F.cross_entropy(x @ w.T, y)

    fn = torch.compile(loss_of) if args.mode == "compile" else loss_of

    def call():
        x.grad = None
        w.grad = None
        fn(x, w, y).backward()

    for _ in range(max(args.warmup, 1)):
        call()
    x.grad = None
    w.grad = None
    outputs = (bt * hidden + vocab * hidden) * 4
    growth = rss_growth(call)
    extra = growth - outputs if growth >= 0 else -1
    ms = median_time_ms(call, 0, args.runs)
    return {"ms": ms, "extra_bytes": extra}


def meta_shampoo(params, meta, mode):
    """Meta's DistributedShampoo configured as tools/bench/shampoo_step_bench.cpp's Shampoo."""
    sys.path.insert(0, str(meta))
    import torch
    from distributed_shampoo import (
        AdamPreconditionerConfig,
        DistributedShampoo,
        EigenConfig,
        EigenvalueCorrectedShampooPreconditionerConfig,
        RootInvShampooPreconditionerConfig,
    )

    frequency, start, _, preconditioner, _ = SHAMPOO_MODES[mode]
    if preconditioner == "shampoo":
        config = RootInvShampooPreconditionerConfig(
            amortized_computation_config=EigenConfig(),
            factor_matrix_dtype=torch.float32,
            use_symmetric_packing=False,
        )
    else:  # its default eigh; tessel's soap_rotated differs only by rounding
        config = EigenvalueCorrectedShampooPreconditionerConfig(factor_matrix_dtype=torch.float32)
    return DistributedShampoo(
        params,
        lr=1e-2,
        betas=(0.9, 1.0),
        beta3=-1.0,
        epsilon=1e-8,
        weight_decay=0.0,
        max_preconditioner_dim=1024,
        precondition_frequency=frequency,
        start_preconditioning_step=start,
        use_bias_correction=True,
        iterate_averaging_config=None,
        grafting_config=AdamPreconditionerConfig(beta2=0.999, epsilon=1e-10),
        preconditioner_config=config,
    )


def worker_shampoo(args):
    """One Meta Shampoo step on the MLP, regular or recomputing all inverse roots."""
    import torch

    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    params = []
    for shape in MLP_SHAPES:
        p = torch.nn.Parameter(0.02 * torch.randn(*shape, generator=gen))
        p.grad = 0.02 * torch.randn(*shape, generator=gen)
        params.append(p)
    opt = meta_shampoo(params, args.meta, args.mode)
    before = SHAMPOO_MODES[args.mode][2]
    return {"ms": median_time_ms(opt.step, max(args.warmup, before), args.runs)}


def run_worker(args):
    """Worker mode: prints the measurement as JSON on the last line of stdout."""
    result = worker_flce(args) if args.worker == "flce" else worker_shampoo(args)
    print(json.dumps(result))


# --- the driver ------------------------------------------------------------------------------


def thread_env(threads):
    """The environment of a run with `threads` threads for OpenMP, MKL and OpenBLAS."""
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    return env


def run_json(command, threads):
    """Runs command with `threads` threads and parses the JSON of its stdout (a worker's: its
    last line)."""
    proc = subprocess.run(
        command, env=thread_env(threads), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        fail(f"{' '.join(map(str, command))} failed with status {proc.returncode}:\n"
             f"{proc.stderr.strip()[-2000:]}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return json.loads(proc.stdout.strip().splitlines()[-1])


def tessel_runs(binary, bench_filter, extra_args, threads, warmup, runs):
    """Google Benchmark repetitions of one benchmark: the kept runs' times and last counters."""
    command = [binary, f"--benchmark_filter={bench_filter}", "--benchmark_format=json",
               "--benchmark_min_time=0.01", f"--benchmark_repetitions={warmup + runs}",
               *extra_args]
    rows = [b for b in run_json(command, threads)["benchmarks"]
            if b.get("run_type", "iteration") == "iteration"]
    if len(rows) != warmup + runs:
        fail(f"{binary} ran {len(rows)} repetitions of {bench_filter}, not {warmup + runs}.")
    kept = rows[warmup:]
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[kept[0]["time_unit"]]
    return [b["real_time"] * scale for b in kept], kept[-1]


def tessel_flce(binary, shape, threads, warmup, runs, memory=True):
    """tessel's time (median) and, with `memory`, extra memory (peak RSS growth) at one shape."""
    bt, hidden, vocab = shape
    shape_arg = f"--flce_shape={bt},{hidden},{vocab}"
    name = f"^BM_FlceHostShape/{bt}/{hidden}/{vocab}/"
    times, _ = tessel_runs(binary, name, [shape_arg], threads, warmup, runs)
    if not memory:
        return {"ms": statistics.median(times)}
    _, counters = tessel_runs(binary, name, [shape_arg, "--rss"], threads, 0, 1)
    return {"ms": statistics.median(times), "extra_bytes": counters["rss_extra_bytes"],
            "heap_bytes": counters["extra_bytes"], "chunk_size": counters["chunk_size"]}


def torch_worker(worker, mode, threads, settings, shape=None):
    """Runs this script as a worker in a fresh interpreter."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", worker,
               "--mode", mode, "--worker-threads", str(threads),
               "--warmup", str(settings.warmup), "--runs", str(settings.runs)]
    if shape is not None:
        command += ["--shape", ",".join(map(str, shape))]
    if settings.meta is not None:
        command += ["--meta", str(settings.meta)]
    return run_json(command, threads)


def in_rounds(settings, label, ours, theirs):
    """(tessel, peer, per-round ratios) of one configuration over settings.rounds rounds: each
    round runs both sides back to back, tessel first in even rounds; the sides' results are the
    first round's with "ms" replaced by the median over the rounds. ours(round) and
    theirs(round) measure one side."""
    mine, peer, ratios = [], [], []
    for r in range(settings.rounds):
        sides = [("tessel", ours, mine), ("peer", theirs, peer)]
        for name, measure, out in sides if r % 2 == 0 else sides[::-1]:
            label(name, r)
            out.append(measure(r))
        ratios.append(mine[-1]["ms"] / peer[-1]["ms"])
    first_mine, first_peer = dict(mine[0]), dict(peer[0])
    first_mine["ms"] = statistics.median(m["ms"] for m in mine)
    first_peer["ms"] = statistics.median(p["ms"] for p in peer)
    return first_mine, first_peer, ratios


def round_label(progress, settings, what, peer_name):
    """A progress callback for in_rounds."""
    def label(side, r):
        of = f" (round {r + 1}/{settings.rounds})" if settings.rounds > 1 else ""
        progress(f"{what}: {'tessel' if side == 'tessel' else peer_name}{of}")
    return label


def measure_flce(settings, shapes, progress):
    """Rows of the FLCE comparison."""
    binary = settings.tessel_bin / "bench_flce_host"
    peers = ["eager"] + (["compile"] if settings.compile else [])
    rows = []
    for shape in shapes:
        for threads in settings.threads:
            for peer in peers:
                what = f"FLCE {shape} at {threads} thread(s)"
                ours, theirs, ratios = in_rounds(
                    settings, round_label(progress, settings, what, f"PyTorch {peer}"),
                    lambda r: tessel_flce(binary, shape, threads, settings.warmup,
                                          settings.runs, memory=r == 0),
                    lambda r: torch_worker("flce", peer, threads, settings, shape))
                rows.append({"workload": "flce", "case": "x".join(map(str, shape)),
                             "threads": threads, "peer": f"PyTorch {peer}",
                             "tessel": ours, "other": theirs, "round_ratios": ratios})
    return rows


def measure_shampoo(settings, progress):
    """Rows of the Shampoo comparison."""
    binary = settings.tessel_bin / "tessel_bench_shampoo"
    rows = []
    for threads in settings.threads:
        for mode, (_, _, _, _, bench) in SHAMPOO_MODES.items():
            def tessel_step(_, bench=bench, threads=threads):
                times, _ = tessel_runs(binary, f"^{bench}", [], threads, settings.warmup,
                                       settings.runs)
                return {"ms": statistics.median(times)}

            what = f"Shampoo {mode} step at {threads} thread(s)"
            ours, theirs, ratios = in_rounds(
                settings, round_label(progress, settings, what, "Meta"), tessel_step,
                lambda _, mode=mode, threads=threads: torch_worker("shampoo", mode, threads,
                                                                   settings))
            rows.append({"workload": mode, "case": "MLP 1024x4096, 4096x1024",
                         "threads": threads, "peer": "Meta DistributedShampoo",
                         "tessel": ours, "other": theirs, "round_ratios": ratios})
    return rows


def megabytes(side):
    """Extra memory in MB for the table, '-' where not measured."""
    extra = side.get("extra_bytes")
    if extra is None:
        return "-"
    return "n/a" if extra < 0 else f"{extra / MIB:.1f}"


def goal(row):
    """The issue's goal for the row's time ratio, None where it sets none (torch.compile)."""
    return None if row["peer"] == "PyTorch compile" else GOALS.get(row["workload"])


def goal_text(row):
    """The goal column of the table."""
    return "-" if goal(row) is None else f"<= {goal(row)}"


def memory_ratio(ours, theirs):
    """tessel's extra memory over the peer's for the table (goal: <= 1/8 of eager's)."""
    a, b = ours.get("extra_bytes"), theirs.get("extra_bytes")
    if a is None or b is None:
        return "-"
    return f"{a / b:.3f}" if a >= 0 and b > 0 else "n/a"


def time_ratio(row):
    """tessel's time over the peer's: the median of the rounds' ratios."""
    return statistics.median(row["round_ratios"])


def print_table(rows, load_start, load_end):
    """The one table of the comparison."""
    rounds = max(len(r["round_ratios"]) for r in rows)
    header = ("workload", "case", "thr", "peer", "tessel ms", "peer ms", "time ratio") + (
        ("rounds' ratios",) if rounds > 1 else ()) + ("goal", "tessel MB", "peer MB", "MB ratio")
    lines = [header]
    for r in rows:
        ours, theirs = r["tessel"], r["other"]
        spread = (f"{min(r['round_ratios']):.2f}-{max(r['round_ratios']):.2f}",) if rounds > 1 \
            else ()
        lines.append((r["workload"], r["case"], str(r["threads"]), r["peer"],
                      f"{ours['ms']:.1f}", f"{theirs['ms']:.1f}", f"{time_ratio(r):.2f}")
                     + spread + (goal_text(r), megabytes(ours), megabytes(theirs),
                                 memory_ratio(ours, theirs)))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for i, line in enumerate(lines):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(f"load average (1, 5, 15 min): start {load_start}, end {load_end}; "
          f"time ratio = tessel / peer{' (median of the rounds)' if rounds > 1 else ''}; MB = peak resident-set growth beyond inputs and outputs "
          "(goal: tessel <= 1/8 of eager's)")


def plot(rows, svg, title):
    """Time ratios (and FLCE extra memory) as an SVG."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, diffable SVG
    import matplotlib.pyplot as plt

    flce = [r for r in rows if r["workload"] == "flce"]
    fig, axes = plt.subplots(1, 2 if flce else 1, figsize=(12 if flce else 7, 4.8),
                             squeeze=False)
    ratio_ax = axes[0][0]
    labels = [f"{r['workload']}{' ' + r['case'] if r['workload'] == 'flce' else ''}\n"
              f"{r['threads']} thr vs {r['peer'].replace('PyTorch ', '')}" for r in rows]
    ratios = [time_ratio(r) for r in rows]
    colors = ["tab:gray" if goal(r) is None else "tab:green" if q <= goal(r) else "tab:red"
              for q, r in zip(ratios, rows)]
    ratio_ax.barh(range(len(rows)), ratios, color=colors)
    ratio_ax.axvline(1.0, color="black", linewidth=0.8)
    ratio_ax.set_xlim(0, max(ratios + [1.0]) * 1.15)
    for i, (q, r) in enumerate(zip(ratios, rows)):
        ratio_ax.text(q, i, f" {q:.2f}", va="center", fontsize=7)
        if goal(r) is not None:
            ratio_ax.plot([goal(r)], [i], marker="|", markersize=14, color="black")
    ratio_ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ratio_ax.invert_yaxis()
    ratio_ax.set_xlabel("time, tessel / peer (lower is better; |: the goal; green meets it, "
                        "red misses it, gray: no goal)", fontsize=8)
    if flce:
        mem_ax = axes[0][1]
        cases = list(dict.fromkeys((r["case"], r["threads"]) for r in flce))
        sides = [("tessel", lambda r: r["tessel"], "PyTorch eager")]
        sides += [(r["peer"], lambda r: r["other"], r["peer"])
                  for r in flce if r["case"] == flce[0]["case"]
                  and r["threads"] == flce[0]["threads"]]
        width = 0.8 / len(sides)
        for k, (label, pick, peer) in enumerate(sides):
            values = [max(pick(r)["extra_bytes"], 0) / MIB for case in cases for r in flce
                      if (r["case"], r["threads"]) == case and r["peer"] == peer]
            mem_ax.bar([i + (k - (len(sides) - 1) / 2) * width for i in range(len(cases))],
                       values, width, label=label)
        mem_ax.set_xticks(range(len(cases)), [f"{c}\n{t} thr" for c, t in cases], fontsize=7)
        mem_ax.set_yscale("log")
        mem_ax.set_ylabel("FLCE extra memory, MB (peak RSS growth, log scale)")
        mem_ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    svg.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(svg)


def check_inputs(settings):
    """One sentence for each missing input the run needs."""
    for name in ("bench_flce_host",) + (("tessel_bench_shampoo",) if settings.meta else ()):
        if not (settings.tessel_bin / name).is_file():
            fail(f"no {name} in {settings.tessel_bin}; build it with `cmake --preset bench && "
                 f"ninja -C build/bench bench_flce_host tessel_bench_shampoo` or pass "
                 f"--tessel-bin DIR.")
    if settings.meta is not None and not (settings.meta / "distributed_shampoo"
                                          / "__init__.py").is_file():
        fail(f"--meta {settings.meta} is not a checkout of facebookresearch/optimizers (no "
             f"distributed_shampoo/__init__.py there).")


def has_module(python, module):
    """True if `python` imports `module`."""
    probe = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True,
                           check=False)
    return probe.returncode == 0


def ensure_interpreter(settings, argv):
    """Re-runs the script under an interpreter with torch and matplotlib, creating one if
    needed; returns only when the current interpreter is that one."""
    if settings.python is not None:
        python = settings.python
        if not Path(python).exists():
            fail(f"--python {python} does not exist.")
    elif has_module(sys.executable, "torch"):
        python = Path(sys.executable)
    else:
        python = settings.venv / "bin" / "python"
        if not python.exists():
            print(f"creating a virtual environment in {settings.venv} with torch and "
                  "matplotlib from PyPI", file=sys.stderr)
            venv.create(settings.venv, with_pip=True)
        if not has_module(python, "torch"):
            subprocess.run([str(python), "-m", "pip", "install", "torch"], check=True)
    if not has_module(python, "matplotlib"):
        print(f"installing matplotlib into {python}", file=sys.stderr)
        subprocess.run([str(python), "-m", "pip", "install", "matplotlib"], check=True)
    if Path(python).absolute() != Path(sys.executable).absolute():
        os.execv(str(python), [str(python), str(Path(__file__).resolve()), *argv,
                               "--python", str(python)])


def parse_args(argv):
    """Command line of the driver and of its workers."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tessel-bin", type=Path, default=REPO / "build" / "bench" / "bin",
                        help="directory with bench_flce_host and tessel_bench_shampoo")
    parser.add_argument("--meta", type=lambda p: Path(p).expanduser().resolve(),
                        help="checkout of facebookresearch/optimizers (enables Shampoo)")
    parser.add_argument("--python", type=Path,
                        help="interpreter with torch (and matplotlib) to run PyTorch with")
    parser.add_argument("--venv", type=Path, default=REPO / "build" / "compare-venv",
                        help="virtual environment to create when torch is not importable")
    parser.add_argument("--compile", action="store_true",
                        help="also compare with torch.compile of the PyTorch function")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--runs", type=int, default=None,
                        help="timed runs per measurement (median; default 5, quick 2)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed runs before them (default 1)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure each configuration this many times, the sides back to "
                             "back (default 1)")
    parser.add_argument("--flce-shapes",
                        help="FLCE shapes as BTxHxV, comma-separated (default "
                             "2048x512x32000,4096x2048x32000; --quick: two small ones)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: small FLCE shapes, few runs (figures meaningless)")
    parser.add_argument("--svg", type=Path, default=REPO / "build" / "compare_pytorch.svg",
                        help="where the plot goes (default build/compare_pytorch.svg; docs/img/ "
                             "for a run docs/benchmarks.md shows)")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    parser.add_argument("--worker", choices=("flce", "shampoo"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--worker-threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--shape", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    text = args.threads
    try:
        args.threads = [int(t) for t in text.split(",")]
    except ValueError:
        args.threads = [0]
    if min(args.threads) < 1:
        fail(f"--threads takes comma-separated positive integers, got '{text}'.")
    if args.runs is None:
        args.runs = 2 if args.quick else 5
    if args.warmup is None:
        args.warmup = 1
    if args.runs < 1 or args.warmup < 0 or args.rounds < 1:
        fail("--runs and --rounds must be >= 1 and --warmup >= 0.")
    # Modes that time the steps between two root computations (start, then start + frequency)
    # must not reach the second: Meta's timed steps end at max(warmup, before) + runs.
    for mode, (frequency, start, before, _, _) in SHAMPOO_MODES.items():
        if args.meta and frequency > 1 and start == before and \
                max(args.warmup, before) + args.runs >= start + frequency:
            fail(f"--warmup {args.warmup} and --runs {args.runs} would time Meta's step "
                 f"{start + frequency}, which recomputes the roots the {mode} step leaves out: "
                 f"keep max(warmup, {before}) + runs < {start + frequency}.")
    if args.flce_shapes is not None:
        text = args.flce_shapes
        try:
            args.flce_shapes = tuple(tuple(int(n) for n in shape.split("x"))
                                     for shape in text.split(","))
        except ValueError:
            args.flce_shapes = ((0,),)
        if any(len(shape) != 3 or min(shape) < 1 for shape in args.flce_shapes):
            fail(f"--flce-shapes takes comma-separated BTxHxV with three positive integers "
                 f"each, got '{text}'.")
    if args.worker is not None:
        args.threads = args.worker_threads
        if args.shape:
            args.shape = tuple(int(n) for n in args.shape.split(","))
    return args


def without_python(argv):
    """argv less its --python option, which the re-run under that interpreter gets anew."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--python":
            skip = True
        elif not arg.startswith("--python="):
            kept.append(arg)
    return kept


def main(argv):
    """Measures every configuration, prints the table, writes the plot."""
    settings = parse_args(argv)
    if settings.worker is not None:
        run_worker(settings)
        return
    settings.tessel_bin = settings.tessel_bin.resolve()
    check_inputs(settings)
    ensure_interpreter(settings, without_python(argv))

    def progress(message):
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    shapes = settings.flce_shapes or (QUICK_SHAPES if settings.quick else FULL_SHAPES)
    rows = measure_flce(settings, shapes, progress)
    if settings.meta is not None:
        rows += measure_shampoo(settings, progress)
    else:
        progress("no --meta: the Shampoo comparison is skipped")
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print_table(rows, load_start, load_end)
    import torch

    title = (f"tessel vs PyTorch {torch.__version__} (CPU) and Meta's Shampoo, "
             f"{started}, load {load_start} -> {load_end}"
             + (" (--quick smoke run: not a measurement)" if settings.quick else ""))
    plot(rows, settings.svg, title)
    print(f"plot: {settings.svg}")
    if settings.json is not None:
        settings.json.write_text(json.dumps(
            {"started": started, "load_start": load_start, "load_end": load_end,
             "quick": settings.quick, "rows": rows}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
