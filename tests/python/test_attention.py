"""tessel's causal attention (nn/attention*.hpp) against PyTorch: forward (output and each row's
log-sum-exp) and backward (dq, dk, dv) of F.scaled_dot_product_attention(is_causal=True) in float64
to 1e-10 and float32 to 1e-5, through the C++ driver tessel_attention_reference, which reads and
writes safetensors files (tessel's io layer). Odd sequence lengths, T = 1, tiles shorter than T
(a small tile budget), several heads and batches.

The driver is looked for in $TESSEL_BUILD_DIR/bin, build/default/bin and build/host/bin; without it
the tests skip, saying how to build it
(`cmake --build --preset host --target tessel_attention_reference`)."""

import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import built_program

DTYPES = {np.float64: "F64", np.float32: "F32"}


def driver():
    """The tessel_attention_reference program, or None."""
    return built_program("bin/tessel_attention_reference")


pytestmark = pytest.mark.skipif(
    driver() is None,
    reason="tessel_attention_reference is not built: run `cmake --build --preset host --target "
           "tessel_attention_reference` (or --preset default), or set TESSEL_BUILD_DIR")


def write_safetensors(path, tensors):
    """A safetensors file of C-order NumPy arrays (the format: 8-byte header length, JSON header,
    data)."""
    header, offset, blobs = {}, 0, []
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": DTYPES[array.dtype.type], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    raw = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    data = raw[8 + length:]
    types = {v: k for k, v in DTYPES.items()}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=types[info["dtype"]]).reshape(info["shape"])
    return out, header.get("__metadata__", {})


def tessel_attention(tmp_path, q, k, v, grad_out, budget=None):
    write_safetensors(tmp_path / "in.safetensors", dict(q=q, k=k, v=v, grad_out=grad_out))
    args = [str(driver()), str(tmp_path / "in.safetensors"), str(tmp_path / "out.safetensors")]
    if budget is not None:
        args.append(str(budget))
    subprocess.run(args, check=True)
    return read_safetensors(tmp_path / "out.safetensors")


def torch_attention(q, k, v, grad_out):
    """PyTorch's causal SDPA on (B, heads, T, head_dim) views of (B, T, heads, head_dim) tensors,
    each row's log-sum-exp of the scaled, masked scores, and the gradients."""
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=True).transpose(1, 2)
    out.backward(torch.tensor(grad_out))
    t = q.shape[1]
    scores = q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2) / q.shape[-1] ** 0.5
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    lse = torch.logsumexp(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return {"out": out.detach().numpy(), "lse": lse.detach().numpy(), "grad_q": q.grad.numpy(),
            "grad_k": k.grad.numpy(), "grad_v": v.grad.numpy()}


def problem(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [(scale * rng.standard_normal(shape)).astype(dtype) for scale in (1.5, 1.5, 1.0, 1.0)]


# (B, T, heads, head_dim), tile budget (None: the plan's default).
CASES = {
    "gpt2_head_t64": ((2, 64, 3, 64), None),
    "odd_t": ((2, 37, 3, 16), None),
    "t1": ((3, 1, 2, 8), None),
    "tiles_shorter_than_t": ((2, 53, 2, 8), 8192),
    "head_dim_not_a_multiple_of_8": ((1, 29, 4, 12), 16384),
}


@pytest.mark.parametrize("case", CASES)
def test_float64_matches_pytorch(tmp_path, case):
    shape, budget = CASES[case]
    q, k, v, go = problem(shape, np.float64)
    got, metadata = tessel_attention(tmp_path, q, k, v, go, budget)
    if budget is not None:
        assert int(metadata["q_tile"]) < shape[1] or int(metadata["kv_tile"]) < shape[1]
    want = torch_attention(q, k, v, go)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-10, atol=1e-10, err_msg=name)


def test_float32_matches_pytorch_to_its_rounding(tmp_path):
    q, k, v, go = problem((2, 67, 3, 64), np.float32, seed=3)
    got, _ = tessel_attention(tmp_path, q, k, v, go)
    want = torch_attention(q, k, v, go)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5, err_msg=name)
