#!/usr/bin/env python3
"""PyTorch's baseline for bench_flce_cuda on the same GPU: the loss, d loss / d x and d loss / d w of
``F.cross_entropy((x @ w.T).float(), y)`` (mean) with bf16 x (BT, H) and w (V, H), at H 4096,
V 128256 (Llama-3's vocabulary), BT 4096 and 16384: the eager computation that materializes the
(BT, V) logits, as a user without a fused kernel writes it.

    tools/bench/flce_torch_cuda.py [--bt 4096,16384] [--runs 5] [--warmup 2]

Prints one line per shape: median time of --runs calls (CUDA events, after --warmup calls),
TFLOP/s counted as bench_flce_cuda counts them (6 BT H V), and the peak device memory the call
allocated beyond its inputs (torch.cuda.max_memory_allocated), or "out of memory".
"""
import argparse
import statistics

import torch
import torch.nn.functional as F


def measure(bt, hidden, vocab, runs, warmup):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.rand(bt, hidden, device="cuda", generator=g) * 2 - 1).bfloat16().requires_grad_()
    w = ((torch.rand(vocab, hidden, device="cuda", generator=g) * 2 - 1) * 0.02).bfloat16()
    w.requires_grad_()
    y = torch.randint(0, vocab, (bt,), device="cuda", generator=g)
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for i in range(warmup + runs):
        x.grad = None
        w.grad = None
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = F.cross_entropy((x @ w.T).float(), y)
        loss.backward()
        end.record()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(end) / 1e3)
    t = statistics.median(times)
    peak = torch.cuda.max_memory_allocated() - base
    return t, 6 * bt * hidden * vocab / t / 1e12, peak


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bt", default="4096,16384")
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--vocab", type=int, default=128256)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    for bt in (int(s) for s in a.bt.split(",")):
        try:
            t, tflops, peak = measure(bt, a.hidden, a.vocab, a.runs, a.warmup)
            print(f"BT {bt} H {a.hidden} V {a.vocab}: median {t * 1e3:.2f} ms, {tflops:.0f} TFLOP/s, "
                  f"peak beyond inputs {peak / 2**30:.2f} GiB")
        except torch.OutOfMemoryError:
            print(f"BT {bt} H {a.hidden} V {a.vocab}: out of memory")
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
