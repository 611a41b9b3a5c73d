"""PyTorch's causal attention on the CPU, forward + backward, at the shapes of
tools/bench/attention_host_bench.cpp (f32, 12 heads of 64, B 4, T 64 / 256 / 1024):
F.scaled_dot_product_attention(is_causal=True) on (B, heads, T, head_dim) transposed views of
(B, T, heads, head_dim) tensors, as GPT-2 calls it. Prints the median wall and CPU milliseconds
per forward + backward (CPU time, of all the process's threads, is what to compare on a shared
machine; Google Benchmark's "CPU" column is the same measure).

    python tools/bench/attention_torch.py --threads 1
"""
import argparse
import time

import torch
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    for t in (64, 256, 1024):
        b, h, d = 4, 12, 64
        q, k, v = (torch.randn(b, t, h, d, requires_grad=True) for _ in range(3))
        go = torch.randn(b, h, t, d)
        times, cpu = [], []
        for rep in range(args.repeats + 3):
            start, start_cpu = time.perf_counter(), time.process_time()
            out = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            out.backward(go)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            q.grad = k.grad = v.grad = None
        times, cpu = sorted(times[3:]), sorted(cpu[3:])
        print(f"torch sdpa B {b} T {t} heads {h} head_dim {d} threads {args.threads}: "
              f"{1e3 * times[len(times) // 2]:.2f} ms wall, {1e3 * cpu[len(cpu) // 2]:.2f} ms CPU "
              "forward+backward")


if __name__ == "__main__":
    main()
