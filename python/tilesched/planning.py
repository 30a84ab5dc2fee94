"""Plans, traces and pictures: the part of the package that needs neither torch nor a GPU.

A plan is one attention step decided on the host: the batch's lengths, the scheduler and tile
height (the simulator's pick unless given), the schedule the planned schedulers walk, and the
kernel's launch with the device words it needs. Build it once per step and pass it to every
layer's call (``plan=``): the call then does no host work beyond checking the tensors' shapes,
and can be captured in a CUDA graph.
"""

from __future__ import annotations

import itertools
import math
import os
import weakref
from collections import OrderedDict
from typing import Any, Optional, Sequence

from . import _C

Trace = _C.Trace

_SCHEDULERS = ("auto",) + tuple(_C.scheduler_names())
# New tokens a decode tile holds per query head (SPEC §6: plain decode 1, speculative verify up
# to 16), common/'s kMaxDecodeTokens.
_MAX_DECODE_TOKENS = _C.max_decode_tokens
_MAX_U32 = (1 << 32) - 1
# Plans by the number the op torch.ops.tilesched.varlen_fwd knows them by.
_registry: "weakref.WeakValueDictionary[int, SchedulePlan]" = weakref.WeakValueDictionary()
_plan_numbers = itertools.count(1)


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "tolist") and hasattr(x, "dim")


def _int_list(name: str, x: Any) -> list[int]:
    """A 1-D sequence of integers from a tensor, an array or a list, with its name in errors."""
    if _is_tensor(x):
        if x.dim() != 1:
            raise ValueError(f"{name} must be 1-D, got shape {tuple(x.shape)}")
        if x.is_floating_point() or x.is_complex() or x.dtype.__repr__() == "torch.bool":
            raise TypeError(f"{name} must hold integers (int32), not {x.dtype}")
        values = x.tolist()
    elif hasattr(x, "ndim") and hasattr(x, "dtype") and hasattr(x, "tolist"):  # numpy
        if x.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {tuple(x.shape)}")
        if x.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, not {x.dtype}")
        values = x.tolist()
    elif isinstance(x, (list, tuple)):
        values = list(x)
    else:
        raise TypeError(f"{name} must be a 1-D tensor or a sequence of integers, "
                        f"not {type(x).__name__}")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name}[{i}] must be an integer, not {type(v).__name__}")
        if v < 0 or v > _MAX_U32:
            raise ValueError(f"{name}[{i}] is {v}: lengths and offsets lie in [0, 2^32)")
    return values


def _check_cu_dtype(name: str, x: Any) -> None:
    if _is_tensor(x) and str(x.dtype) != "torch.int32":
        raise TypeError(f"{name} must be int32 (as FlashAttention takes it), not {x.dtype}")


def lengths_from_cu_seqlens(name: str, cu: Any) -> list[int]:
    """Per-sequence lengths from B+1 prefix sums that start at 0 and never decrease."""
    _check_cu_dtype(name, cu)
    offsets = _int_list(name, cu)
    if len(offsets) < 2:
        raise ValueError(f"{name} must hold batch + 1 >= 2 prefix sums, got {len(offsets)}")
    if offsets[0] != 0:
        raise ValueError(f"{name}[0] must be 0, got {offsets[0]}")
    for i in range(1, len(offsets)):
        if offsets[i] < offsets[i - 1]:
            raise ValueError(f"{name} must be non-decreasing: {name}[{i}] = {offsets[i]} < "
                             f"{name}[{i - 1}] = {offsets[i - 1]}")
    return [offsets[i + 1] - offsets[i] for i in range(len(offsets) - 1)]


def _check_pages_per_row(kv_lens: Sequence[int], page_size: int, max_pages: int) -> list[int]:
    """The pages each sequence fills; raises naming the first sequence a table row of
    `max_pages` pages cannot hold."""
    need = [(n + page_size - 1) // page_size for n in kv_lens]
    b = max(range(len(need)), key=need.__getitem__)
    if need[b] > max_pages:
        raise ValueError(f"page_table has {max_pages} pages per row but sequence {b} "
                         f"({kv_lens[b]} keys) needs {need[b]} pages of {page_size}")
    return need


def varlen_lengths(cu_seqlens_q: Any, cu_seqlens_k: Any, seqused_k: Any,
                   paged: bool) -> tuple[list[int], list[int]]:
    """Per-sequence query and key lengths of flash_attn_varlen_func's arguments: keys from
    cu_seqlens_k for packed keys, from seqused_k (each sequence's cache length) for a paged
    cache."""
    q_lens = lengths_from_cu_seqlens("cu_seqlens_q", cu_seqlens_q)
    if paged:
        if seqused_k is None:
            raise ValueError("a paged cache (page_table) needs seqused_k, each sequence's cache "
                             "length")
        if _is_tensor(seqused_k) and str(seqused_k.dtype) != "torch.int32":
            raise TypeError(f"seqused_k must be int32, not {seqused_k.dtype}")
        kv_lens = _int_list("seqused_k", seqused_k)
    else:
        if seqused_k is not None:
            raise ValueError("seqused_k is supported with a paged cache (page_table) only: give "
                             "cu_seqlens_k with each sequence's own key count")
        if cu_seqlens_k is None:
            raise ValueError("give cu_seqlens_k (packed keys), or a page_table and seqused_k")
        kv_lens = lengths_from_cu_seqlens("cu_seqlens_k", cu_seqlens_k)
    if len(kv_lens) != len(q_lens):
        raise ValueError(f"{len(q_lens)} sequences in cu_seqlens_q but {len(kv_lens)} key "
                         "lengths")
    return q_lens, kv_lens


def _positive(name: str, x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{name} must be an integer, not {type(x).__name__}")
    if x < 1:
        raise ValueError(f"{name} must be at least 1, got {x}")
    return x


def _optional_count(name: str, x: Optional[int]) -> int:
    return 0 if x is None else _positive(name, x)


class SchedulePlan:
    """One attention step planned on the host (see the module's doc).

    Reuse it for every call with the same batch layout, heads and head dim: the calls share its
    device words, so they must follow one another on the device (one stream, as the layers of a
    model do). The lengths it was made for are not checked again when it is passed to a call.
    """

    def __init__(self, c_plan: Any):
        self._c = c_plan
        self._identity_pages = False  # a contiguous cache run as one page per sequence
        # Decode with GQA packed (plan_kvcache): rows of a tile are the query heads of a KV head.
        self._packed_group = 0
        self._query_heads = 0
        # Decode tiles (plan_kvcache): the kernel's tile per (sequence, KV head) whose rows are
        # the new tokens of the group's query heads, read from q as it is.
        self._decoding = False
        # Device tensors the attention functions use (built with the plan, so that a compiled
        # function or a captured graph finds them ready): the identity page table of a
        # contiguous cache.
        self._tensors: dict = {}
        # What every call with the plan asks, kept as Python values: the LSE output's shape
        # (the kernel's rows and heads), a template of it on the plan's device (one element
        # expanded: torch.empty_like of it allocates the output at half torch.empty's cost), and
        # the softmax scale when none is given.
        self._lse_shape = (c_plan.total_q, c_plan.num_q_heads)
        self._lse_like = None
        self._default_scale = 1.0 / math.sqrt(c_plan.head_dim)
        self._op_id = next(_plan_numbers)  # the number the op knows the plan by
        _registry[self._op_id] = self

    # What was decided.
    scheduler = property(lambda self: self._c.scheduler)
    block_m = property(lambda self: self._c.block_m)
    kernel_block_n = property(lambda self: self._c.kernel_block_n)
    num_ctas = property(lambda self: self._c.num_ctas)
    # What it was made for.
    batch_size = property(lambda self: self._c.batch_size)
    q_lens = property(lambda self: list(self._c.q_lens))
    kv_lens = property(lambda self: list(self._c.kv_lens))
    num_q_heads = property(lambda self: self._query_heads or self._c.num_q_heads)
    num_kv_heads = property(lambda self: self._c.num_kv_heads)
    head_dim = property(lambda self: self._c.head_dim)
    causal = property(lambda self: self._c.causal)
    deterministic = property(lambda self: self._c.deterministic)
    total_q = property(lambda self: self._c.total_q // max(self._packed_group, 1))
    on_device = property(lambda self: self._c.on_device)

    @property
    def page_size(self) -> int:
        """The cache's page size (0: each sequence's keys in consecutive rows)."""
        return self._c.page_size

    @property
    def packs_gqa(self) -> bool:
        """Whether a tile's rows are the query heads of one KV head (decode, plan_kvcache)."""
        return self._packed_group > 0 or self._decoding

    def describe(self) -> str:
        text = self._c.describe()
        if self._decoding:
            text += ("\nDecode tiles: one per (sequence, KV head), rows for the new tokens of "
                     "each query head of the group")
        if self._packed_group:
            text += (f"\nGQA packed: the {self._packed_group} query heads of each KV head are "
                     f"the rows of one tile (one new token per sequence)")
        return text

    def simulate(self) -> Trace:
        """The simulator's trace of this plan's schedule (predicted, µs)."""
        return self._c.simulate()

    def workload_json(self) -> str:
        """The workload as `tilesched sim --workload` reads it."""
        return self._c.workload_json()

    def __repr__(self) -> str:
        return f"<tilesched.SchedulePlan {self.describe()}>"


def make_plan(q_lens: Sequence[int], kv_lens: Sequence[int], num_q_heads: int,
              num_kv_heads: int, head_dim: int, *, causal: bool, page_size: int = 0,
              max_pages_per_seq: int = 0, num_pages: int = 0, scheduler: str = "auto",
              num_ctas: Optional[int] = None, block_m: Optional[int] = None,
              kernel_block_n: Optional[int] = None, clusters: str = "auto",
              deterministic: bool = False, api: str = "varlen",
              device: bool = True, identity_pages: bool = False,
              decoding: bool = False) -> SchedulePlan:
    """A plan from host lengths (the functions below and the attention calls build on it)."""
    _positive("num_q_heads", num_q_heads)
    _positive("num_kv_heads", num_kv_heads)
    _positive("head_dim", head_dim)
    if not isinstance(scheduler, str) or scheduler not in _SCHEDULERS:
        raise ValueError(f"scheduler must be one of {', '.join(_SCHEDULERS)}, not {scheduler!r}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, not {causal!r}")
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be True or False, not {deterministic!r}")
    if page_size < 0:
        raise ValueError(f"page_size must be at least 1 for a paged cache, got {page_size}")
    c_plan = _C.Plan(list(q_lens), list(kv_lens), num_q_heads, num_kv_heads, head_dim, causal,
                     page_size=page_size, max_pages_per_seq=max_pages_per_seq,
                     num_pages=num_pages, scheduler=scheduler,
                     num_ctas=_optional_count("num_ctas", num_ctas),
                     block_m=_optional_count("block_m", block_m),
                     kernel_block_n=_optional_count("kernel_block_n", kernel_block_n),
                     clusters=clusters, deterministic=deterministic, api=api, on_device=device,
                     decoding=decoding)
    p = SchedulePlan(c_plan)
    p._identity_pages = identity_pages
    if device:
        _device_tensors(p, c_plan.device)
    return p


def _device_tensors(p: SchedulePlan, device_index: int) -> None:
    """The identity page table of a contiguous cache run as pages, and the LSE output's template,
    on the plan's device."""
    try:  # only the attention functions use them, and they need torch
        import torch
    except ImportError:
        if p._identity_pages:
            raise
        return

    device = torch.device("cuda", device_index)
    p._lse_like = torch.empty(1, dtype=torch.float32, device=device).expand(*p._lse_shape)
    if p._identity_pages:
        p._tensors["identity_pages"] = torch.arange(p.batch_size, dtype=torch.int32,
                                                    device=device).view(-1, 1)


def _check_page_table(page_table: Any, kv_lens: Sequence[int], page_size: int,
                      num_pages: Optional[int]) -> tuple[int, int]:
    """(max_pages_per_seq, num_pages) of a page table, its used entries checked on the host."""
    if not _is_tensor(page_table):
        raise TypeError(f"page_table must be a torch tensor, not {type(page_table).__name__}")
    if page_table.dim() != 2 or page_table.shape[0] != len(kv_lens):
        raise ValueError(f"page_table must be [batch, max_pages] = [{len(kv_lens)}, ...], got "
                         f"shape {tuple(page_table.shape)}")
    if str(page_table.dtype) != "torch.int32":
        raise TypeError(f"page_table must be int32, not {page_table.dtype}")
    if num_pages is None:
        raise ValueError("a page table needs num_pages (the cache's first dimension)")
    import torch  # a table is a torch tensor: checked where it lives, with one synchronisation

    max_pages = page_table.shape[1]
    need = _check_pages_per_row(kv_lens, page_size, max_pages)
    used = torch.tensor(need, dtype=torch.int64, device=page_table.device)
    in_use = torch.arange(max_pages, device=page_table.device)[None, :] < used[:, None]
    bad = in_use & ((page_table < 0) | (page_table >= num_pages))
    if bool(bad.any()):
        b, j = (int(x) for x in bad.nonzero()[0])
        raise ValueError(f"page_table[{b}, {j}] = {int(page_table[b, j])} is out of range: the "
                         f"cache has {num_pages} pages")
    return page_table.shape[1], num_pages


def plan(cu_seqlens_q: Any, cu_seqlens_k: Any, num_q_heads: int, num_kv_heads: int,
         head_dim: int, *, causal: bool = False, seqused_k: Any = None, page_table: Any = None,
         page_size: Optional[int] = None, num_pages: Optional[int] = None,
         scheduler: str = "auto", deterministic: bool = False, num_ctas: Optional[int] = None,
         block_m: Optional[int] = None, kernel_block_n: Optional[int] = None,
         clusters: str = "auto", device: bool = True) -> SchedulePlan:
    """Plans flash_attn_varlen_func's step, once, for every layer that shares its batch.

    cu_seqlens_q / cu_seqlens_k: B+1 prefix sums (int32 tensors, or lists). With a paged cache
    (page_table, page_size, num_pages), seqused_k gives each sequence's cache length and
    cu_seqlens_k is not read. device=False plans on the host only (no GPU needed): the plan can be
    simulated and described, not launched.
    """
    q_lens, kv_lens = varlen_lengths(cu_seqlens_q, cu_seqlens_k, seqused_k,
                                     page_table is not None)
    return _plan_lengths(q_lens, kv_lens, num_q_heads, num_kv_heads, head_dim, causal=causal,
                         page_table=page_table, page_size=page_size, num_pages=num_pages,
                         scheduler=scheduler, deterministic=deterministic, num_ctas=num_ctas,
                         block_m=block_m, kernel_block_n=kernel_block_n, clusters=clusters,
                         api="varlen", device=device)


def plan_kvcache(cache_seqlens: Any, seqlen_q: int, num_q_heads: int, num_kv_heads: int,
                 head_dim: int, *, causal: bool = True, page_table: Any = None,
                 page_size: Optional[int] = None, num_pages: Optional[int] = None,
                 cache_len: Optional[int] = None, scheduler: str = "auto",
                 deterministic: bool = False, num_ctas: Optional[int] = None,
                 block_m: Optional[int] = None, kernel_block_n: Optional[int] = None,
                 clusters: str = "auto", pack_gqa: Optional[bool] = None, device: bool = True,
                 _table_checked: bool = False) -> SchedulePlan:
    """Plans flash_attn_with_kvcache's step: seqlen_q new queries per sequence (1 for decode)
    against cache_seqlens[b] keys, in a paged cache (page_table, page_size, num_pages) or in a
    contiguous one of cache_len rows per sequence ([batch, cache_len, kv_heads, head_dim]).

    pack_gqa (default: on where seqlen_q is at most 16 and query heads share KV heads): one tile
    per (sequence, KV head) whose rows are the new tokens of the query heads that share it, so
    that each K/V block is read once for all of them rather than once per query head
    (docs/python.md, "Decode")."""
    kv_lens = _int_list("cache_seqlens", cache_seqlens)
    if not kv_lens:
        raise ValueError("cache_seqlens is empty: give one length per sequence")
    _positive("seqlen_q", seqlen_q)
    _positive("num_q_heads", num_q_heads)
    _positive("num_kv_heads", num_kv_heads)
    group = num_q_heads // num_kv_heads if num_q_heads % num_kv_heads == 0 else 1
    # The kernel's decode tiles (16 rows per query head of the group) where a tile height holds
    # them; past that, one new token's query heads are copied into the rows of one head's tile.
    fits = group * _MAX_DECODE_TOKENS <= max(_C.kernel_block_ms(head_dim) or [0])
    if pack_gqa is None:
        pack_gqa = group > 1 and (seqlen_q == 1 or (seqlen_q <= _MAX_DECODE_TOKENS and fits))
    elif not isinstance(pack_gqa, bool):
        raise TypeError(f"pack_gqa must be True, False or None, not {pack_gqa!r}")
    if pack_gqa and seqlen_q > _MAX_DECODE_TOKENS:
        raise ValueError(f"pack_gqa packs the query heads of at most {_MAX_DECODE_TOKENS} new "
                         f"tokens per sequence; seqlen_q is {seqlen_q}")
    decode = pack_gqa and fits
    if pack_gqa and not decode and seqlen_q != 1:
        raise ValueError(f"pack_gqa: {group} query heads per KV head of {seqlen_q} new tokens do "
                         f"not fit the kernel's tiles at head dim {head_dim}; give "
                         f"pack_gqa=False")
    copy_pack = pack_gqa and not decode
    # Copy-packed: the g query heads of a KV head are g query rows of one head, which sees every
    # key of the cache (one new token: causal or not, the same).
    rows, heads = (group, num_kv_heads) if copy_pack else (seqlen_q, num_q_heads)
    mask = False if copy_pack else causal
    common = dict(causal=mask, scheduler=scheduler, deterministic=deterministic,
                  num_ctas=num_ctas, block_m=block_m, kernel_block_n=kernel_block_n,
                  clusters=clusters, api="kvcache", device=device, decoding=decode)
    if page_table is None:
        if cache_len is None:
            raise ValueError("a contiguous cache needs cache_len (k_cache.shape[1])")
        _positive("cache_len", cache_len)
        if max(kv_lens) > cache_len:
            b = max(range(len(kv_lens)), key=lambda i: kv_lens[i])
            raise ValueError(f"cache_seqlens[{b}] = {kv_lens[b]} exceeds the cache's {cache_len} "
                             f"rows per sequence")
        # A contiguous cache is a paged one with one page of cache_len rows per sequence.
        p = _plan_lengths([rows] * len(kv_lens), kv_lens, heads, num_kv_heads, head_dim,
                          page_table=None, page_size=cache_len, num_pages=len(kv_lens),
                          identity_pages=True, **common)
    else:
        p = _plan_lengths([rows] * len(kv_lens), kv_lens, heads, num_kv_heads, head_dim,
                          page_table=page_table, page_size=page_size, num_pages=num_pages,
                          table_checked=_table_checked, **common)
    if copy_pack:
        p._packed_group = group
        p._query_heads = num_q_heads
    p._decoding = decode
    return p


def _plan_lengths(q_lens, kv_lens, num_q_heads, num_kv_heads, head_dim, *, causal, page_table,
                  page_size, num_pages, scheduler, deterministic, num_ctas, block_m,
                  kernel_block_n, clusters, api, device, identity_pages=False,
                  table_checked=False, decoding=False) -> SchedulePlan:
    max_pages = 0
    if identity_pages:
        max_pages = 1
    elif page_table is not None:
        if page_size is None:
            raise ValueError("a page table needs page_size (the cache's second dimension)")
        _positive("page_size", page_size)
        if table_checked:
            max_pages = page_table.shape[1]
        else:
            max_pages, num_pages = _check_page_table(page_table, kv_lens, page_size, num_pages)
    elif page_size:
        raise ValueError("page_size was given without a page_table")
    else:
        page_size = 0
    return make_plan(q_lens, kv_lens, num_q_heads, num_kv_heads, head_dim, causal=causal,
                     page_size=page_size or 0, max_pages_per_seq=max_pages,
                     num_pages=num_pages or 0, scheduler=scheduler, num_ctas=num_ctas,
                     block_m=block_m, kernel_block_n=kernel_block_n, clusters=clusters,
                     deterministic=deterministic, api=api, device=device,
                     identity_pages=identity_pages, decoding=decoding)


class PlanCache:
    """The plans of calls made without one, by what they were made for (least recently used
    dropped first)."""

    def __init__(self, capacity: int = 64):
        self.capacity = capacity
        self._plans: OrderedDict = OrderedDict()

    def get(self, key, build):
        p = self._plans.get(key)
        if p is None:
            p = build()
            self._plans[key] = p
            if len(self._plans) > self.capacity:
                self._plans.popitem(last=False)
        else:
            self._plans.move_to_end(key)
        return p

    def clear(self) -> None:
        self._plans.clear()


def simulate(plan: SchedulePlan) -> Trace:
    """The simulator's trace of a plan's schedule: what tilesched predicts its launch does."""
    if not isinstance(plan, SchedulePlan):
        raise TypeError(f"simulate takes a SchedulePlan, not {type(plan).__name__}")
    return plan.simulate()


def viz(trace: Trace, out_dir: "str | os.PathLike[str]", pictures: str = "summary") -> dict:
    """Writes schedule.html, trace.json and perfetto.json for a trace into out_dir, as
    `tilesched viz` does; returns their paths. pictures: "summary", "full" or "none"."""
    if not isinstance(trace, Trace):
        raise TypeError(f"viz takes a tilesched.Trace, not {type(trace).__name__}")
    return _C.write_schedule_outputs(trace, os.fspath(out_dir), pictures)


def read_trace(path: "str | os.PathLike[str]") -> Trace:
    """Reads a trace that tilesched wrote (trace.json, or .json.gz)."""
    return _C.read_trace(os.fspath(path))
