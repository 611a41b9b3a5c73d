"""tessel's plans as plain Python objects, computed by the same C++ code as the library's."""

import math
from dataclasses import dataclass
from typing import Tuple

from . import _tessel

__all__ = ["FlcePlan", "flce", "ShampooBlock", "ShampooParam", "ShampooPlan", "shampoo"]


@dataclass(frozen=True)
class FlcePlan:
    """How a host FLCE call is chunked: ``num_chunks`` chunks of ``chunk_size`` rows, and the
    bytes of scratch the chunk loop allocates for the storage ``dtype``."""

    bt: int
    hidden: int
    vocab: int
    chunk_size: int
    num_chunks: int
    scratch_bytes: int


def flce(bt, hidden, vocab, dtype="float32"):
    """The plan of a host call (``flce::make_host_plan``) over ``bt`` rows, ``hidden`` features
    and ``vocab`` classes; ``dtype`` is the storage type ("float32", "float64", "bf16", ...)."""
    return FlcePlan(**_tessel.flce_host_plan(bt, hidden, vocab, dtype))


def _dim(value):
    """math.inf (Distributed Shampoo's "no limit") crosses as None; other floats are refused."""
    if isinstance(value, float):
        if value != math.inf:
            raise ValueError(f"a dimension limit is an integer or math.inf, got {value!r}.")
        return None
    return value


@dataclass(frozen=True)
class ShampooBlock:
    """Block ``index`` of a parameter: the box ``offset .. offset + shape`` of its merged shape,
    preconditioned by one ``(d, d)`` factor per mode (``factor_shapes``); blocks of equal shape
    share a batch ``group``; ``rank`` owns it among ``group_size`` ranks; ``bytes`` is its buffer
    (numel times the plan's dtype size)."""

    index: int
    offset: Tuple[int, ...]
    shape: Tuple[int, ...]
    group: int
    rank: int
    bytes: int

    @property
    def factor_shapes(self):
        return tuple((d, d) for d in self.shape)


@dataclass(frozen=True)
class ShampooParam:
    """A parameter's shape, its shape after merge_small_dims, and its blocks in row-major order
    (block ``i`` is Distributed Shampoo's state key ``block_i``)."""

    shape: Tuple[int, ...]
    merged_shape: Tuple[int, ...]
    blocks: Tuple[ShampooBlock, ...]


@dataclass(frozen=True)
class ShampooPlan:
    """The blocking of a list of parameters (``shampoo::make_plan``)."""

    params: Tuple[ShampooParam, ...]
    num_groups: int
    rank_bytes: Tuple[int, ...]

    @property
    def num_blocks(self):
        return sum(len(p.blocks) for p in self.params)


def shampoo(shapes, max_preconditioner_dim=1024, target_parameter_dimensionality=1, group_size=1,
            dtype="float32"):
    """How Shampoo blocks parameters of these ``shapes`` (``shampoo::make_plan``): each is merged
    by merge_small_dims(shape, max_preconditioner_dim, target_parameter_dimensionality) and cut
    into blocks of at most ``max_preconditioner_dim`` per mode (math.inf: no limit); blocks are
    given to ``group_size`` ranks by their bytes in ``dtype``. Names and defaults are Distributed
    Shampoo's."""
    plan = _tessel.shampoo_plan(
        [tuple(s) for s in shapes], _dim(max_preconditioner_dim),
        _dim(target_parameter_dimensionality), group_size, dtype)
    return ShampooPlan(
        params=tuple(ShampooParam(
            shape=tuple(p["shape"]), merged_shape=tuple(p["merged_shape"]),
            blocks=tuple(ShampooBlock(**dict(b, offset=tuple(b["offset"]), shape=tuple(b["shape"])))
                         for b in p["blocks"])) for p in plan["params"]),
        num_groups=plan["num_groups"], rank_bytes=tuple(plan["rank_bytes"]))
