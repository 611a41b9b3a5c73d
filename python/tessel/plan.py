"""tessel's plans as plain Python objects, computed by the same C++ code as the library's."""

from dataclasses import dataclass

from . import _tessel

__all__ = ["FlcePlan", "flce"]


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
