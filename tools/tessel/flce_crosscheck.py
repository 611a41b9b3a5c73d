#!/usr/bin/env python3
"""Cross-check `tessel flce` against an independent float64 reference.

  flce_crosscheck.py make-inputs DIR [--bt 6 --hidden 4 --vocab 10 --seed 0]
      writes DIR/x.npy (BT, H), w.npy (V, H), b.npy (V,), cw.npy (V,) as float64 and y.npy (BT,)
      as int64 (two rows are -100, the default ignore_index), and soft targets: si.npy (BT, 3) int64
      classes (row 0 repeats one) and sp.npy (BT, 3) float64 probabilities
  flce_crosscheck.py compare DIR [--reduction mean] [--label-smoothing a] [--lse-square-scale s]
                     [--softcap c] [--temperature T] [--shift-sequence-length S]
                     [--entropy-bonus beta] [--bias] [--class-weights]
                     [--soft-targets [--soft-target-weight a]] [--backend torch|python]
      recomputes loss, grad_input, grad_weight (and grad_bias) from DIR's inputs and prints the
      largest difference from tessel's DIR/loss.npy, dx.npy, dw.npy (db.npy), and from
      DIR/lse.npy, logp.npy and entropy.npy (the per-row log-sum-exp, target log-probability and
      softmax entropy), argmax.npy (each row's predicted class, -1 if ignored) and accuracy.npy
      (the token accuracy, reduced like the loss) when they exist; with --tolerance t, exits with
      status 1 when a difference exceeds t * max(1, max |reference|) (any argmax difference fails)

The torch backend is PyTorch itself: F.cross_entropy on (input @ weight.T + bias) / T
(softcapped), against the targets shifted within sequences of S rows (labels[..., 1:], the last
row of each sequence ignored), plus Liger-Kernel's z-loss and minus beta times each non-ignored
row's softmax entropy (reduced like the cross-entropy), and with --soft-targets (1 - a) times that
cross-entropy plus a times F.cross_entropy against the dense probability targets built from
DIR/si.npy and sp.npy (mean over the non-ignored rows), differentiated by autograd. The python backend (the default when
PyTorch is missing) is the same definition written out in plain Python: it needs nothing beyond
the standard library, .npy reading and writing included.
"""
import argparse
import ast
import math
import os
import random
import struct
import sys

# ---- .npy files (C order, little-endian) with the standard library ----

_CODES = {"<f8": ("d", 8), "<f4": ("f", 4), "<i8": ("q", 8), "<i4": ("i", 4)}


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{path} is not a .npy file")
    major = data[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    code, size = _CODES[header["descr"]]
    shape = tuple(header["shape"])
    n = math.prod(shape)
    flat = list(struct.unpack("<%d%s" % (n, code), data[start + hlen:start + hlen + n * size]))
    return flat, shape


def write_npy(path, flat, shape, descr):
    code, _ = _CODES[descr]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    pad = 64 - (10 + len(header) + 1) % 64
    header = (header + " " * (pad % 64) + "\n").encode("latin1")
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)
        f.write(struct.pack("<%d%s" % (len(flat), code), *flat))


def rows(flat, shape):
    return [flat[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])]


# ---- the reference ----

def shifted(y, sequence_length, ignore):
    """The target each row is scored against under the causal shift (0: no shift)."""
    if not sequence_length:
        return list(y)
    return [ignore if (i + 1) % sequence_length == 0 else y[i + 1] for i in range(len(y))]


def accuracy_of(argmax, y, ignore, reduction):
    """[argmax == target] over the non-ignored rows, reduced like the loss, unweighted."""
    hits = [1.0 if y[i] != ignore and argmax[i] == y[i] else 0.0 for i in range(len(y))]
    kept = sum(1 for t in y if t != ignore)
    if reduction == "none":
        return hits
    if reduction == "sum":
        return [sum(hits)]
    return [sum(hits) / kept if kept else 0.0]


def dense_soft(si, sp, bt, v):
    """The soft targets (BT, K) as dense (BT, V) probabilities, repeated classes added."""
    q = [[0.0] * v for _ in range(bt)]
    for i in range(bt):
        for c, p in zip(si[i], sp[i]):
            q[i][c] += p
    return q


def reference_python(x, w, y, b, cw, reduction, eps, s, cap, ignore, temp=1.0, beta=0.0,
                     soft=None, alpha=1.0):
    bt, h, v = len(x), len(x[0]), len(w)
    a_hard, a_soft = (1.0 - alpha, alpha) if soft else (1.0, 0.0)
    q = soft if soft else [[0.0] * v for _ in range(bt)]
    weight = cw if cw is not None else [1.0] * v
    raw = [[(sum(x[i][k] * w[j][k] for k in range(h)) + (b[j] if b else 0.0)) / temp
            for j in range(v)] for i in range(bt)]
    z = [[cap * math.tanh(r / cap) if cap > 0 else r for r in row] for row in raw]
    lse = [max(row) + math.log(sum(math.exp(e - max(row)) for e in row)) for row in z]
    kept = [i for i in range(bt) if y[i] != ignore]
    wsum = sum(weight[y[i]] for i in kept)
    n = len(kept)
    per_row, per_z, per_soft = [0.0] * bt, [0.0] * bt, [0.0] * bt
    p_ = [[math.exp(e - lse[i]) for e in z[i]] for i in range(bt)]
    mean_z = [sum(p_[i][j] * z[i][j] for j in range(v)) for i in range(bt)]
    ent = [lse[i] - mean_z[i] for i in range(bt)]
    for i in kept:
        nll = -weight[y[i]] * (z[i][y[i]] - lse[i])
        smooth = -sum(weight[j] * (z[i][j] - lse[i]) for j in range(v))
        per_row[i] = a_hard * ((1 - eps) * nll + eps / v * smooth) - beta * ent[i]
        per_z[i] = s * lse[i] ** 2
        per_soft[i] = -a_soft * sum(weight[j] * ((1 - eps) * q[i][j] + eps / v) * (z[i][j] - lse[i])
                                    for j in range(v))
    if reduction == "none":
        loss = [per_row[i] + per_z[i] + per_soft[i] for i in range(bt)]
    elif reduction == "sum":
        loss = [sum(per_row) + sum(per_z) + sum(per_soft)]
    else:  # PyTorch gives NaN for 0/0; tessel gives 0 (and zero gradients)
        loss = [(sum(per_row) / wsum if wsum else 0.0) + ((sum(per_z) + sum(per_soft)) / n if n else 0.0)]
    ce_scale = (1 / wsum if wsum else 0.0) if reduction == "mean" else 1.0
    z_scale = (1 / n if n else 0.0) if reduction == "mean" else 1.0
    total_w = sum(weight)
    g = [[0.0] * v for _ in range(bt)]
    for i in kept:
        t = y[i]
        for j in range(v):
            p = math.exp(z[i][j] - lse[i])
            d = ce_scale * (a_hard * ((1 - eps) * weight[t] * (p - (j == t))
                                      + eps / v * (total_w * p - weight[j]))
                            + beta * p * (z[i][j] - mean_z[i]))
            d += z_scale * 2 * s * lse[i] * p
            mass = sum(weight[c] * q[i][c] for c in range(v))
            d += z_scale * a_soft * ((1 - eps) * (mass * p - weight[j] * q[i][j])
                                     + eps / v * (total_w * p - weight[j]))
            if cap > 0:
                d *= 1 - math.tanh(raw[i][j] / cap) ** 2
            g[i][j] = d / temp
    dx = [[sum(g[i][j] * w[j][k] for j in range(v)) for k in range(h)] for i in range(bt)]
    dw = [[sum(g[i][j] * x[i][k] for i in range(bt)) for k in range(h)] for j in range(v)]
    db = [sum(g[i][j] for i in range(bt)) for j in range(v)]
    lse_out = [lse[i] if y[i] != ignore else 0.0 for i in range(bt)]
    logp = [z[i][y[i]] - lse[i] if y[i] != ignore else 0.0 for i in range(bt)]
    entropy = [ent[i] if y[i] != ignore else 0.0 for i in range(bt)]
    # The first largest logit, as torch.argmax.
    argmax = [max(range(v), key=lambda j: (z[i][j], -j)) if y[i] != ignore else -1
              for i in range(bt)]
    return (loss, dx, dw, db, lse_out, logp, entropy, argmax,
            accuracy_of(argmax, y, ignore, reduction))


def reference_torch(x, w, y, b, cw, reduction, eps, s, cap, ignore, temp=1.0, beta=0.0,
                    soft=None, alpha=1.0):
    import torch
    import torch.nn.functional as F
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    bt = torch.tensor(b, dtype=torch.float64, requires_grad=True) if b else None
    yt = torch.tensor(y, dtype=torch.int64)
    cwt = torch.tensor(cw, dtype=torch.float64) if cw is not None else None
    logits = (xt @ wt.T + (bt if bt is not None else 0)) / temp
    if cap > 0:
        logits = cap * torch.tanh(logits / cap)
    loss = F.cross_entropy(logits, yt, weight=cwt, ignore_index=ignore, reduction=reduction,
                           label_smoothing=eps)
    kept = yt != ignore
    if soft:
        # Probability targets: PyTorch's mean would divide by every row; tessel's soft term
        # divides by the non-ignored rows, so reduce per row by hand.
        q = torch.tensor(soft, dtype=torch.float64)
        rows = F.cross_entropy(logits, q, weight=cwt, reduction="none", label_smoothing=eps) * kept
        soft_loss = (rows if reduction == "none"
                     else rows.sum() / (kept.sum() if reduction == "mean" else 1))
        loss = (1 - alpha) * loss + alpha * soft_loss
    if beta != 0.0:
        # The entropy bonus, reduced like the cross-entropy (mean: over the target weights' sum).
        ent = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1) * kept
        wt_sum = (cwt[yt.clamp(min=0)] * kept).sum() if cwt is not None else kept.sum()
        loss = loss - beta * (ent if reduction == "none"
                              else ent.sum() / (wt_sum if reduction == "mean" else 1))
    z = s * torch.logsumexp(logits, dim=-1) ** 2 * kept
    loss = loss + (z if reduction == "none" else z.sum() / (kept.sum() if reduction == "mean" else 1))
    loss.sum().backward()
    as_list = lambda t: t.detach().tolist()
    lse = torch.logsumexp(logits.detach(), dim=-1)
    logp = torch.log_softmax(logits.detach(), dim=-1).gather(1, yt.clamp(min=0)[:, None])[:, 0]
    ld = logits.detach()
    entropy = -(torch.softmax(ld, -1) * torch.log_softmax(ld, -1)).sum(-1)
    argmax = torch.where(kept, torch.argmax(ld, dim=-1), -1).tolist()
    return ([loss.item()] if loss.dim() == 0 else as_list(loss), as_list(xt.grad), as_list(wt.grad),
            as_list(bt.grad) if bt is not None else [], as_list(lse * kept), as_list(logp * kept),
            as_list(entropy * kept), argmax, accuracy_of(argmax, y, ignore, reduction))


# ---- commands ----

def make_inputs(a):
    rng = random.Random(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    gauss = lambda n, sd: [rng.gauss(0.0, sd) for _ in range(n)]
    write_npy(os.path.join(a.dir, "x.npy"), gauss(a.bt * a.hidden, 1.0), (a.bt, a.hidden), "<f8")
    write_npy(os.path.join(a.dir, "w.npy"), gauss(a.vocab * a.hidden, 0.5), (a.vocab, a.hidden), "<f8")
    write_npy(os.path.join(a.dir, "b.npy"), gauss(a.vocab, 0.1), (a.vocab,), "<f8")
    write_npy(os.path.join(a.dir, "cw.npy"), [0.5 + rng.random() for _ in range(a.vocab)],
              (a.vocab,), "<f8")
    y = [rng.randrange(a.vocab) for _ in range(a.bt)]
    for i in (1, a.bt - 1):
        y[i] = -100
    write_npy(os.path.join(a.dir, "y.npy"), y, (a.bt,), "<i8")
    si = [rng.randrange(a.vocab) for _ in range(a.bt * 3)]
    si[2] = si[0]  # row 0 names one class twice
    sp = []
    for _ in range(a.bt):
        r = [rng.random() + 0.05 for _ in range(3)]
        sp += [0.9 * e / sum(r) for e in r]
    write_npy(os.path.join(a.dir, "si.npy"), si, (a.bt, 3), "<i8")
    write_npy(os.path.join(a.dir, "sp.npy"), sp, (a.bt, 3), "<f8")


def compare(a):
    load = lambda name: read_npy(os.path.join(a.dir, name))
    x, xs = load("x.npy")
    w, ws = load("w.npy")
    y, _ = load("y.npy")
    b = load("b.npy")[0] if a.bias else None
    cw = load("cw.npy")[0] if a.class_weights else None
    backend = a.backend
    if backend is None:
        try:
            import torch  # noqa: F401
            backend = "torch"
        except ImportError:
            backend = "python"
    f = reference_torch if backend == "torch" else reference_python
    y = shifted(y, a.shift_sequence_length, a.ignore_index)
    soft = None
    if a.soft_targets:
        si, ss = load("si.npy")
        sp, _ = load("sp.npy")
        soft = dense_soft(rows(si, ss), rows(sp, ss), len(y), ws[0])
    loss, dx, dw, db, lse, logp, entropy, argmax, accuracy = f(
        rows(x, xs), rows(w, ws), y, b, cw, a.reduction, a.label_smoothing, a.lse_square_scale,
        a.softcap, a.ignore_index, a.temperature, a.entropy_bonus, soft, a.soft_target_weight)
    print(f"reference: {backend}, float64")
    flat = lambda m: [e for r in m for e in r]
    checks = [("loss", loss, "loss.npy"), ("grad_input", flat(dx), "dx.npy"),
              ("grad_weight", flat(dw), "dw.npy")]
    if a.bias:
        checks.append(("grad_bias", db, "db.npy"))
    for name, want, file in (("lse", lse, "lse.npy"), ("target_logprob", logp, "logp.npy"),
                             ("entropy", entropy, "entropy.npy"), ("argmax", argmax, "argmax.npy"),
                             ("accuracy", accuracy, "accuracy.npy")):
        if os.path.exists(os.path.join(a.dir, file)):
            checks.append((name, want, file))
    failed = False
    for name, want, file in checks:
        got, _ = load(file)
        if len(got) != len(want):
            sys.exit(f"{file} has {len(got)} values, the reference {len(want)}")
        worst = max(abs(p - q) for p, q in zip(got, want)) if want else 0.0
        scale = max(abs(q) for q in want) if want else 0.0
        print(f"{name:12s} max |tessel - reference| = {worst:.3e}   (max |reference| = {scale:.3e})")
        failed |= a.tolerance is not None and not worst <= a.tolerance * max(1.0, scale)
        failed |= name == "argmax" and worst != 0
    if len(loss) == 1:
        print(f"loss: tessel {load('loss.npy')[0][0]:.9f}   reference {loss[0]:.9f}")
    if failed:
        sys.exit(f"a difference exceeds the tolerance {a.tolerance}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make-inputs")
    m.add_argument("dir")
    m.add_argument("--bt", type=int, default=6)
    m.add_argument("--hidden", type=int, default=4)
    m.add_argument("--vocab", type=int, default=10)
    m.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("compare")
    c.add_argument("dir")
    c.add_argument("--reduction", default="mean", choices=["mean", "sum", "none"])
    c.add_argument("--ignore-index", type=int, default=-100)
    c.add_argument("--label-smoothing", type=float, default=0.0)
    c.add_argument("--lse-square-scale", type=float, default=0.0)
    c.add_argument("--softcap", type=float, default=0.0)
    c.add_argument("--temperature", type=float, default=1.0)
    c.add_argument("--shift-sequence-length", type=int, default=0)
    c.add_argument("--entropy-bonus", type=float, default=0.0)
    c.add_argument("--soft-targets", action="store_true")
    c.add_argument("--soft-target-weight", type=float, default=1.0)
    c.add_argument("--bias", action="store_true")
    c.add_argument("--class-weights", action="store_true")
    c.add_argument("--backend", choices=["torch", "python"])
    c.add_argument("--tolerance", type=float)
    a = p.parse_args()
    make_inputs(a) if a.command == "make-inputs" else compare(a)


if __name__ == "__main__":
    main()
