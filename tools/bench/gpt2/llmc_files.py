#!/usr/bin/env python3
"""Writes llm.c's input files from our own initialization and tokens (nothing can be downloaded).

llm.c (karpathy/llm.c) reads three kinds of files, whose formats are read off its sources
(train_gpt2.c `gpt2_build_from_checkpoint`, llmc/dataloader.h, llmc/tokenizer.h):

  checkpoint  int32[256] header: 20240326 (magic), 3 (version), max_seq_len, vocab_size,
              num_layers, num_heads, channels, padded_vocab_size, zeros; then float32
              parameters, 16 tensors back to back in the order of `LLMC_TENSORS` below.
  tokens      int32[256] header: 20240520 (magic), 1 (version), token count, zeros; then the
              tokens as uint16.
  tokenizer   uint32[256] header: 20240328 (magic), 2 (version), vocab_size, eot token id, zeros;
              then per token one length byte and that many bytes. Only used to print samples.

The checkpoint holds gpt2_reference.py's model (the same seeded initialization), so llm.c and
PyTorch start from identical weights; compare.py checks that their first losses agree. The
tokenizer is a placeholder ("<id>" for every token: GPT-2's merges cannot be downloaded); without
any tokenizer file train_gpt2.c prints a warning and then, at its first sample (step 20), fills
the prompt with an uninitialized `eot_token`, so one is written.

    llmc_files.py --dir DIR [--tiny] [--seed 1337] [--tokens 65536]

writes, in the places train_gpt2.c's `main` opens when run from DIR:
  DIR/gpt2_124M.bin                                        the checkpoint (whatever the size)
  DIR/gpt2_tokenizer.bin                                   the placeholder tokenizer
  DIR/dev/data/tinyshakespeare/tiny_shakespeare_train.bin  random tokens (seed)
  DIR/dev/data/tinyshakespeare/tiny_shakespeare_val.bin    random tokens (seed + 1)
  DIR/init.safetensors                                     the same weights under GPT-2's names
"""
import argparse
import os
import struct

import numpy as np
import torch

from gpt2_reference import GPTConfig, make_model

CHECKPOINT_MAGIC, CHECKPOINT_VERSION = 20240326, 3
TOKENS_MAGIC, TOKENS_VERSION = 20240520, 1
TOKENIZER_MAGIC, TOKENIZER_VERSION = 20240328, 2
HEADER_INTS = 256

# llm.c's parameter tensors in file order: (llm.c's name, our name ("{}" = layer index),
# stacked over layers, transposed). Per-layer tensors are stacked on a new leading L axis. The
# projection weights are transposed because llm.c stores them (out, in), as nn.Linear does
# (`matmul_forward`: out[bt, o] = bias[o] + sum_i inp[bt, i] * weight[o*C + i]), while GPT-2's
# checkpoint and our model store (in, out).
LLMC_TENSORS = [
    ("wte", "wte.weight", False, False),  # (Vp, C): rows past vocab_size are padding, zeros
    ("wpe", "wpe.weight", False, False),  # (maxT, C)
    ("ln1w", "h.{}.ln_1.weight", True, False),  # (L, C)
    ("ln1b", "h.{}.ln_1.bias", True, False),
    ("qkvw", "h.{}.attn.c_attn.weight", True, True),  # (L, 3C, C)
    ("qkvb", "h.{}.attn.c_attn.bias", True, False),  # (L, 3C)
    ("attprojw", "h.{}.attn.c_proj.weight", True, True),  # (L, C, C)
    ("attprojb", "h.{}.attn.c_proj.bias", True, False),
    ("ln2w", "h.{}.ln_2.weight", True, False),
    ("ln2b", "h.{}.ln_2.bias", True, False),
    ("fcw", "h.{}.mlp.c_fc.weight", True, True),  # (L, 4C, C)
    ("fcb", "h.{}.mlp.c_fc.bias", True, False),  # (L, 4C)
    ("fcprojw", "h.{}.mlp.c_proj.weight", True, True),  # (L, C, 4C)
    ("fcprojb", "h.{}.mlp.c_proj.bias", True, False),
    ("lnfw", "ln_f.weight", False, False),  # (C)
    ("lnfb", "ln_f.bias", False, False),
]


def padded_vocab(vocab_size):
    """llm.c pads the vocabulary to a multiple of 128 (50257 -> 50304) for its matmul loops."""
    return (vocab_size + 127) // 128 * 128


def write_checkpoint(path, config, params, padded_vocab_size=None):
    """@pre params: GPT-2 names -> tensors (any float dtype; written as float32)."""
    vp = padded_vocab_size or padded_vocab(config.vocab_size)
    header = np.zeros(HEADER_INTS, dtype=np.int32)
    header[:8] = [CHECKPOINT_MAGIC, CHECKPOINT_VERSION, config.block_size, config.vocab_size,
                  config.n_layer, config.n_head, config.n_embd, vp]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for _, name, per_layer, transpose in LLMC_TENSORS:
            names = [name.format(i) for i in range(config.n_layer)] if per_layer else [name]
            parts = [params[n].detach().to(torch.float32) for n in names]
            parts = [p.t() for p in parts] if transpose else parts
            tensor = torch.stack(parts) if per_layer else parts[0]
            if name == "wte.weight":
                tensor = torch.cat([tensor, tensor.new_zeros(vp - config.vocab_size, config.n_embd)])
            f.write(tensor.contiguous().numpy().tobytes())


def read_checkpoint(path):
    """The inverse of write_checkpoint: (GPTConfig, GPT-2 names -> float32 tensors)."""
    with open(path, "rb") as f:
        data = f.read()
    header = np.frombuffer(data[:4 * HEADER_INTS], dtype=np.int32)
    if header[0] != CHECKPOINT_MAGIC or header[1] != CHECKPOINT_VERSION:
        raise ValueError(f"{path}: magic {header[0]} version {header[1]}, not an llm.c checkpoint")
    max_t, v, n_layer, n_head, c, vp = (int(x) for x in header[2:8])
    config = GPTConfig(n_layer=n_layer, n_head=n_head, n_embd=c, vocab_size=v, block_size=max_t)
    values = torch.from_numpy(np.frombuffer(data, dtype=np.float32, offset=4 * HEADER_INTS).copy())
    shapes = {"wte": (vp, c), "wpe": (max_t, c), "lnfw": (c,), "lnfb": (c,)}
    per_layer = {"ln1w": (c,), "ln1b": (c,), "qkvw": (3 * c, c), "qkvb": (3 * c,),
                 "attprojw": (c, c), "attprojb": (c,), "ln2w": (c,), "ln2b": (c,),
                 "fcw": (4 * c, c), "fcb": (4 * c,), "fcprojw": (c, 4 * c), "fcprojb": (c,)}
    params, offset = {}, 0
    for llmc_name, name, stacked, transpose in LLMC_TENSORS:
        shape = (n_layer, *per_layer[llmc_name]) if stacked else shapes[llmc_name]
        count = int(np.prod(shape))
        tensor = values[offset:offset + count].view(shape)
        offset += count
        if name == "wte.weight":
            tensor = tensor[:v]
        for i, part in enumerate(tensor if stacked else [tensor]):
            params[name.format(i)] = (part.t() if transpose else part).contiguous()
    if offset != values.numel():
        raise ValueError(f"{path}: {values.numel()} floats, the header's shapes need {offset}")
    return config, params


def write_tokens(path, tokens):
    """@pre tokens: integers in [0, 65536), written as one llm.c data shard."""
    tokens = np.asarray(tokens)
    if tokens.min() < 0 or tokens.max() >= 2**16:
        raise ValueError("llm.c's shards hold uint16 tokens")
    header = np.zeros(HEADER_INTS, dtype=np.int32)
    header[:3] = [TOKENS_MAGIC, TOKENS_VERSION, len(tokens)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.astype(np.uint16).tobytes())


def read_tokens(path):
    with open(path, "rb") as f:
        header = np.frombuffer(f.read(4 * HEADER_INTS), dtype=np.int32)
        if header[0] != TOKENS_MAGIC or header[1] != TOKENS_VERSION:
            raise ValueError(f"{path}: magic {header[0]} version {header[1]}, not an llm.c shard")
        tokens = np.frombuffer(f.read(), dtype=np.uint16)
    if len(tokens) != header[2]:
        raise ValueError(f"{path}: header says {header[2]} tokens, file holds {len(tokens)}")
    return tokens.astype(np.int64)


def write_tokenizer(path, vocab_size, eot_token):
    header = np.zeros(HEADER_INTS, dtype=np.uint32)
    header[:4] = [TOKENIZER_MAGIC, TOKENIZER_VERSION, vocab_size, eot_token]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for i in range(vocab_size):
            text = f"<{i}>".encode()
            f.write(struct.pack("B", len(text)) + text)


def random_tokens(count, vocab_size, seed):
    """Uniform token ids: the loss starts near ln(vocab_size), like a fresh model on text."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (count,), generator=gen).numpy()


def data_paths(directory):
    base = os.path.join(directory, "dev", "data", "tinyshakespeare")
    return (os.path.join(base, "tiny_shakespeare_train.bin"),
            os.path.join(base, "tiny_shakespeare_val.bin"))


def write_all(directory, config, seed=1337, n_tokens=65536):
    """Writes every file train_gpt2.c's main opens from `directory`, plus init.safetensors."""
    os.makedirs(os.path.dirname(data_paths(directory)[0]), exist_ok=True)
    model = make_model(config, seed)
    params = dict(model.state_dict())
    model.save(os.path.join(directory, "init.safetensors"))
    write_checkpoint(os.path.join(directory, "gpt2_124M.bin"), config, params)
    write_tokenizer(os.path.join(directory, "gpt2_tokenizer.bin"), config.vocab_size,
                    eot_token=config.vocab_size - 1)  # GPT-2's <|endoftext|> is its last id
    train, val = data_paths(directory)
    write_tokens(train, random_tokens(n_tokens, config.vocab_size, seed))
    write_tokens(val, random_tokens(n_tokens, config.vocab_size, seed + 1))
    return params


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--tiny", action="store_true", help="GPTConfig.tiny() instead of small")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--tokens", type=int, default=65536, help="tokens per data shard")
    args = parser.parse_args()
    config = GPTConfig.tiny() if args.tiny else GPTConfig.small()
    params = write_all(args.dir, config, args.seed, args.tokens)
    # Read the checkpoint back: the layout table is applied both ways, so a mistake in it shows
    # here as a mismatch only if it is asymmetric; compare.py's loss check catches the rest.
    _, back = read_checkpoint(os.path.join(args.dir, "gpt2_124M.bin"))
    assert all(torch.equal(back[n], params[n]) for n in params) and back.keys() == params.keys()
    print(f"wrote {args.dir}: {config}, padded vocab {padded_vocab(config.vocab_size)}")


if __name__ == "__main__":
    main()
