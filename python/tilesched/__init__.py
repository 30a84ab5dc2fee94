"""tilesched: a persistent flash-attention kernel for Hopper GPUs, with FlashAttention's Python API.

    import tilesched
    out = tilesched.flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k,
                                           max_seqlen_q, max_seqlen_k, causal=True)

The attention functions need torch (imported when first used); plans, the simulator's traces and
the pictures need neither torch nor a GPU. docs/python.md in the repository is the reference.
"""

from . import _C
from .planning import (SchedulePlan, Trace, plan, plan_kvcache, read_trace, simulate, viz)

__version__ = "0.1.0"

__all__ = ["flash_attn_varlen_func", "flash_attn_with_kvcache", "plan", "plan_kvcache",
           "SchedulePlan", "Trace", "simulate", "viz", "read_trace", "gpu_built", "__version__"]

gpu_built = _C.gpu_built

_TORCH_NAMES = ("flash_attn_varlen_func", "flash_attn_with_kvcache")


def __getattr__(name):
    # The torch layer is imported on first use, so that `import tilesched` works without torch.
    if name in _TORCH_NAMES:
        from . import attention
        return getattr(attention, name)
    raise AttributeError(f"module 'tilesched' has no attribute {name!r}")
