"""FlashAttention's functions on tilesched's kernel (torch tensors, CUDA, bf16).

Names, shapes and meanings follow FlashAttention (FA2/FA3), so that switching is an import change:
``flash_attn_varlen_func`` for packed ragged batches and ``flash_attn_with_kvcache`` for decode
and chunked prefill over a cache (contiguous or paged, vLLM's layout). What tilesched adds:
``plan=`` (a SchedulePlan made once per step), ``scheduler=``, ``num_ctas=``, ``deterministic=``
and ``trace=True`` (the launch's per-CTA trace).

Each call is one op, ``torch.ops.tilesched.varlen_fwd``, with a fake implementation, so
``torch.compile`` traces through it; eager calls launch directly. A call made without ``plan=``
copies the lengths to the host (a synchronisation) and takes its plan from a cache keyed by them;
with ``plan=`` it does no host work beyond the checks and can be captured in a CUDA graph.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import torch

from .planning import (PlanCache, SchedulePlan, _check_page_table, _int_list, _registry,
                       make_plan, plan_kvcache, varlen_lengths)

try:  # torch >= 2.9 also has torch.to_dlpack; this one takes no stream and syncs nothing
    from torch.utils.dlpack import to_dlpack as _to_dlpack
except ImportError:  # pragma: no cover
    _to_dlpack = torch.to_dlpack

# torch >= 2.10 carries the DLPack C exchange API on its tensor type: the compiled module then reads
# each tensor's metadata straight from it and asks torch for the current stream, with no capsule
# and no Stream object. Older torch hands over capsules and the stream's handle.
_EXCHANGE = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)

_plans = PlanCache()


def _tensor(name: str, t: Any, ndim: int, what: str) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, not {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions {what}, got shape {tuple(t.shape)}")


def _on_cuda(name: str, t) -> None:
    if not t.is_cuda:
        raise ValueError(f"{name} must be on a CUDA device, not {t.device}")


def _stream_of(t) -> int:
    # Plans taken from the cache share their counter: calls on two streams get two plans.
    return torch.cuda.current_stream(t.device).cuda_stream


def _fa2_aliases(page_table, block_table, return_lse, return_softmax_lse):
    """FA2's names for the page table and the LSE flag."""
    if block_table is not None:
        if page_table is not None:
            raise ValueError("give page_table or block_table (its FA2 name), not both")
        page_table = block_table
    if return_softmax_lse is not None:
        return_lse = return_softmax_lse
    return page_table, return_lse


def _scale(softmax_scale: Optional[float], head_dim: int) -> float:
    return 1.0 / math.sqrt(head_dim) if softmax_scale is None else _given_scale(softmax_scale)


def _given_scale(softmax_scale: Any) -> float:
    if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, (int, float)):
        raise TypeError(f"softmax_scale must be a number, not {type(softmax_scale).__name__}")
    if not (math.isfinite(softmax_scale) and softmax_scale > 0):
        raise ValueError(f"softmax_scale must be finite and positive, got {softmax_scale}")
    return float(softmax_scale)


def _flag(name: str, x: Any) -> bool:
    if not isinstance(x, bool):
        raise TypeError(f"{name} must be True or False, not {x!r}")
    return x


def _launch(plan: SchedulePlan, q, k, v, page_table, scale: float, record: bool = False):
    # The module makes the plan's device current for the launch (the tensors must be on it).
    out = torch.empty_like(q)
    if plan._lse_like is not None:
        # Contiguous: torch.empty_like keeps only non-overlapping dense strides, and the
        # template's one element serves every row and head (where it is the only one, strides do
        # not matter).
        lse = torch.empty_like(plan._lse_like)
    else:  # a plan made on the host, which the module refuses to launch
        lse = torch.empty(plan._lse_shape, dtype=torch.float32, device=q.device)
    if _EXCHANGE:  # the stream: torch's current one on q's device, asked by the module
        return out, lse, plan._c.run(q, k, v, out, lse, page_table, scale, None, record)
    if not q.is_cuda:
        stream = 0
    elif _raw_stream is not None:
        stream = _raw_stream(q.device.index)
    else:
        stream = torch.cuda.current_stream(q.device).cuda_stream
    trace = plan._c.run(_to_dlpack(q), _to_dlpack(k), _to_dlpack(v), _to_dlpack(out),
                        _to_dlpack(lse), None if page_table is None else _to_dlpack(page_table),
                        scale, stream, record)
    return out, lse, trace


@torch.library.custom_op("tilesched::varlen_fwd", mutates_args=())
def _varlen_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                page_table: Optional[torch.Tensor], plan_id: int,
                softmax_scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    plan = _registry.get(plan_id)
    if plan is None:
        raise RuntimeError(f"tilesched plan {plan_id} no longer exists: keep the SchedulePlan "
                           "alive while a compiled function or graph that uses it runs")
    out, lse, _ = _launch(plan, q, k, v, page_table, softmax_scale)
    return out, lse


@_varlen_fwd.register_fake
def _(q, k, v, page_table, plan_id, softmax_scale):
    heads, head_dim = q.shape[-2], q.shape[-1]
    rows = q.numel() // (heads * head_dim)
    return torch.empty_like(q), q.new_empty((rows, heads), dtype=torch.float32)


def _check_plan(plan) -> None:
    if not isinstance(plan, SchedulePlan):
        raise TypeError(f"plan must be a tilesched.SchedulePlan, not {type(plan).__name__}")


def _forward(plan: SchedulePlan, q, k, v, page_table, scale: float, trace: bool):
    """The launch of a plan (of the right type: _check_plan)."""
    if plan._identity_pages:
        page_table = plan._tensors["identity_pages"]
    if torch.compiler.is_compiling():
        if trace:
            raise RuntimeError("trace=True reads the trace back on the host: call it eagerly")
        out, lse = torch.ops.tilesched.varlen_fwd(q, k, v, page_table, plan._op_id, scale)
        return out, lse, None
    return _launch(plan, q, k, v, page_table, scale, trace)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           softmax_scale=None, causal=False, seqused_k=None, page_table=None,
                           return_lse=False, deterministic=False, scheduler="auto",
                           num_ctas=None, trace=None, plan=None, *, block_table=None,
                           return_softmax_lse=None):
    """Attention over a packed ragged batch, as FlashAttention's function of the same name.

    q: (total_q, num_q_heads, head_dim); k, v: (total_k, num_kv_heads, head_dim), or with
    page_table (int32, [batch, max_pages]) a paged cache (num_pages, page_size, num_kv_heads,
    head_dim) whose lengths seqused_k gives. bf16, CUDA, contiguous; head_dim 64, 128 or 256.
    cu_seqlens_q / cu_seqlens_k: int32 prefix sums (batch + 1). causal masks are aligned to the
    bottom right (query i of a sequence sees keys j <= i + kv_len - q_len).

    Returns out (total_q, num_q_heads, head_dim), with return_lse also softmax_lse
    (num_q_heads, total_q), fp32, the natural log of each row's sum of exp(scale * score); with
    trace=True the launch's Trace last.
    """
    if block_table is not None or return_softmax_lse is not None:
        page_table, return_lse = _fa2_aliases(page_table, block_table, return_lse,
                                              return_softmax_lse)
    _tensor("q", q, 3, "(total_q, num_heads, head_dim)")
    paged = page_table is not None
    kv_what = "(num_pages, page_size, kv_heads, head_dim)" if paged else \
        "(total_k, kv_heads, head_dim)"
    _tensor("k", k, 4 if paged else 3, kv_what)
    _tensor("v", v, 4 if paged else 3, kv_what)
    return_lse, deterministic = _flag("return_lse", return_lse), _flag("deterministic",
                                                                          deterministic)
    want_trace = False if trace is None else _flag("trace", trace)
    if plan is not None:
        _check_plan(plan)
        # The plan's head dim is q's, or the module refuses q.
        scale = plan._default_scale if softmax_scale is None else _given_scale(softmax_scale)
    else:
        head_dim = q.shape[2]
        scale = _scale(softmax_scale, head_dim)
        _on_cuda("q", q)
        q_lens, kv_lens = varlen_lengths(cu_seqlens_q, cu_seqlens_k, seqused_k, paged)
        for name, given, lens in (("max_seqlen_q", max_seqlen_q, q_lens),
                                  ("max_seqlen_k", max_seqlen_k, kv_lens)):
            if isinstance(given, int) and not isinstance(given, bool) and given < max(lens):
                raise ValueError(f"{name} is {given} but a sequence has {max(lens)}")
        page_size = k.shape[1] if paged else 0
        num_pages = k.shape[0] if paged else 0
        if paged:
            _check_page_table(page_table, kv_lens, page_size, num_pages)
        elif sum(q_lens) != q.shape[0]:
            raise ValueError(f"q has {q.shape[0]} rows but cu_seqlens_q sums to {sum(q_lens)}")
        key = ("varlen", tuple(q_lens), tuple(kv_lens), q.shape[1], k.shape[-2], head_dim,
               bool(causal), page_size, page_table.shape[1] if paged else 0, num_pages,
               scheduler, deterministic, num_ctas, q.device, _stream_of(q))

        def build():
            with torch.cuda.device(q.device):
                return make_plan(q_lens, kv_lens, q.shape[1], k.shape[-2], head_dim,
                                 causal=_flag("causal", causal), page_size=page_size,
                                 max_pages_per_seq=page_table.shape[1] if paged else 0,
                                 num_pages=num_pages, scheduler=scheduler, num_ctas=num_ctas,
                                 deterministic=deterministic, api="varlen")

        plan = _plans.get(key, build)
    out, lse, tr = _forward(plan, q, k, v, page_table, scale, want_trace)
    result = (out,)
    if return_lse:
        result += (lse.t().contiguous(),)
    if want_trace:
        result += (tr,)
    return result[0] if len(result) == 1 else result


def flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, page_table=None,
                            softmax_scale=None, causal=True, return_lse=False,
                            deterministic=False, scheduler="auto", num_ctas=None, trace=None,
                            plan=None, *, block_table=None, return_softmax_lse=None, k=None,
                            v=None):
    """Attention of new queries over a KV cache (decode, speculative verify, chunked prefill),
    as FlashAttention's function of the same name.

    q: (batch, seqlen_q, num_q_heads, head_dim). k_cache, v_cache: (batch, cache_len,
    num_kv_heads, head_dim), or with page_table (int32, [batch, max_pages]; FA2's block_table) a
    paged cache (num_pages, page_size, num_kv_heads, head_dim). cache_seqlens: int32 (batch,) or
    an int, the keys each sequence's queries see, the new tokens' own included. causal (the
    default) aligns the mask to the bottom right.

    Returns out (batch, seqlen_q, num_q_heads, head_dim), with return_lse also softmax_lse
    (batch, num_q_heads, seqlen_q), fp32; with trace=True the launch's Trace last.
    """
    if k is not None or v is not None:
        raise ValueError("appending new keys (k=, v=) is not supported: write them into the "
                         "cache first and count them in cache_seqlens")
    if block_table is not None or return_softmax_lse is not None:
        page_table, return_lse = _fa2_aliases(page_table, block_table, return_lse,
                                              return_softmax_lse)
    _tensor("q", q, 4, "(batch, seqlen_q, num_heads, head_dim)")
    _tensor("k_cache", k_cache, 4, "(batch or num_pages, cache_len or page_size, kv_heads, "
            "head_dim)")
    _tensor("v_cache", v_cache, 4, "(like k_cache)")
    return_lse, deterministic = _flag("return_lse", return_lse), _flag("deterministic",
                                                                          deterministic)
    want_trace = False if trace is None else _flag("trace", trace)
    batch, seqlen_q, heads, head_dim = q.shape
    if plan is not None:
        _check_plan(plan)
        # The plan's head dim is q's, or the module refuses q.
        scale = plan._default_scale if softmax_scale is None else _given_scale(softmax_scale)
    else:
        scale = _scale(softmax_scale, head_dim)
        _on_cuda("q", q)
        if isinstance(cache_seqlens, int) and not isinstance(cache_seqlens, bool):
            kv_lens = [cache_seqlens] * batch
        else:
            if isinstance(cache_seqlens, torch.Tensor) and cache_seqlens.dtype != torch.int32:
                raise TypeError(f"cache_seqlens must be int32, not {cache_seqlens.dtype}")
            kv_lens = _int_list("cache_seqlens", cache_seqlens)
        if len(kv_lens) != batch:
            raise ValueError(f"cache_seqlens has {len(kv_lens)} entries but q has a batch of "
                             f"{batch}")
        paged = page_table is not None
        key = ("kvcache", seqlen_q, tuple(kv_lens), heads, k_cache.shape[2], head_dim,
               _flag("causal", causal), tuple(k_cache.shape[:2]),
               page_table.shape[1] if paged else 0, scheduler, deterministic, num_ctas, q.device,
               _stream_of(q))
        if paged:
            _check_page_table(page_table, kv_lens, k_cache.shape[1], k_cache.shape[0])

        def build():
            with torch.cuda.device(q.device):
                if not paged and k_cache.shape[0] != batch:
                    raise ValueError(f"k_cache holds {k_cache.shape[0]} sequences but q has a "
                                     f"batch of {batch}")
                return plan_kvcache(kv_lens, seqlen_q, heads, k_cache.shape[2], head_dim,
                                    causal=causal, page_table=page_table if paged else None,
                                    page_size=k_cache.shape[1] if paged else None,
                                    num_pages=k_cache.shape[0] if paged else None,
                                    cache_len=None if paged else k_cache.shape[1],
                                    scheduler=scheduler, deterministic=deterministic,
                                    num_ctas=num_ctas, _table_checked=True)

        plan = _plans.get(key, build)
    group = plan._packed_group
    if group:
        # The query heads of each KV head become the rows of its tile: [B, 1, Hkv * g, d] ->
        # [B, g, Hkv, d], and back.
        if seqlen_q != 1 or heads != group * plan.num_kv_heads:
            raise ValueError(f"q has shape {tuple(q.shape)} but the plan packs {group} query "
                             f"heads per KV head of one new token: (batch, 1, "
                             f"{group * plan.num_kv_heads}, head_dim)")
        hkv = plan.num_kv_heads
        q = q.reshape(batch, hkv, group, head_dim).transpose(1, 2).contiguous()
    out, lse, tr = _forward(plan, q, k_cache, v_cache, page_table, scale, want_trace)
    if group:
        out = out.transpose(1, 2).reshape(batch, 1, heads, head_dim)
        lse = lse.view(batch, group, hkv).transpose(1, 2).reshape(batch, heads)
    result = (out,)
    if return_lse:
        result += (lse.view(batch, seqlen_q, heads).permute(0, 2, 1).contiguous(),)
    if want_trace:
        result += (tr,)
    return result[0] if len(result) == 1 else result
