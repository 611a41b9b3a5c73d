#!/usr/bin/env python3
"""GPT-2 in PyTorch, written for tessel as the reference its model is checked and timed against.

Written from the architecture (Radford et al. 2019, "Language Models are Unsupervised Multitask
Learners", and the GPT-1 paper it extends), not from another implementation:

  tokens (B, T) -> wte[tokens] + wpe[0..T)                          (B, T, C)
  n_layer pre-LN blocks:  x += attn(ln_1(x));  x += mlp(ln_2(x))
      attn: one (C, 3C) projection to q, k, v (bias), n_head causal heads of size C / n_head,
            softmax(q k^T / sqrt(hs)) v, then a (C, C) projection (bias)
      mlp:  (C, 4C) projection, GELU (tanh form), (4C, C) projection, all with bias
  ln_f, then logits = x @ wte^T (the LM head is tied to the token embedding)  (B, T, vocab)
  loss: mean cross-entropy of the next token over all B * T positions.

Parameter names and shapes are those of the GPT-2 checkpoint (OpenAI's release as Hugging Face
stores it in `model.safetensors`): `wte.weight` (vocab, C), `wpe.weight` (block_size, C),
`h.{i}.ln_1.weight`, `h.{i}.attn.c_attn.weight` (C, 3C), ..., `ln_f.bias`. The projection weights
are stored (in, out) as in that checkpoint (y = x @ W + b), the transpose of `nn.Linear`'s
(out, in), so weights exchange by name and shape with tessel's model and with a real GPT-2 file
without transposes. The file format is safetensors, written and read here (`save_safetensors`,
`load_safetensors`) because the project's environment has no `safetensors` package.

Deterministic and float64-capable, because the correctness test compares the loss and every
gradient against it: every operation is a plain PyTorch CPU op with a float64 kernel, attention
is written out (no fused kernel whose reduction order depends on the build), and `make_model`
draws the initialization in float32 from a seeded generator before casting, so the float32 and
float64 models start from the same numbers. `deterministic()` also makes PyTorch refuse any
nondeterministic kernel.

Usage as a library (what compare.py and the later correctness test do):

    from gpt2_reference import GPTConfig, make_model, load_model
    model = make_model(GPTConfig.small(), seed=1337, dtype=torch.float64)
    logits, loss = model(idx, targets)        # idx, targets: (B, T) int64
    loss.backward()                            # gradients on model.named_parameters()
    loss, grads = loss_and_gradients(model, idx, targets)   # the same, by GPT-2 name
    model.save("init.safetensors")             # GPT-2 names; load_model(path) reads it back

As a script it writes an initialization: `gpt2_reference.py --out init.safetensors [--tiny]`.
"""
import argparse
import json
import math
import struct
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class GPTConfig:
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    vocab_size: int = 50257
    block_size: int = 1024

    @staticmethod
    def small():
        """GPT-2 small, 124M parameters."""
        return GPTConfig()

    @staticmethod
    def tiny():
        """A few-second configuration for checks: GPT-2's vocabulary, 2 layers of width 64."""
        return GPTConfig(n_layer=2, n_head=4, n_embd=64, vocab_size=50257, block_size=256)

    def __post_init__(self):
        if self.n_embd % self.n_head != 0:
            raise ValueError(f"n_embd {self.n_embd} is not a multiple of n_head {self.n_head}")


class LinearInOut(nn.Module):
    """y = x @ weight + bias, weight stored (in, out): the GPT-2 checkpoint's layout."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.empty(n_out))

    def forward(self, x):
        # addmm on the flattened rows: one GEMM with the bias, the same kernel for f32 and f64.
        rows = x.reshape(-1, x.shape[-1])
        return torch.addmm(self.bias, rows, self.weight).view(*x.shape[:-1], self.weight.shape[1])


class CausalSelfAttention(nn.Module):
    def __init__(self, config, attention="math"):
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = LinearInOut(config.n_embd, 3 * config.n_embd)
        self.c_proj = LinearInOut(config.n_embd, config.n_embd)
        # "math": scores written out (the reference); "sdpa": PyTorch's fused CPU kernel, offered
        # to time PyTorch at its best, never used for the correctness comparison.
        self.attention = attention

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        # (B, T, 3C) -> three (B, n_head, T, hs): q, k, v are consecutive C-wide column blocks,
        # and within each block head h owns columns [h*hs, (h+1)*hs).
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2) for t in (q, k, v))
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, n_head, T, T)
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
            y = torch.softmax(scores, dim=-1) @ v  # (B, n_head, T, hs)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = LinearInOut(config.n_embd, 4 * config.n_embd)
        self.c_proj = LinearInOut(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, config, attention="math"):
        super().__init__()
        # GPT-2's LayerNorm epsilon is 1e-5 (PyTorch's default, stated for clarity).
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=1e-5)
        self.attn = CausalSelfAttention(config, attention)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=1e-5)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """The model; its state_dict keys are GPT-2's parameter names (no buffers, no lm_head)."""

    def __init__(self, config, attention="math"):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.h = nn.ModuleList(Block(config, attention) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, eps=1e-5)

    def forward(self, idx, targets=None):
        """@pre idx, targets: (B, T) int64 with T <= block_size. Returns (logits, loss or None)."""
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))  # (B, T, C)
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # (B, T, vocab), tied head
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))
        return logits, loss

    def save(self, path):
        """Writes the parameters under GPT-2's names, with the configuration as metadata."""
        metadata = {k: str(v) for k, v in asdict(self.config).items()}
        save_safetensors(path, dict(self.state_dict()), metadata)


def residual_projection(name):
    """The projections that write into the residual stream, whose init GPT-2 scales down."""
    return name.endswith("attn.c_proj.weight") or name.endswith("mlp.c_proj.weight")


@torch.no_grad()
def init_gpt2_(model, seed):
    """GPT-2's initialization, reproducible: weights and embeddings N(0, 0.02), the residual
    projections N(0, 0.02 / sqrt(2 n_layer)) (so the residual stream's variance does not grow
    with depth), biases 0, LayerNorm gains 1. Drawn in float32, in state_dict order, from one
    seeded generator, then cast: every dtype gets the same values."""
    gen = torch.Generator().manual_seed(seed)
    std_residual = 0.02 / math.sqrt(2 * model.config.n_layer)
    for name, p in model.named_parameters():
        if name.endswith(".bias"):
            values = torch.zeros(p.shape)
        elif ".ln_" in name or name.startswith("ln_f"):
            values = torch.ones(p.shape)  # LayerNorm weights (their biases are handled above)
        else:
            std = std_residual if residual_projection(name) else 0.02
            values = torch.empty(p.shape).normal_(0.0, std, generator=gen)
        p.copy_(values.to(p.dtype))


def make_model(config, seed=1337, dtype=torch.float32, attention="math"):
    model = GPT2(config, attention).to(dtype)
    init_gpt2_(model, seed)
    return model


def load_model(path, dtype=torch.float32, attention="math", n_head=None):
    """A model from a safetensors file of GPT-2 names. The configuration comes from the file's
    metadata when it has ours; otherwise (a GPT-2 checkpoint) from the shapes, with n_head given
    (12 for GPT-2 small) since no shape holds it."""
    tensors, metadata = load_safetensors(path, with_metadata=True)
    if "n_layer" in metadata:
        config = GPTConfig(**{k: int(metadata[k]) for k in asdict(GPTConfig()).keys()})
    else:
        vocab, n_embd = tensors["wte.weight"].shape
        n_layer = 1 + max(int(k.split(".")[1]) for k in tensors if k.startswith("h."))
        config = GPTConfig(n_layer=n_layer, n_head=n_head or 12, n_embd=n_embd,
                           vocab_size=vocab, block_size=tensors["wpe.weight"].shape[0])
    model = GPT2(config, attention).to(dtype)
    # A GPT-2 checkpoint also holds the causal-mask buffers (h.{i}.attn.bias, h.{i}.attn.masked_bias),
    # which this model computes instead: skip names it has no parameter for, require all it has.
    own = dict(model.named_parameters())
    missing = sorted(set(own) - set(tensors))
    if missing:
        raise KeyError(f"{path} lacks {len(missing)} parameters, first {missing[:3]}")
    with torch.no_grad():
        for name, p in own.items():
            if tensors[name].shape != p.shape:
                raise ValueError(f"{name}: file has shape {tuple(tensors[name].shape)}, "
                                 f"the model {tuple(p.shape)}")
            p.copy_(tensors[name].to(dtype))
    return model


def loss_and_gradients(model, idx, targets):
    """One forward and backward from zero gradients: (loss, {GPT-2 name: gradient})."""
    model.zero_grad(set_to_none=True)
    _, loss = model(idx, targets)
    loss.backward()
    return loss.item(), {n: p.grad for n, p in model.named_parameters()}


def deterministic():
    """Make PyTorch raise on any kernel without a deterministic implementation (none is used on
    the CPU path here; this guards later changes)."""
    torch.use_deterministic_algorithms(True)


# ---------------------------------------------------------------------------------------------
# safetensors: an 8-byte little-endian header length N, N bytes of JSON
# {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the
# raw little-endian tensor bytes (offsets relative to the end of the header). The header is padded
# with spaces to a multiple of 8 bytes, as the reference library writes it, so data stays aligned.

_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "U8": torch.uint8,
}
_NAMES = {v: k for k, v in _DTYPES.items()}


def save_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name in sorted(tensors):  # sorted, as the library does: the same file for the same dict
        t = tensors[name].detach().cpu().contiguous()
        # Raw bytes through an int view: numpy has no bfloat16, and this works for every dtype.
        raw = t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def load_safetensors(path, with_metadata=False):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + n:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        count = math.prod(info["shape"])
        if end - begin != count * dtype.itemsize or end > len(body):
            raise ValueError(f"{path}: {name} has {end - begin} bytes at [{begin}, {end}), "
                             f"shape {info['shape']} {info['dtype']} needs {count * dtype.itemsize}")
        raw = np.frombuffer(body[begin:end], dtype=np.uint8).copy()  # writable, owned
        tensors[name] = torch.from_numpy(raw).view(dtype).reshape(info["shape"])
    return (tensors, metadata) if with_metadata else tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="safetensors file to write")
    parser.add_argument("--tiny", action="store_true", help="GPTConfig.tiny() instead of small")
    parser.add_argument("--seed", type=int, default=1337)
    args = parser.parse_args()
    config = GPTConfig.tiny() if args.tiny else GPTConfig.small()
    model = make_model(config, args.seed)
    model.save(args.out)
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {args.out}: {n} parameters, {config}")


if __name__ == "__main__":
    main()
