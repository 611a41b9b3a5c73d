"""A tiny PyTorch language model whose LM head's loss is tessel's fused linear cross-entropy and
whose optimizer is tessel's Shampoo.

Run after `pip install .` (docs/python.md): python examples/python/tiny_lm.py
"""

import torch

import tessel
import tessel.torch

torch.manual_seed(0)
vocab, hidden, rows = 64, 32, 256
# Data with structure to learn: each token is followed by (3 * token + 1) % vocab.
tokens = torch.randint(0, vocab, (rows,))
targets = (3 * tokens + 1) % vocab
targets[::16] = -100  # padding rows, ignored as in F.cross_entropy

body = torch.nn.Sequential(torch.nn.Embedding(vocab, hidden), torch.nn.Linear(hidden, hidden),
                           torch.nn.GELU())
head = torch.nn.Linear(hidden, vocab)  # its weight (vocab, hidden) is what tessel reads
# Shampoo with Adam grafting, inverse roots every 5 steps; its step is tessel's C++ step, which
# updates the parameters in place.
optimizer = tessel.torch.Shampoo([*body.parameters(), *head.parameters()], lr=1e-2,
                                 betas=(0.9, 0.999), epsilon=1e-8, grafting="adam",
                                 grafting_epsilon=1e-8, precondition_frequency=5)

plan = tessel.plan.flce(rows, hidden, vocab)
print(f"plan: {plan.num_chunks} chunks of {plan.chunk_size} rows, {plan.scratch_bytes} bytes of scratch")
blocks = tessel.plan.shampoo([p.shape for p in optimizer.param_groups[0]["params"]])
print("Shampoo blocks:", ", ".join(f"{p.shape} -> {[b.shape for b in p.blocks]}" for p in blocks.params))
for step in range(1, 31):
    optimizer.zero_grad()
    x = body(tokens)  # (rows, hidden)
    # The loss and, in the same pass, d loss / d x, d weight, d bias: no (rows, vocab) logits kept.
    loss = tessel.linear_cross_entropy(x, head.weight, targets, head.bias, label_smoothing=0.05)
    loss.backward()
    optimizer.step()
    if step == 1 or step % 10 == 0:
        print(f"step {step:2d}  loss {loss.item():.4f}")

# The same loss from PyTorch's materialized logits, as a check.
with torch.no_grad():
    x = body(tokens)
    ours = tessel.linear_cross_entropy(x, head.weight, targets, head.bias, label_smoothing=0.05)
    theirs = torch.nn.functional.cross_entropy(head(x), targets, label_smoothing=0.05)
print(f"final loss: tessel {ours.item():.6f}, torch.nn.functional.cross_entropy {theirs.item():.6f}")
