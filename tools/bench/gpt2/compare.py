#!/usr/bin/env python3
"""GPT-2 small's training step on the host: llm.c's train_gpt2.c, PyTorch eager, torch.compile.

The peers tessel's GPT-2 model is measured against (issue 48, item 5). Not part of CI.

    tools/bench/gpt2/compare.py [--T 64,256] [--threads 1,2] [--warmup 1] [--steps 5]
        [--peers llmc,eager,sdpa,compile] [--rounds 1] [--json FILE] [--tiny]
        [--skip-format-check] [--skip-gradient-check]

Run it with a Python that has torch and numpy (the project's build/python-test-venv). What it
does, in build/gpt2-peers/ (created; nothing is written into the repository):

1. llm.c: `git archive` of the llm.c repository (--llmc-git, default the mirror's bare repo) into
   llm.c/, `make train_gpt2` there with llm.c's own Makefile, and llmc_step.c compiled with the
   command that Makefile printed for train_gpt2 (-Ofast -march=native -fopenmp), so the step is
   llm.c's code built as llm.c builds it.
2. Files (llmc_files.py): the model from gpt2_reference.py's seeded initialization, written as
   llm.c's checkpoint and as safetensors, and random tokens as llm.c data shards.
3. Checks: llm.c's unmodified train_gpt2 on the tiny configuration's files, stopped after its
   first validation loss, which must equal PyTorch's on the same weights and batches (format
   check); llm.c's first-step gradients (llmc_step dumps them) against PyTorch float64's, tensor
   by tensor (gradient check, at the first T).
4. Timing, for every T and thread count, each peer in a fresh process with OMP_NUM_THREADS,
   MKL_NUM_THREADS and OPENBLAS_NUM_THREADS set (and torch.set_num_threads): B 4 (llm.c's CPU
   configuration), --warmup steps then --steps timed steps of forward + backward + AdamW
   (lr 1e-4, betas 0.9/0.999, eps 1e-8, no weight decay: train_gpt2.c's), batch i = tokens
   [i*B*T, (i+1)*B*T] of the same shard for every peer. The figure is the median step time.
     llmc     llmc_step (llm.c's step: gpt2_forward, gpt2_zero_grad, gpt2_backward, gpt2_update)
     eager    gpt2_reference.GPT2 (attention written out), AdamW(fused=True): PyTorch's fastest
              stock CPU optimizer (its default on CPU is a per-tensor loop, seconds slower here)
     sdpa     the same with F.scaled_dot_product_attention (PyTorch's fused attention)
     compile  torch.compile(model) (inductor; compiles in the first warm-up step), fused AdamW
   With --rounds R each configuration is measured R times back to back, the peers' order
   rotating, and each figure is the median of the R medians.
5. Loss check: llm.c's loss at every step against PyTorch eager's (same weights, batches and
   optimizer): the first step within 1e-4 relative shows the checkpoint writer is right; the
   later ones compare gradients and AdamW in aggregate. The float64 first-step loss is given too.

Output: one markdown table (median step ms, range, tokens/s, ratio to llm.c and to eager, load
average before and after each run) with tessel's target per configuration (issue 48: <= 0.5x
llm.c's step and <= 0.8x eager's), and with --json every step time and loss.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DEFAULT_LLMC_GIT = "/work/.mirror/karpathy+llm.c/repo"
# llm.c's training hyperparameters (train_gpt2.c main: gpt2_update(&model, 1e-4f, 0.9f, 0.999f,
# 1e-8f, 0.0f, step+1)), given to PyTorch's AdamW.
ADAMW = dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
B = 4
LOSS_TOLERANCE = 1e-4  # relative, float32, first step
# Worst per-tensor relative gradient error of llm.c against float64: float32 rounding gives far
# less (compare.py prints PyTorch float32's own figure beside it), a layout mistake order 1.
GRAD_TOLERANCE = 1e-3
PEERS = ("llmc", "eager", "sdpa", "compile")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def load_avg():
    return [round(x, 2) for x in os.getloadavg()]


def thread_env(threads):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    return env


# --------------------------------------------------------------------------------------------
# llm.c: sources from git, built with its Makefile's command


def build_llmc(llmc_git, work):
    src = os.path.join(work, "llm.c")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    commit = subprocess.run(["git", "-C", llmc_git, "rev-parse", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    archive = subprocess.run(["git", "-C", llmc_git, "archive", "HEAD", "train_gpt2.c", "Makefile",
                              "llmc", "dev/unistd.h"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    # The Makefile's recipe for train_gpt2, as it expands on this machine (its compiler and
    # flag probes); make -n prints it without running it.
    dry = subprocess.run(["make", "-n", "train_gpt2"], cwd=src, check=True, capture_output=True,
                         text=True).stdout.splitlines()
    recipe = next(line for line in dry if "train_gpt2.c" in line and "-o train_gpt2" in line)
    subprocess.run(["make", "train_gpt2"], cwd=src, check=True, capture_output=True)
    args = shlex.split(recipe)
    args = [os.path.join(HERE, "llmc_step.c") if a == "train_gpt2.c" else a for a in args]
    args[args.index("-o") + 1] = "llmc_step"
    args.insert(1, "-I.")  # train_gpt2.c is included from the build copy
    subprocess.run(args, cwd=src, check=True)
    log(f"llm.c {commit[:12]} built: {recipe}")
    return {"commit": commit, "recipe": recipe, "dir": src}


def parse_llmc_steps(text):
    """'step 3: train loss 10.98 (took 1234.5 ms)' lines -> (losses, ms)."""
    losses, ms = [], []
    for line in text.splitlines():
        if line.startswith("step ") and "train loss" in line:
            losses.append(float(line.split("train loss")[1].split()[0]))
            ms.append(float(line.split("(took")[1].split()[0]))
    return losses, ms


def run_llmc(llmc, files, T, threads, warmup, steps):
    out = subprocess.run([os.path.join(llmc["dir"], "llmc_step"), files["checkpoint"],
                          files["train"], str(B), str(T), str(warmup + steps)],
                         env=thread_env(threads), check=True, capture_output=True, text=True).stdout
    losses, ms = parse_llmc_steps(out)
    return {"losses": losses, "ms": ms}


def check_llmc_main(llmc, tiny_dir):
    """Runs llm.c's unmodified train_gpt2 from tiny_dir until its step 0 and returns its first
    validation loss (5 unshuffled val batches of B 4, T 64, before any training)."""
    proc = subprocess.Popen([os.path.join(llmc["dir"], "train_gpt2")], cwd=tiny_dir,
                            env=thread_env(1), stdout=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("step 0:"):
                break
    finally:
        proc.kill()  # the rest is 40 more steps and sampling; this process is ours
        proc.wait()
    val = [float(line.split()[-1]) for line in lines if line.startswith("val loss")]
    if not val:
        raise RuntimeError("train_gpt2 printed no validation loss:\n" + "".join(lines))
    return val[0], "".join(lines)


# --------------------------------------------------------------------------------------------
# PyTorch: each configuration in its own process (`compare.py torch ...`), so thread settings
# and compiled code never leak from one to the next.


def torch_worker(args):
    import torch

    torch.set_num_threads(args.threads)
    sys.path.insert(0, HERE)
    from gpt2_reference import load_model
    from llmc_files import read_tokens

    tokens = torch.from_numpy(read_tokens(args.tokens))
    T = args.T

    def batch(i):
        # Contiguous copies: the same tensor metadata every step, so nothing recompiles.
        start = i * B * T
        return (tokens[start:start + B * T].view(B, T).clone(),
                tokens[start + 1:start + B * T + 1].view(B, T).clone())

    if args.mode == "f64":  # the float64 first-step loss, forward only
        model = load_model(args.weights, torch.float64)
        with torch.no_grad():
            loss = model(*batch(0))[1].item()
        print(json.dumps({"losses": [loss]}))
        return
    if args.mode == "gradcheck":
        print(json.dumps(gradient_check(args.weights, args.llmc_grads, batch(0))))
        return

    model = load_model(args.weights, torch.float32,
                       attention="sdpa" if args.mode == "sdpa" else "math")
    step_model = torch.compile(model) if args.mode == "compile" else model
    optimizer = torch.optim.AdamW(model.parameters(), fused=True, **ADAMW)
    losses, ms = [], []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        x, y = batch(step)
        _, loss = step_model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        ms.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"losses": losses, "ms": ms}))


def gradient_check(weights, llmc_grads_path, batch):
    """Every parameter's gradient of the first batch's loss from llm.c (float32) and PyTorch
    (float32), each against PyTorch in float64: relative error ||g - g64|| / ||g64|| per tensor.
    A layout mistake in the checkpoint writer gives errors of order 1 in the tensors it touches,
    where the loss alone can miss it (at GPT-2's init, misreading c_attn's layout moves the first
    loss by only 1.5e-5 relative: attention is nearly uniform)."""
    import torch
    from gpt2_reference import load_model, loss_and_gradients
    from llmc_files import read_checkpoint

    _, llmc = read_checkpoint(llmc_grads_path)
    grads, losses = {}, {}
    for dtype in (torch.float64, torch.float32):
        losses[str(dtype)], grads[dtype] = loss_and_gradients(load_model(weights, dtype), *batch)
    ref = grads[torch.float64]

    def rel(g, n):
        return ((g.double() - ref[n]).norm() / ref[n].norm()).item()

    per_tensor = {n: {"llmc": rel(llmc[n], n), "torch_f32": rel(grads[torch.float32][n], n)}
                  for n in ref}
    worst = {side: max(((v[side], n) for n, v in per_tensor.items())) for side in ("llmc", "torch_f32")}
    return {"losses": losses, "per_tensor": per_tensor,
            "worst": {side: {"tensor": n, "rel": r} for side, (r, n) in worst.items()}}


def run_torch(python, mode, files, T, threads, warmup, steps, llmc_grads=None):
    cmd = [python, os.path.abspath(__file__), "torch", "--mode", mode, "--threads", str(threads),
           "--T", str(T), "--warmup", str(warmup), "--steps", str(steps),
           "--weights", files["weights"], "--tokens", files["train"]]
    if llmc_grads:
        cmd += ["--llmc-grads", llmc_grads]
    proc = subprocess.run(cmd, env=thread_env(threads), capture_output=True, text=True)
    if proc.returncode != 0:
        # torch.compile can fail for reasons of the machine (no compiler, no Python headers):
        # the table says so instead of the run stopping.
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": " | ".join(tail) or f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------


def measure(peer, ctx, T, threads):
    before = load_avg()
    wall = time.perf_counter()
    if peer == "llmc":
        result = run_llmc(ctx["llmc"], ctx["files"], T, threads, ctx["warmup"], ctx["steps"])
    else:
        result = run_torch(ctx["python"], peer, ctx["files"], T, threads, ctx["warmup"],
                           ctx["steps"])
    result.update(peer=peer, T=T, threads=threads, load_before=before, load_after=load_avg(),
                  wall_s=round(time.perf_counter() - wall, 1))
    if "ms" in result:
        timed = result["ms"][ctx["warmup"]:]
        result["median_ms"] = statistics.median(timed)
        result["warmup_ms"] = result["ms"][:ctx["warmup"]]
        log(f"  {peer:8s} T {T:4d} threads {threads}: median {result['median_ms']:9.1f} ms "
            f"(warm-up {', '.join(f'{x:.0f}' for x in result['warmup_ms'])} ms), load "
            f"{before[0]:.2f} -> {result['load_after'][0]:.2f}")
    else:
        log(f"  {peer:8s} T {T:4d} threads {threads}: failed: {result['error']}")
    return result


def summarize(runs, peers):
    """Per (T, threads, peer): the median of the per-round medians, and its runs."""
    table = {}
    for r in runs:
        table.setdefault((r["T"], r["threads"], r["peer"]), []).append(r)
    rows = []
    for (T, threads, peer), rs in sorted(table.items(), key=lambda kv: (
            kv[0][0], kv[0][1], peers.index(kv[0][2]))):
        ok = [r for r in rs if "median_ms" in r]
        row = {"T": T, "threads": threads, "peer": peer, "rounds": len(rs)}
        if ok:
            timed = [x for r in ok for x in r["ms"][len(r["warmup_ms"]):]]
            row.update(median_ms=statistics.median(r["median_ms"] for r in ok),
                       min_ms=min(timed), max_ms=max(timed),
                       load_before=ok[0]["load_before"][0], load_after=ok[-1]["load_after"][0])
        else:
            row["error"] = rs[0]["error"]
        rows.append(row)
    return rows


def loss_check(runs, f64):
    """llm.c against eager on every configuration both ran: relative differences per step."""
    checks = []
    for r in runs:
        if r["peer"] != "llmc" or "losses" not in r:
            continue
        eager = next((e for e in runs if e["peer"] == "eager" and e["T"] == r["T"]
                      and e["threads"] == r["threads"] and "losses" in e), None)
        if eager is None:
            continue
        rel = [abs(a - b) / abs(b) for a, b in zip(r["losses"], eager["losses"])]
        checks.append({"T": r["T"], "threads": r["threads"], "llmc_first": r["losses"][0],
                       "eager_first": eager["losses"][0], "f64_first": f64.get(r["T"]),
                       "rel_first": rel[0], "rel_max_all_steps": max(rel),
                       "ok": rel[0] <= LOSS_TOLERANCE})
    return checks


def markdown(rows, checks, fmt_check, grad_check, B, warmup, steps):
    lines = ["| T | threads | peer | median step (ms) | range (ms) | tokens/s | × llm.c | × eager "
             "| load before → after |", "|---|---|---|---|---|---|---|---|---|"]
    index = {(r["T"], r["threads"], r["peer"]): r for r in rows}
    targets = []
    for r in rows:
        key = (r["T"], r["threads"])
        if "error" in r:
            lines.append(f"| {r['T']} | {r['threads']} | {r['peer']} | failed: {r['error'][:120]} "
                         "| | | | | |")
            continue
        ratio = {}
        for base in ("llmc", "eager"):
            b = index.get((*key, base))
            ratio[base] = f"{r['median_ms'] / b['median_ms']:.2f}" if b and "median_ms" in b else ""
        lines.append(f"| {r['T']} | {r['threads']} | {r['peer']} | {r['median_ms']:.0f} | "
                     f"{r['min_ms']:.0f}–{r['max_ms']:.0f} | {B * r['T'] * 1e3 / r['median_ms']:.0f} "
                     f"| {ratio['llmc']} | {ratio['eager']} | {r['load_before']:.2f} → "
                     f"{r['load_after']:.2f} |")
    for (T, threads) in sorted({(r["T"], r["threads"]) for r in rows}):
        bounds = []
        for base, factor in (("llmc", 0.5), ("eager", 0.8)):
            b = index.get((T, threads, base))
            if b and "median_ms" in b:
                bounds.append((factor * b["median_ms"], f"{factor} × {base}"))
        if bounds:
            ms, why = min(bounds)
            targets.append(f"T {T}, {threads} thread(s): tessel's step ≤ {ms:.0f} ms ({why})")
    out = [f"B {B}; {warmup} warm-up step(s) then {steps} timed; median of the timed steps.", ""]
    out += lines + ["", "Targets (issue 48: ≤ 0.5× llm.c's step and ≤ 0.8× eager's):"]
    out += [f"- {t}" for t in targets]
    out += ["", "Loss check, llm.c against PyTorch eager (same weights, batches, AdamW):", "",
            "| T | threads | llm.c first loss | eager first loss | float64 first loss "
            "| relative difference, first step | largest over all steps | ≤ 1e-4 |",
            "|---|---|---|---|---|---|---|---|"]
    for c in checks:
        f64 = f"{c['f64_first']:.7f}" if c["f64_first"] is not None else ""
        out.append(f"| {c['T']} | {c['threads']} | {c['llmc_first']:.7f} | {c['eager_first']:.7f} "
                   f"| {f64} | {c['rel_first']:.1e} | {c['rel_max_all_steps']:.1e} "
                   f"| {'yes' if c['ok'] else '**no**'} |")
    if fmt_check:
        out += ["", f"Format check (llm.c's unmodified train_gpt2, tiny configuration): first val "
                f"loss {fmt_check['llmc']:.6f}, PyTorch {fmt_check['torch']:.6f} (relative "
                f"{fmt_check['rel']:.1e})."]
    if grad_check:
        w = grad_check["worst"]
        out += ["", f"Gradient check (T {grad_check['T']}, first batch, every parameter against "
                f"PyTorch float64, worst tensor's ||g - g64|| / ||g64||): llm.c "
                f"{w['llmc']['rel']:.1e} (`{w['llmc']['tensor']}`), PyTorch float32 "
                f"{w['torch_f32']['rel']:.1e} (`{w['torch_f32']['tensor']}`); "
                f"≤ {GRAD_TOLERANCE:g}: {'yes' if grad_check['ok'] else '**no**'}."]
    return "\n".join(out)


def tiny_val_loss(tiny_dir):
    """PyTorch's mean loss over train_gpt2's 5 first validation batches (B 4, T 64)."""
    import torch
    sys.path.insert(0, HERE)
    from gpt2_reference import load_model
    from llmc_files import data_paths, read_tokens

    model = load_model(os.path.join(tiny_dir, "init.safetensors"))
    val = torch.from_numpy(read_tokens(data_paths(tiny_dir)[1]))
    n = B * 64
    with torch.no_grad():
        losses = [model(val[i * n:(i + 1) * n].view(B, 64),
                        val[i * n + 1:(i + 1) * n + 1].view(B, 64))[1].item() for i in range(5)]
    return sum(losses) / len(losses)


def machine():
    model = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, {platform.machine()}"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "torch":
        p = argparse.ArgumentParser()
        for name, typ in (("--mode", str), ("--threads", int), ("--T", int), ("--warmup", int),
                          ("--steps", int), ("--weights", str), ("--tokens", str)):
            p.add_argument(name, type=typ, required=True)
        p.add_argument("--llmc-grads")
        return torch_worker(p.parse_args(sys.argv[2:]))

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--T", default="64,256", help="sequence lengths, comma-separated")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--peers", default="llmc,eager,sdpa,compile", help=f"from {','.join(PEERS)}")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--tiny", action="store_true",
                   help="time the tiny configuration instead of GPT-2 small (a quick smoke test)")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--llmc-git", default=DEFAULT_LLMC_GIT, help="llm.c's git repository")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "gpt2-peers"))
    p.add_argument("--python", default=sys.executable, help="the interpreter for PyTorch runs")
    p.add_argument("--skip-format-check", action="store_true")
    p.add_argument("--skip-gradient-check", action="store_true")
    p.add_argument("--json", help="write every figure here")
    args = p.parse_args()
    Ts = [int(x) for x in args.T.split(",")]
    thread_counts = [int(x) for x in args.threads.split(",")]
    peers = args.peers.split(",")
    unknown = set(peers) - set(PEERS)
    if unknown:
        p.error(f"unknown peers {sorted(unknown)}; known: {','.join(PEERS)}")

    sys.path.insert(0, HERE)
    from gpt2_reference import GPTConfig
    from llmc_files import data_paths, write_all

    os.makedirs(args.work, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    load_start = load_avg()
    llmc = build_llmc(args.llmc_git, args.work)

    fmt_check = None
    if not args.skip_format_check:
        tiny_dir = os.path.join(args.work, "tiny")
        write_all(tiny_dir, GPTConfig.tiny(), args.seed)
        llmc_val, _ = check_llmc_main(llmc, tiny_dir)
        torch_val = tiny_val_loss(tiny_dir)
        fmt_check = {"llmc": llmc_val, "torch": torch_val,
                     "rel": abs(llmc_val - torch_val) / abs(torch_val)}
        log(f"format check: train_gpt2's first val loss {llmc_val:.6f}, PyTorch {torch_val:.6f}")

    config = GPTConfig.tiny() if args.tiny else GPTConfig.small()
    data_dir = os.path.join(args.work, "tiny" if args.tiny else "small")
    n_tokens = max(65536, (args.warmup + args.steps) * B * max(Ts) + 1)
    log(f"writing {config} to {data_dir}")
    write_all(data_dir, config, args.seed, n_tokens)
    files = {"checkpoint": os.path.join(data_dir, "gpt2_124M.bin"),
             "weights": os.path.join(data_dir, "init.safetensors"),
             "train": data_paths(data_dir)[0]}
    ctx = {"llmc": llmc, "files": files, "python": args.python, "warmup": args.warmup,
           "steps": args.steps}

    grad_check = None
    if not args.skip_gradient_check:
        grads_path = os.path.join(data_dir, "llmc_grads.bin")
        subprocess.run([os.path.join(llmc["dir"], "llmc_step"), files["checkpoint"], files["train"],
                        str(B), str(Ts[0]), "1", grads_path], env=thread_env(max(thread_counts)),
                       check=True, capture_output=True)
        grad_check = run_torch(args.python, "gradcheck", files, Ts[0], max(thread_counts), 0, 1,
                               llmc_grads=grads_path)
        os.remove(grads_path)  # as large as the model
        if "error" in grad_check:
            raise RuntimeError(f"gradient check failed to run: {grad_check['error']}")
        grad_check.update(T=Ts[0], ok=grad_check["worst"]["llmc"]["rel"] <= GRAD_TOLERANCE)
        w = grad_check["worst"]
        log(f"gradient check (T {Ts[0]}): worst llm.c {w['llmc']['rel']:.1e} "
            f"({w['llmc']['tensor']}), PyTorch f32 {w['torch_f32']['rel']:.1e} "
            f"({w['torch_f32']['tensor']})")

    runs = []
    for T in Ts:
        for threads in thread_counts:
            for rnd in range(args.rounds):
                order = peers[rnd % len(peers):] + peers[:rnd % len(peers)]
                for peer in order:
                    runs.append(dict(measure(peer, ctx, T, threads), round=rnd))

    f64 = {}
    if "llmc" in peers and "eager" in peers:
        for T in Ts:
            f64[T] = run_torch(args.python, "f64", files, T, 1, 0, 1)["losses"][0]
    rows = summarize(runs, peers)
    checks = loss_check(runs, f64)
    report = markdown(rows, checks, fmt_check, grad_check, B, args.warmup, args.steps)
    import torch

    header = (f"{started:%Y-%m-%d %H:%M} UTC, {machine()}, load average at start "
              f"{' / '.join(map(str, load_start))}, at end {' / '.join(map(str, load_avg()))}; "
              f"llm.c {llmc['commit'][:7]}, PyTorch {torch.__version__}; "
              f"{'tiny configuration' if args.tiny else 'GPT-2 small (124M)'}")
    print(header + "\n\n" + report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"started": started.isoformat(), "machine": machine(), "header": header,
                       "command": sys.argv, "config": vars(config), "B": B,
                       "warmup": args.warmup, "steps": args.steps, "llmc": llmc,
                       "torch": torch.__version__, "format_check": fmt_check, "rows": rows,
                       "loss_check": checks, "gradient_check": grad_check, "runs": runs},
                      f, indent=1)
    if (any(not c["ok"] for c in checks) or (fmt_check and fmt_check["rel"] > LOSS_TOLERANCE)
            or (grad_check and not grad_check["ok"])):
        log("loss check FAILED")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
