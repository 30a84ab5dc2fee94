"""End-to-end benchmark of tilesched's Python API against its peers, in one process.

Rows: every workload of the suite (tools/bench/suite/*.json, ragged prefill batches); decode, 64
sequences x 1 query over 8k keys (32/8 heads, d=128), in a paged cache per --page-sizes and in a
contiguous one; chunked prefill, 256 new tokens over 8k and 32k keys (128k with --long), causal
aligned to the bottom right, and the 8k chunk again over a cache paged per --page-sizes. With
--decode-grid also the decode grid (1 query, 32/8 heads, d=128, contiguous cache, batch 1, 8, 32
and 128 over 1k, 8k, 32k and 128k keys; rows whose cache does not fit the device are skipped) and
speculative verify (8 and 16 queries over 8k keys, batch 8, 32/8 and 16/2 heads). With
--chunk-grid also one sequence's 256-token chunk over 8k, 32k and 128k cached keys (the cache holds
the chunk too), 32/8 and 8/2 heads (one model at tensor parallel 1 and 4), d=128, and the prefill
parts of the serving suite's mixed batches (8192 queries over 8192 keys; 2048 over 32768). Columns:
ours (no plan given: the call reads the lengths on the host and takes its plan from the cache),
ours (plan) (plan= made once, untimed), FlashAttention-4
(flash_attn.cute from --fa4-site), cuDNN (SDPA under the cuDNN backend) and FlashInfer (where it
imports); a peer that cannot run a row says why.

Each figure is the median over --iters calls of one Python call (launch and host overhead
included) between two CUDA events, each after an L2 flush (zeroing 256 MiB) and a
synchronisation, following --warmup untimed calls. Before timing, ours is compared with a peer
(cuDNN first) or, on small rows without one, an fp32 reference: a max abs difference over 2e-2 is
flagged.

  python -m tilesched.bench --fa4-site /tmp/fa4site --json out/python-bench.json
  python -m tilesched.bench --only d128 --iters 50 --page-sizes 256,16,1 --long
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import statistics
import sys
from types import SimpleNamespace

PEERS = ("FA4", "cuDNN", "FlashInfer")
REF_ORDER = ("cuDNN", "FA4", "FlashInfer")  # whose output ours is checked against
TOLERANCE = 2e-2
FLUSH_BYTES = 256 << 20
DECODE = dict(batch=64, kv_len=8192, hq=32, hkv=8, d=128)
PREFILL = dict(q_len=256, hq=32, hkv=8, d=128)
REF_MAX_SEQ, REF_MAX_TOTAL = 1 << 28, 1 << 33  # score elements of the fp32 reference


def _int_at_least(low):
    def parse(text):
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
        if n < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {n}")
        return n
    return parse


_positive_int, _non_negative_int = _int_at_least(1), _int_at_least(0)


def _page_sizes(text):
    sizes = [_positive_int(p) for p in text.split(",") if p.strip()]
    if not sizes:
        raise argparse.ArgumentTypeError("give at least one page size")
    for ps in sizes:
        for keys in (DECODE["kv_len"], 8192 + PREFILL["q_len"]):
            if keys % ps:
                raise argparse.ArgumentTypeError(f"page size {ps} does not divide the {keys} keys "
                                                 f"of the decode or paged chunk rows")
    return sizes


def parse_args(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(prog="python -m tilesched.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fa4-site", metavar="DIR", help="site dir holding flash-attn-4 (FA4 is "
                    "skipped without it)")
    ap.add_argument("--suite", metavar="DIR",
                    default=os.path.normpath(os.path.join(here, "..", "..", "tools", "bench",
                                                          "suite")),
                    help="the workload suite's folder (default: the repository's "
                         "tools/bench/suite)")
    ap.add_argument("--only", metavar="SUBSTR[,...]",
                    help="only rows whose name contains one of the comma-separated SUBSTRs")
    ap.add_argument("--iters", type=_positive_int, default=20, help="timed calls (default 20)")
    ap.add_argument("--warmup", type=_non_negative_int, default=3,
                    help="untimed calls first (default 3)")
    ap.add_argument("--page-sizes", type=_page_sizes, default=[256], metavar="LIST",
                    help="paged decode rows' page sizes, comma-separated (default 256)")
    ap.add_argument("--long", action="store_true", help="also chunked prefill over 128k keys")
    ap.add_argument("--decode-grid", action="store_true",
                    help="also the decode grid and the speculative-verify rows")
    ap.add_argument("--chunk-grid", action="store_true",
                    help="also one sequence's 256-token chunk over 8k-128k keys, 32/8 and 8/2 "
                         "heads")
    ap.add_argument("--prefill-batch", type=_positive_int, default=4,
                    help="sequences in the chunked-prefill rows (default 4)")
    ap.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    return ap.parse_args(argv)


def _short(e, n=160):
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    return text if len(text) <= n else text[:n - 3] + "..."


def _first(result):
    return result[0] if isinstance(result, (tuple, list)) else result


# --- Peers -----------------------------------------------------------------------------------

def load_fa4(site_dir):
    if not site_dir:
        return None, "no --fa4-site given"
    if not os.path.isdir(site_dir):
        return None, f"--fa4-site {site_dir} is not a directory"
    import site
    site.addsitedir(site_dir)
    try:
        from flash_attn.cute import flash_attn_func, flash_attn_varlen_func
    except Exception as e:  # ImportError, or a dependency failing as it loads
        return None, f"cannot import flash_attn.cute from {site_dir} ({_short(e)})"
    return SimpleNamespace(func=flash_attn_func, varlen=flash_attn_varlen_func), ""


def load_flashinfer():
    try:
        import flashinfer
    except Exception as e:
        return None, f"flashinfer not importable ({_short(e, 80)})"
    return flashinfer, ""


def backend_ctx(torch, name):
    if name == "cuDNN":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(SDPBackend.CUDNN_ATTENTION)
    return contextlib.nullcontext()


def sdpa_dense(torch, q4, k4, v4, causal):
    """cuDNN SDPA on [B, H, S, d] views; causal is bottom-right (causal_lower_right where the
    lengths differ). GQA through enable_gqa, else with K/V heads expanded (outside the timing)."""
    F = torch.nn.functional
    kw = {}
    if causal and q4.shape[-2] != k4.shape[-2]:
        from torch.nn.attention.bias import causal_lower_right
        kw["attn_mask"] = causal_lower_right(q4.shape[-2], k4.shape[-2])
    else:
        kw["is_causal"] = causal
    g = q4.shape[1] // k4.shape[1]
    note = "causal_lower_right mask" if "attn_mask" in kw else ""
    if g > 1:
        try:
            fn = lambda: F.scaled_dot_product_attention(q4, k4, v4, enable_gqa=True, **kw)
            fn()
            return fn, note
        except Exception:
            k4, v4 = k4.repeat_interleave(g, 1), v4.repeat_interleave(g, 1)
            note = ", ".join(x for x in (note, "K/V heads expanded") if x)
    fn = lambda: F.scaled_dot_product_attention(q4, k4, v4, **kw)
    fn()
    return fn, note


def cudnn_ragged(torch, q, k, v, q_lens, kv_lens, causal):
    """cuDNN SDPA on a packed ragged batch: nested (jagged) tensors, else padded to the longest
    sequence with a key mask (dense) or top-left causal (equal lengths, where it is the same)."""
    F = torch.nn.functional
    hq, hkv, d = q.shape[1], k.shape[1], q.shape[2]
    if causal and list(q_lens) != list(kv_lens):
        raise NotImplementedError("no bottom-right causal mask for a ragged batch in SDPA")
    g = hq // hkv
    ke, ve = (k, v) if g == 1 else (k.repeat_interleave(g, 1), v.repeat_interleave(g, 1))
    dev = q.device
    try:
        off_q = torch.tensor([0] + list(_cumsum(q_lens)), dtype=torch.int64, device=dev)
        off_k = torch.tensor([0] + list(_cumsum(kv_lens)), dtype=torch.int64, device=dev)
        nj = torch.nested.nested_tensor_from_jagged
        qn = nj(q, off_q).transpose(1, 2)
        kn, vn = (nj(t, off_k).transpose(1, 2) for t in (ke, ve))
        fn = lambda: F.scaled_dot_product_attention(qn, kn, vn, is_causal=causal)
        fn()
        return fn, lambda o: o.transpose(1, 2).values(), "nested jagged tensors"
    except Exception as e:
        nested_error = _short(e, 80)
    b, sq, sk = len(q_lens), max(q_lens), max(kv_lens)
    if 2 * b * (sq * hq + 2 * sk * hq) * d > (48 << 30):
        raise MemoryError(f"nested tensors failed ({nested_error}); padded would need > 48 GiB")
    qp = q.new_zeros(b, sq, hq, d)
    kp, vp = q.new_zeros(b, sk, hq, d), q.new_zeros(b, sk, hq, d)
    mask = torch.zeros(b, 1, 1, sk, dtype=torch.bool, device=dev)
    oq = ok = 0
    for i, (lq, lk) in enumerate(zip(q_lens, kv_lens)):
        qp[i, :lq], kp[i, :lk], vp[i, :lk] = q[oq:oq + lq], ke[ok:ok + lk], ve[ok:ok + lk]
        mask[i, ..., :lk] = True
        oq, ok = oq + lq, ok + lk
    q4, k4, v4 = (t.transpose(1, 2) for t in (qp, kp, vp))
    kw = {"is_causal": True} if causal else {"attn_mask": mask}
    fn = lambda: F.scaled_dot_product_attention(q4, k4, v4, **kw)
    fn()

    def packed(o):
        o = o.transpose(1, 2)
        return torch.cat([o[i, :n] for i, n in enumerate(q_lens)])
    return fn, packed, f"padded to {sq} (nested tensors: {nested_error})"


_fi_workspace = []


def flashinfer_ragged(torch, fi, q, k, v, cu_q, cu_k, causal):
    if not _fi_workspace:
        _fi_workspace.append(torch.empty(FLUSH_BYTES // 2, dtype=torch.uint8, device=q.device))
    w = fi.BatchPrefillWithRaggedKVCacheWrapper(_fi_workspace[0], "NHD")
    w.plan(cu_q, cu_k, q.shape[1], k.shape[1], q.shape[2], causal=causal,
           q_data_type=q.dtype, kv_data_type=k.dtype)
    fn = lambda: w.run(q, k, v)
    fn()
    return fn


def flashinfer_paged_decode(torch, fi, q, kp, vp, page_table, kv_len):
    if not _fi_workspace:
        _fi_workspace.append(torch.empty(FLUSH_BYTES // 2, dtype=torch.uint8, device=q.device))
    b, pages = page_table.shape
    ps = kp.shape[1]
    w = fi.BatchDecodeWithPagedKVCacheWrapper(_fi_workspace[0], "NHD")
    indptr = torch.arange(b + 1, dtype=torch.int32, device=q.device) * pages
    last = torch.full((b,), kv_len - (pages - 1) * ps, dtype=torch.int32, device=q.device)
    w.plan(indptr, page_table.reshape(-1), last, q.shape[1], kp.shape[2], q.shape[2], ps,
           q_data_type=q.dtype, kv_data_type=kp.dtype)
    fn = lambda: w.run(q, (kp, vp))
    fn()
    return fn


# --- Workloads -------------------------------------------------------------------------------

def _cumsum(xs):
    total = 0
    for x in xs:
        total += x
        yield total


def pairs(q, k, causal):
    """(query, key) pairs computed: causal counts the keys each row sees, bottom-right."""
    if not causal:
        return q * k
    return q * (k - q) + q * (q + 1) // 2 if q <= k else k * (k + 1) // 2


def reference(torch, seqs, causal):
    """fp32 attention per sequence ((q [lq, Hq, d], k, v [lk, Hkv, d]) each); packed output."""
    outs = []
    for q, k, v in seqs:
        lq, hq, d = q.shape
        lk, g = k.shape[0], hq // k.shape[1]
        qf = q.float().transpose(0, 1)
        kf, vf = (t.float().repeat_interleave(g, 1).transpose(0, 1) for t in (k, v))
        s = (qf @ kf.transpose(1, 2)) / math.sqrt(d)
        if causal:
            i = torch.arange(lq, device=q.device).view(-1, 1)
            j = torch.arange(lk, device=q.device).view(1, -1)
            s.masked_fill_(j > i + (lk - lq), float("-inf"))
        outs.append((torch.softmax(s, -1) @ vf).transpose(0, 1))
    return torch.cat(outs)


def _ref_fits(hq, q_lens, kv_lens):
    sizes = [hq * a * b for a, b in zip(q_lens, kv_lens)]
    return max(sizes) <= REF_MAX_SEQ and sum(sizes) <= REF_MAX_TOTAL


def rand(torch, shape, gen):
    # Uniform in [-1, 1) drawn at float precision and rounded to bf16, as `tilesched bench` does.
    return (torch.rand(shape, device="cuda", dtype=torch.float32, generator=gen) * 2 - 1).to(
        torch.bfloat16)


def load_suite(folder):
    if not os.path.isdir(folder):
        sys.exit(f"tilesched.bench: suite folder {folder} not found (give --suite DIR, the "
                 "repository's tools/bench/suite)")
    specs = []
    for fname in sorted(os.listdir(folder)):
        if not fname.endswith(".json"):
            continue
        path = os.path.join(folder, fname)
        try:
            with open(path) as f:
                w = json.load(f)
            q_lens = list(w["q_lens"]) if "q_lens" in w else [int(w["seq_len"])] * int(w["batch"])
            kv_lens = list(w.get("kv_lens", q_lens))
            if w.get("mask", "none") not in ("causal", "none") or len(kv_lens) != len(q_lens):
                raise ValueError("mask must be causal or none, kv_lens as long as q_lens")
            specs.append((fname[:-5], dict(q_lens=q_lens, kv_lens=kv_lens, hq=w["num_q_heads"],
                                           hkv=w["num_kv_heads"], d=w["head_dim"],
                                           causal=w.get("mask") == "causal")))
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"tilesched.bench: {path}: not a suite workload ({_short(e)})")
    return specs


def _lens_text(lens):
    return str(lens[0]) if min(lens) == max(lens) else f"{min(lens)}..{max(lens)}"


def suite_workload(torch, ts, fa4, fi, name, s, gen):
    q_lens, kv_lens, hq, hkv, d, causal = (s[k] for k in ("q_lens", "kv_lens", "hq", "hkv", "d",
                                                           "causal"))
    q = rand(torch, (sum(q_lens), hq, d), gen)
    k, v = rand(torch, (sum(kv_lens), hkv, d), gen), rand(torch, (sum(kv_lens), hkv, d), gen)
    cu_q = torch.tensor([0] + list(_cumsum(q_lens)), dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0] + list(_cumsum(kv_lens)), dtype=torch.int32, device="cuda")
    mq, mk = max(q_lens), max(kv_lens)
    w = SimpleNamespace(name=name, kind="suite", flops=4 * sum(
        pairs(a, b, causal) for a, b in zip(q_lens, kv_lens)) * hq * d, bytes=None)
    w.shape = (f"B={len(q_lens)} q={_lens_text(q_lens)} kv={_lens_text(kv_lens)} H={hq}/{hkv} "
               f"d{d}{' causal' if causal else ''}")
    w.ours = lambda plan=None: ts.flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk,
                                                         causal=causal, plan=plan)
    w.make_plan = lambda: ts.plan(cu_q, cu_k, hq, hkv, d, causal=causal)
    w.ours_packed = lambda o: o
    ident = lambda o: o

    def fa4_peer():
        fn = lambda: _first(fa4.varlen(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                                       max_seqlen_q=mq, max_seqlen_k=mk, causal=causal))
        return fn, ident, ""

    def cudnn_peer():
        b = len(q_lens)
        if len(set(q_lens)) == 1 and len(set(kv_lens)) == 1:
            q4 = q.view(b, mq, hq, d).transpose(1, 2)
            k4, v4 = (t.view(b, mk, hkv, d).transpose(1, 2) for t in (k, v))
            fn, note = sdpa_dense(torch, q4, k4, v4, causal)
            return fn, lambda o: o.transpose(1, 2).reshape(-1, hq, d), note
        return cudnn_ragged(torch, q, k, v, q_lens, kv_lens, causal)

    def fi_peer():
        return flashinfer_ragged(torch, fi, q, k, v, cu_q, cu_k, causal), ident, ""

    w.peers = {"FA4": fa4_peer if fa4 else None, "cuDNN": cudnn_peer,
               "FlashInfer": fi_peer if fi else None}
    seqs = lambda: ((q[a - n:a], k[c - m:c], v[c - m:c]) for n, m, a, c in
                    zip(q_lens, kv_lens, _cumsum(q_lens), _cumsum(kv_lens)))
    w.reference = (lambda: reference(torch, seqs(), causal)) if _ref_fits(hq, q_lens, kv_lens) \
        else None
    return w


def cache_workload(torch, ts, fa4, fi, name, gen, *, batch, q_len, kv_len, hq, hkv, d,
                   page_size=None):
    """flash_attn_with_kvcache rows: decode (q_len 1) and chunked prefill, causal bottom-right,
    over a contiguous cache or (page_size) a paged one whose pages are shuffled."""
    q = rand(torch, (batch, q_len, hq, d), gen)
    kc, vc = (rand(torch, (batch, kv_len, hkv, d), gen) for _ in range(2))
    lens = torch.full((batch,), kv_len, dtype=torch.int32, device="cuda")
    paged = page_size is not None
    # Decode and speculative verify (at most 16 new tokens) are rated by the cache's bytes.
    w = SimpleNamespace(name=name, kind="decode" if q_len <= 16 else "prefill")
    w.flops = 4 * batch * pairs(q_len, kv_len, True) * hq * d
    w.bytes = _kv_bytes(batch, kv_len, hkv, d)
    w.shape = (f"B={batch} q={q_len} kv={kv_len} H={hq}/{hkv} d{d} "
               + (f"pages of {page_size}" if paged else "contiguous"))
    k_arg, v_arg, table = kc, vc, None
    if paged:
        per_seq = kv_len // page_size
        num_pages = batch * per_seq
        perm = torch.randperm(num_pages, device="cuda", generator=gen)
        # Page perm[i] holds chunk i (sequence i // per_seq, its (i % per_seq)-th page).
        k_arg, v_arg = (kc.new_empty(num_pages, page_size, hkv, d) for _ in range(2))
        k_arg[perm] = kc.view(num_pages, page_size, hkv, d)
        v_arg[perm] = vc.view(num_pages, page_size, hkv, d)
        table = perm.to(torch.int32).view(batch, per_seq).contiguous()
        w.make_plan = lambda: ts.plan_kvcache(lens, q_len, hq, hkv, d, causal=True,
                                              page_table=table, page_size=page_size,
                                              num_pages=num_pages)
    else:
        w.make_plan = lambda: ts.plan_kvcache(lens, q_len, hq, hkv, d, causal=True,
                                              cache_len=kv_len)
    w.ours = lambda plan=None: ts.flash_attn_with_kvcache(q, k_arg, v_arg, lens, page_table=table,
                                                          causal=True, plan=plan)
    w.ours_packed = lambda o: o.reshape(-1, hq, d)
    flat = lambda o: o.reshape(-1, hq, d)
    cu_q = torch.arange(batch + 1, dtype=torch.int32, device="cuda") * q_len
    cu_k = torch.arange(batch + 1, dtype=torch.int32, device="cuda") * kv_len

    def fa4_peer():
        if paged:
            qp = q.view(batch * q_len, hq, d)
            fn = lambda: _first(fa4.varlen(qp, k_arg, v_arg, cu_seqlens_q=cu_q,
                                           max_seqlen_q=q_len, seqused_k=lens,
                                           max_seqlen_k=kv_len, page_table=table, causal=True))
        else:
            fn = lambda: _first(fa4.func(q, kc, vc, causal=True))
        return fn, flat, ""

    def cudnn_peer():
        # A query row that sees every key needs no mask (decode); chunked prefill is causal.
        fn, note = sdpa_dense(torch, q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2),
                              causal=q_len > 1)
        note = ", ".join(x for x in (note, "contiguous cache" if paged else "") if x)
        return fn, lambda o: o.transpose(1, 2).reshape(-1, hq, d), note

    def fi_peer():
        if paged:
            if q_len != 1:
                raise NotImplementedError("paged FlashInfer is wired for decode only")
            return flashinfer_paged_decode(torch, fi, q.view(batch, hq, d), k_arg, v_arg, table,
                                           kv_len), flat, ""
        fn = flashinfer_ragged(torch, fi, q.view(-1, hq, d), kc.view(-1, hkv, d),
                               vc.view(-1, hkv, d), cu_q, cu_k, True)
        return fn, flat, ""

    w.peers = {"FA4": fa4_peer if fa4 else None, "cuDNN": cudnn_peer,
               "FlashInfer": fi_peer if fi else None}
    seqs = lambda: ((q[b], kc[b], vc[b]) for b in range(batch))
    w.reference = (lambda: reference(torch, seqs(), True)) if _ref_fits(
        hq, [q_len] * batch, [kv_len] * batch) else None
    return w


def _kv_bytes(batch, kv_len, hkv, d):
    """K and V of a cache (bf16, as rand() draws them)."""
    return 2 * batch * kv_len * hkv * d * 2


def _cache_bytes(spec):
    """What cache_workload allocates for a cache row: K and V, twice where paged (the
    contiguous cache and its pages)."""
    kv = _kv_bytes(spec["batch"], spec["kv_len"], spec["hkv"], spec["d"])
    return kv * (2 if spec.get("page_size") else 1)


# --- Running ---------------------------------------------------------------------------------

def time_us(torch, fn, warmup, iters, flush):
    """Median microseconds of one Python call of fn, between two CUDA events, after an L2 flush."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        flush.zero_()
        torch.cuda.synchronize()  # the flush done, the start event waits for nothing
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def run_row(torch, w, args, flush, reasons):
    row = {"name": w.name, "kind": w.kind, "shape": w.shape, "us": {}, "notes": {},
           "diff_vs": {}}
    try:  # ours first: a row whose call raises is not timed
        out = w.ours_packed(w.ours())
        plan = w.make_plan()
        out_plan = w.ours_packed(w.ours(plan))
        torch.cuda.synchronize()
        row.update(scheduler=str(plan.scheduler), block_m=int(plan.block_m))
    except Exception as e:
        row["error"] = _short(e, 300)
        return row
    row["diff_vs"]["ours"] = (out_plan.float() - out.float()).abs().max().item()
    fns = {}
    for name in PEERS:
        make = w.peers.get(name)
        if make is None:
            row["notes"][name] = reasons.get(name) or "not run for this workload"
            continue
        try:
            with backend_ctx(torch, name):
                fn, packed, note = make()
                o = packed(fn())
                torch.cuda.synchronize()
        except Exception as e:
            row["notes"][name] = _short(e)
            continue
        if note:
            row["notes"][name] = note
        fns[name] = fn
        row["diff_vs"][name] = max((o.float() - x.float()).abs().max().item()
                                   for x in (out, out_plan))
        del o
    ref = next((n for n in REF_ORDER if n in row["diff_vs"]), None)
    if ref is None and w.reference is not None:
        expected = w.reference()
        row["diff_vs"]["fp32 reference"] = max((expected - x.float()).abs().max().item()
                                               for x in (out, out_plan))
        ref = "fp32 reference"
        del expected
    del out, out_plan
    row["checked_against"] = ref
    row["max_diff"] = row["diff_vs"][ref] if ref else None
    row["diff_ok"] = None if ref is None else row["max_diff"] <= TOLERANCE
    try:
        row["us"]["ours"] = time_us(torch, w.ours, args.warmup, args.iters, flush)
        row["us"]["ours (plan)"] = time_us(torch, lambda: w.ours(plan), args.warmup, args.iters,
                                           flush)
    except Exception as e:
        row["error"] = _short(e, 300)
        return row
    for name, fn in fns.items():
        try:
            with backend_ctx(torch, name):
                row["us"][name] = time_us(torch, fn, args.warmup, args.iters, flush)
        except Exception as e:
            row["notes"][name] = "timing failed: " + _short(e)
    peers = [row["us"][n] for n in PEERS if n in row["us"]]
    ours = row["us"]["ours"]
    row["best_peer_us"] = min(peers) if peers else None
    row["speedup"] = min(peers) / ours if peers else None
    row["speedup_plan"] = min(peers) / row["us"]["ours (plan)"] if peers else None
    if w.kind == "decode":
        row["gb_per_s"] = w.bytes / (ours * 1e-6) / 1e9
    else:
        row["tflops"] = w.flops / (ours * 1e-6) / 1e12
    return row


COLS = [("name", 28, "<"), ("shape", 46, "<"), ("ours us", 9, ">"), ("ours(plan) us", 13, ">"),
        ("FA4 us", 9, ">"), ("cuDNN us", 9, ">"), ("FlashInfer us", 13, ">"),
        ("speedup", 8, ">"), ("ours rate", 14, ">"), ("check", 18, "<")]


def _line(cells):
    return " ".join(f"{c:{a}{n}}" for c, (_, n, a) in zip(cells, COLS)).rstrip()


def format_row(row):
    if "error" in row:
        return _line([row["name"], row["shape"]]) + "  ERROR: " + row["error"]
    us = row["us"]
    cell = lambda n: f"{us[n]:.1f}" if n in us else "n/a"
    rate = (f"{row['gb_per_s']:.0f} GB/s" if "gb_per_s" in row else f"{row['tflops']:.1f} TFLOP/s")
    if row["checked_against"] is None:
        check = "unchecked"
    else:
        check = ("ok " if row["diff_ok"] else "WARN ") + f"{row['max_diff']:.1e}"
    speed = f"{row['speedup']:.2f}x" if row["speedup"] is not None else "n/a"
    return _line([row["name"], row["shape"], cell("ours"), cell("ours (plan)"), cell("FA4"),
                  cell("cuDNN"), cell("FlashInfer"), speed, rate, check])


def write_json(path, payload):
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=1, default=str)
    os.replace(tmp, path)


def summary(rows):
    suite = [r for r in rows if r["kind"] == "suite" and "error" not in r]
    ratios = [r["us"]["FA4"] / r["us"]["ours"] for r in suite if "FA4" in r["us"]]
    compared = [r for r in suite if r.get("speedup") is not None]
    wins = sum(1 for r in compared if r["speedup"] >= 1.0)
    lines = [f"suite rows: {len(suite)} run, "
             f"{sum(1 for r in rows if r['kind'] == 'suite' and 'error' in r)} failed"]
    lines.append(f"median FA4_us / ours_us over suite rows: "
                 f"{statistics.median(ratios):.3f} ({len(ratios)} rows)" if ratios else
                 "median FA4_us / ours_us over suite rows: n/a (FA4 not timed)")
    lines.append(f"suite rows where ours >= best peer: {wins}/{len(compared)}"
                 + (f" ({100.0 * wins / len(compared):.0f}%)" if compared else ""))
    return lines, {"median_fa4_over_ours": statistics.median(ratios) if ratios else None,
                   "suite_rows_ours_at_least_best_peer": wins, "suite_rows_compared": len(compared)}


def host_overhead_us(torch, ts, calls=500):
    """Host time of one Python call on an almost empty batch (one sequence, one query of 8
    heads, 128 keys): the mean over `calls` calls issued back to back, fewer than the launch
    queue holds, so the host never waits for the device. With plan= and without."""
    import time

    gen = torch.Generator(device="cuda").manual_seed(7)
    q = rand(torch, (1, 1, 8, 128), gen)
    kc, vc = rand(torch, (1, 128, 8, 128), gen), rand(torch, (1, 128, 8, 128), gen)
    lens = torch.tensor([128], dtype=torch.int32, device="cuda")
    plan = ts.plan_kvcache(lens, 1, 8, 8, 128, cache_len=128)
    calls_of = {"kvcache, plan=": lambda: ts.flash_attn_with_kvcache(q, kc, vc, lens, plan=plan),
                "kvcache, no plan": lambda: ts.flash_attn_with_kvcache(q, kc, vc, lens)}
    qv, kv, vv = q.view(1, 8, 128), kc.view(128, 8, 128), vc.view(128, 8, 128)
    cu_q = torch.tensor([0, 1], dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0, 128], dtype=torch.int32, device="cuda")
    vplan = ts.plan(cu_q, cu_k, 8, 8, 128)
    calls_of["varlen, plan="] = lambda: ts.flash_attn_varlen_func(qv, kv, vv, cu_q, cu_k, 1, 128,
                                                                   plan=vplan)
    out = {}
    for name, call in calls_of.items():
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        out[name] = (time.perf_counter() - start) / calls * 1e6
        torch.cuda.synchronize()
    return out


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError as e:
        sys.exit(f"tilesched.bench: torch is needed ({e})")
    if not torch.cuda.is_available():
        sys.exit("tilesched.bench: no CUDA device is available")
    try:
        import tilesched as ts
        ts.flash_attn_varlen_func  # loads the torch layer
    except Exception as e:
        sys.exit(f"tilesched.bench: cannot load tilesched ({_short(e, 300)})")

    jobs = [(name, "suite", spec) for name, spec in load_suite(args.suite)]
    for ps in args.page_sizes:
        jobs.append((f"decode_paged{ps}", "cache", dict(DECODE, q_len=1, page_size=ps)))
    jobs.append(("decode_contiguous", "cache", dict(DECODE, q_len=1)))
    for ctx in (8192, 32768) + ((131072,) if args.long else ()):
        jobs.append((f"prefill_chunk256_ctx{ctx // 1024}k", "cache",
                     dict(PREFILL, batch=args.prefill_batch, kv_len=ctx + PREFILL["q_len"])))
    for ps in args.page_sizes:  # the 8k chunk again, its cache paged
        jobs.append((f"prefill_chunk256_ctx8k_paged{ps}", "cache",
                     dict(PREFILL, batch=args.prefill_batch, kv_len=8192 + PREFILL["q_len"],
                          page_size=ps)))
    if args.decode_grid:
        for batch in (1, 8, 32, 128):
            for kv in (1024, 8192, 32768, 131072):
                jobs.append((f"decode_grid_b{batch}_kv{kv // 1024}k", "cache",
                             dict(DECODE, batch=batch, kv_len=kv, q_len=1)))
        for q_len in (8, 16):
            for hq, hkv in ((32, 8), (16, 2)):
                jobs.append((f"verify_q{q_len}_h{hq}_{hkv}", "cache",
                             dict(DECODE, batch=8, kv_len=8192, q_len=q_len, hq=hq, hkv=hkv)))
    if args.chunk_grid:
        for ctx in (8192, 32768, 131072):
            for hq, hkv in ((32, 8), (8, 2)):
                jobs.append((f"chunk_grid_ctx{ctx // 1024}k_h{hq}_{hkv}", "cache",
                             dict(PREFILL, batch=1, kv_len=ctx + PREFILL["q_len"], hq=hq,
                                  hkv=hkv)))
        # The prefill parts of the serving suite's mixed batches (tools/bench/serving), whose
        # decode parts are decode grid rows: a peer runs the two parts as two calls.
        for q_len, kv_len in ((8192, 8192), (2048, 32768)):
            jobs.append((f"chunk_grid_mixed_part_q{q_len // 1024}k_kv{kv_len // 1024}k", "cache",
                         dict(PREFILL, batch=1, q_len=q_len, kv_len=kv_len)))
    if args.only:
        wanted = [w for w in args.only.split(",") if w]
        jobs = [j for j in jobs if any(w in j[0] for w in wanted)]
    if not jobs:
        sys.exit(f"tilesched.bench: no row's name contains any of {args.only!r}")

    fa4, fa4_reason = load_fa4(args.fa4_site)
    fi, fi_reason = load_flashinfer()
    reasons = {"FA4": fa4_reason, "FlashInfer": fi_reason}
    for name, why in reasons.items():
        if why:
            print(f"{name} skipped: {why}", file=sys.stderr)

    device = torch.cuda.get_device_name()
    meta = {"device": device, "torch": torch.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": [sys.executable, "-m", "tilesched.bench"] + list(
                sys.argv[1:] if argv is None else argv),
            "iters": args.iters, "warmup": args.warmup, "tolerance": TOLERANCE}
    meta["host_us"] = host_overhead_us(torch, ts)
    print("host time of one call: " + ", ".join(f"{k} {v:.1f} us"
                                                  for k, v in meta["host_us"].items()))
    print(f"device: {device}; torch {torch.__version__}; median of {args.iters} calls after "
          f"{args.warmup} warm-up, L2 flushed; speedup = best peer us / ours us")
    print(_line([c for c, _, _ in COLS]))
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    gen = torch.Generator(device="cuda")
    rows = []
    for i, (name, kind, spec) in enumerate(jobs, 1):
        print(f"[{i}/{len(jobs)}] {name} ...", file=sys.stderr, flush=True)
        gen.manual_seed(1000 + i)
        try:
            need = _cache_bytes(spec) if kind == "cache" else 0
            if need > 0.7 * torch.cuda.mem_get_info()[0]:
                raise MemoryError(f"its cache needs {need / 2**30:.1f} GiB, more than 70 % of "
                                  f"the device's free memory")
            if kind == "suite":
                w = suite_workload(torch, ts, fa4, fi, name, spec, gen)
            else:
                w = cache_workload(torch, ts, fa4, fi, name, gen, **spec)
            row = run_row(torch, w, args, flush, reasons)
        except Exception as e:  # building the inputs failed (out of memory, say)
            row = {"name": name, "kind": "suite" if kind == "suite" else name.split("_")[0],
                   "shape": "-", "error": _short(e, 300)}
        w = None
        torch.cuda.empty_cache()
        rows.append(row)
        print(format_row(row), flush=True)
        if args.json:
            write_json(args.json, dict(meta, rows=rows))
    print("\nnotes:")
    for row in rows:
        for impl, note in row.get("notes", {}).items():
            if note != reasons.get(impl):
                print(f"  {row['name']}: {impl}: {note}")
        if row.get("diff_ok") is False:
            print(f"  {row['name']}: ours differs from {row['checked_against']} by "
                  f"{row['max_diff']:.3g} (> {TOLERANCE})")
    for impl, why in reasons.items():
        if why:
            print(f"  {impl}: not run ({why})")
    lines, totals = summary(rows)
    print("\n" + "\n".join(lines))
    if args.json:
        write_json(args.json, dict(meta, rows=rows, summary=totals))
        print(f"wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
