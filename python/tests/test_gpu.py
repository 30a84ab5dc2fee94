"""The attention functions on a Hopper GPU, against PyTorch references.

What is verified:
  - accuracy of flash_attn_varlen_func over FlashAttention 3's (seqlen_q, seqlen_k) list, head
    dims 64/128/256, causal (bottom-right) and not, GQA ratios 1, 4 and 8, and ragged batches;
    the output by FlashAttention's rule, the softmax LSE against an fp32 reference;
  - paged KV caches (pages of whole K/V blocks, and pages smaller or uneven, loaded piece by piece),
    shuffled page tables with unused pages and -1 entries past each sequence's pages, through
    flash_attn_varlen_func (page_table + seqused_k) and flash_attn_with_kvcache (decode and
    chunked prefill), against the contiguous call and the reference;
  - flash_attn_with_kvcache on a contiguous cache: uneven cache_seqlens, decode and speculative
    verify;
  - plans: plan= gives the plan-less call's bits, a plan serves several layers, every scheduler
    is accurate on a ragged causal batch;
  - deterministic=True: a sequence's output and LSE do not depend on its batchmates;
  - torch.compile(fullgraph=True) and CUDA graph capture of calls made with plan=;
  - the launch's trace (trace=True) against the simulator's tile count, and viz();
  - bad inputs: the exception type and a message that names the problem.

The accuracy rule is FlashAttention's (tests/test_flash_attn.py of its repository): the kernel's
largest error against a reference computed in fp32 must be at most twice the largest error of
the same attention computed by PyTorch in bf16, plus a small absolute floor.
"""

import itertools
import math
import random

import pytest

torch = pytest.importorskip("torch", reason="the attention functions need torch")

import tilesched  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("no CUDA device: the attention kernel needs a Hopper GPU", allow_module_level=True)
if not tilesched.gpu_built():
    pytest.skip("this build of tilesched has no GPU half (built without CUDA)",
                allow_module_level=True)
_CAPABILITY = torch.cuda.get_device_capability()
if _CAPABILITY != (9, 0):
    pytest.skip(f"the kernel runs on sm_90 (H100, H200); {torch.cuda.get_device_name()} is "
                f"sm_{_CAPABILITY[0]}{_CAPABILITY[1]}", allow_module_level=True)

DEV = torch.device("cuda")
BF16 = torch.bfloat16
ABS_FLOOR = 1e-4  # the rule's absolute floor (max abs error)

flash_attn_varlen_func = tilesched.flash_attn_varlen_func
flash_attn_with_kvcache = tilesched.flash_attn_with_kvcache


# ----------------------------------------------------------------------------------------------
# Inputs and references
# ----------------------------------------------------------------------------------------------

def cuda_gen(seed):
    return torch.Generator(device=DEV).manual_seed(seed)


def randn(shape, gen, scale=1.0):
    return (torch.randn(shape, generator=gen, device=DEV, dtype=torch.float32) * scale).to(BF16)


def cu_seqlens(lens):
    return torch.tensor([0] + list(itertools.accumulate(lens)), dtype=torch.int32, device=DEV)


def make_varlen(q_lens, kv_lens, hq, hkv, d, seed):
    gen = cuda_gen(seed)
    q = randn((sum(q_lens), hq, d), gen)
    k = randn((sum(kv_lens), hkv, d), gen)
    v = randn((sum(kv_lens), hkv, d), gen)
    return q, k, v, cu_seqlens(q_lens), cu_seqlens(kv_lens)


def ref_attention(q, k, v, q_lens, kv_lens, causal, scale, dtype):
    """Attention of a packed ragged batch, one sequence at a time, computed in `dtype` (inputs
    upcast for float32). q: [total_q, Hq, d]; k, v: [total_k, Hkv, d] (GQA: each KV head serves
    Hq / Hkv consecutive query heads). causal: bottom-right aligned, query i of a sequence sees
    keys j <= i + kv_len - q_len. Returns out [total_q, Hq, d] in `dtype` and the LSE
    [Hq, total_q] in fp32 (natural log of the sum of exp(scale * score))."""
    hq, hkv = q.shape[1], k.shape[1]
    rep = hq // hkv
    outs, lses = [], []
    qo = ko = 0
    for sq, sk in zip(q_lens, kv_lens):
        qb = q[qo:qo + sq].to(dtype)
        kb = k[ko:ko + sk].to(dtype).repeat_interleave(rep, dim=1)
        vb = v[ko:ko + sk].to(dtype).repeat_interleave(rep, dim=1)
        qo += sq
        ko += sk
        s = torch.einsum("qhd,khd->hqk", qb, kb) * scale
        if causal:
            i = torch.arange(sq, device=q.device).view(-1, 1)
            j = torch.arange(sk, device=q.device).view(1, -1)
            s = s.masked_fill(j > i + (sk - sq), float("-inf"))
        lses.append(torch.logsumexp(s.float(), dim=-1))
        p = torch.softmax(s, dim=-1)
        outs.append(torch.einsum("hqk,khd->qhd", p, vb))
    return torch.cat(outs), torch.cat(lses, dim=1)


def check_accuracy(out, q, k, v, q_lens, kv_lens, causal, scale=None, lse=None, what=""):
    """FlashAttention's rule for `out` ([total_q, Hq, d] or anything of that many elements);
    `lse` ([Hq, total_q]) against the fp32 reference."""
    d = q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    out_ref, lse_ref = ref_attention(q, k, v, q_lens, kv_lens, causal, scale, torch.float32)
    out_pt, _ = ref_attention(q, k, v, q_lens, kv_lens, causal, scale, BF16)
    assert out.dtype == BF16
    out = out.reshape(out_ref.shape).float()
    assert torch.isfinite(out).all(), f"{what}: non-finite output"
    err = (out - out_ref).abs().max().item()
    err_pt = (out_pt.float() - out_ref).abs().max().item()
    assert err <= 2 * err_pt + ABS_FLOOR, (
        f"{what}: max abs error {err:.3g} vs fp32 exceeds 2 x PyTorch bf16's {err_pt:.3g} + "
        f"{ABS_FLOOR}")
    if lse is not None:
        assert lse.dtype == torch.float32
        assert tuple(lse.shape) == tuple(lse_ref.shape)
        lse_err = (lse - lse_ref).abs().max().item()
        assert lse_err <= 1e-3 * max(1.0, lse_ref.abs().max().item()), (
            f"{what}: LSE max abs error {lse_err:.3g}")


def kvcache_to_packed(q, k_cache, v_cache, cache_seqlens):
    """A contiguous-cache problem as a packed ragged batch (the reference's layout)."""
    b, s = q.shape[:2]
    lens = list(cache_seqlens)
    k = torch.cat([k_cache[i, :n] for i, n in enumerate(lens)])
    v = torch.cat([v_cache[i, :n] for i, n in enumerate(lens)])
    return q.reshape(b * s, *q.shape[2:]), k, v, [s] * b, lens


def lse_kvcache_to_packed(lse):
    """[B, Hq, S_q] -> [Hq, B * S_q] (the packed rows' order)."""
    b, h, s = lse.shape
    return lse.permute(1, 0, 2).reshape(h, b * s)


def make_paged(k, v, kv_lens, page_size, seed, extra_pages=3, extra_columns=2):
    """Packed K, V ([total_k, Hkv, d]) scattered into a paged cache [num_pages, page_size, Hkv, d]
    through a shuffled page table: pages out of order, pages no sequence uses, and -1 entries past
    each sequence's pages. Rows that hold no key are random (never read)."""
    cpu = torch.Generator().manual_seed(seed)
    used = [(n + page_size - 1) // page_size for n in kv_lens]
    num_pages = sum(used) + extra_pages
    perm = torch.randperm(num_pages, generator=cpu).to(torch.int32)
    table = torch.full((len(kv_lens), max(used) + extra_columns), -1, dtype=torch.int32)
    at = 0
    for b, n in enumerate(used):
        table[b, :n] = perm[at:at + n]
        at += n
    table = table.to(DEV)
    hkv, d = k.shape[1:]
    gen = cuda_gen(seed + 1)
    k_pages = randn((num_pages, page_size, hkv, d), gen)
    v_pages = randn((num_pages, page_size, hkv, d), gen)
    kf = k_pages.view(num_pages * page_size, hkv, d)
    vf = v_pages.view(num_pages * page_size, hkv, d)
    off = 0
    for b, n in enumerate(kv_lens):
        pos = torch.arange(n, device=DEV)
        rows = table[b, pos // page_size].long() * page_size + pos % page_size
        kf[rows] = k[off:off + n]
        vf[rows] = v[off:off + n]
        off += n
    return k_pages, v_pages, table, num_pages


def close_to(a, b, what):
    """A second kernel path's result: equal up to an ulp or two of bf16."""
    torch.testing.assert_close(a.float(), b.float(), atol=1e-2, rtol=1e-2,
                               msg=lambda m: f"{what}: {m}")


# ----------------------------------------------------------------------------------------------
# 1. Accuracy (FlashAttention 3's shapes)
# ----------------------------------------------------------------------------------------------

# (seqlen_q, seqlen_k, head_dim, causal, Hq, Hkv, softmax_scale factor or None)
ACCURACY_CASES = [
    (1, 128, 64, False, 4, 4, None),
    (1, 339, 128, True, 8, 1, None),
    (1, 339, 64, False, 8, 2, None),
    (1, 54, 256, True, 8, 8, None),
    (3, 54, 64, True, 8, 2, None),
    (7, 54, 128, True, 4, 4, 0.5),
    (33, 97, 256, False, 8, 1, None),
    (97, 97, 64, False, 4, 4, None),
    (64, 128, 256, False, 8, 2, None),
    (64, 128, 128, True, 8, 8, None),
    (113, 203, 64, True, 8, 2, None),
    (113, 203, 256, False, 4, 4, None),
    (128, 217, 128, False, 4, 4, 2.0),
    (128, 217, 64, True, 8, 1, None),
    (256, 512, 256, True, 4, 4, None),
    (256, 512, 128, False, 8, 1, None),
    (339, 1024, 128, True, 8, 2, None),
    (339, 1024, 256, False, 8, 2, None),
    (1024, 1024, 64, True, 8, 1, None),
    (1024, 1024, 128, False, 8, 1, None),
    (1024, 1024, 256, True, 8, 2, None),
    (2048, 3577, 128, True, 8, 2, None),
    (2048, 3577, 64, False, 4, 1, None),
    (16, 20000, 64, False, 4, 4, None),
    (16, 20000, 256, True, 8, 1, None),
]


def case_id(c):
    sq, sk, d, causal, hq, hkv, sm = c
    return (f"q{sq}-k{sk}-d{d}-{'causal' if causal else 'dense'}-h{hq}x{hkv}"
            + ("" if sm is None else f"-scale{sm}"))


@pytest.mark.parametrize("case", ACCURACY_CASES, ids=case_id)
def test_accuracy_single_sequence(case):
    sq, sk, d, causal, hq, hkv, sm = case
    q, k, v, cu_q, cu_k = make_varlen([sq], [sk], hq, hkv, d, seed=sq * 7919 + sk + d)
    scale = None if sm is None else sm / math.sqrt(d)
    out, lse = flash_attn_varlen_func(q, k, v, cu_q, cu_k, sq, sk, softmax_scale=scale,
                                      causal=causal, return_lse=True)
    assert out.shape == q.shape and out.dtype == BF16 and out.device == q.device
    assert tuple(lse.shape) == (hq, sq)
    check_accuracy(out, q, k, v, [sq], [sk], causal, scale, lse, case_id(case))


# (q_lens, kv_lens, head_dim, causal, Hq, Hkv)
VARLEN_CASES = [
    ([1, 64, 113, 339], [128, 128, 203, 1024], 128, True, 8, 2),
    ([513, 7, 1000], [513, 54, 2000], 64, False, 4, 4),
    ([97, 256], [97, 300], 256, True, 8, 1),
    ([16, 1, 2048, 129], [20000, 339, 3577, 217], 128, False, 8, 8),
    ([1, 1, 1], [54, 97, 1000], 64, True, 16, 2),
]


@pytest.mark.parametrize("case", VARLEN_CASES,
                         ids=lambda c: f"B{len(c[0])}-d{c[2]}-{'causal' if c[3] else 'dense'}")
def test_accuracy_varlen_batch(case):
    q_lens, kv_lens, d, causal, hq, hkv = case
    q, k, v, cu_q, cu_k = make_varlen(q_lens, kv_lens, hq, hkv, d, seed=sum(q_lens) + d)
    out, lse = flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(q_lens), max(kv_lens),
                                      causal=causal, return_lse=True)
    check_accuracy(out, q, k, v, q_lens, kv_lens, causal, None, lse, f"varlen {case}")


# ----------------------------------------------------------------------------------------------
# 2. Paged KV cache
# ----------------------------------------------------------------------------------------------

# (head_dim, page_size, causal)
PAGED_CASES = [
    (64, 1, False), (64, 16, True), (64, 64, True), (64, 256, False),
    (128, 1, True), (128, 16, False), (128, 64, True), (128, 128, True), (128, 256, False),
    (256, 1, True), (256, 16, True), (256, 64, False), (256, 80, True), (256, 256, True),
    (256, 320, False), (128, 200, True), (64, 3, False),
]


@pytest.mark.parametrize("d,page_size,causal", PAGED_CASES)
def test_paged_varlen_matches_contiguous(d, page_size, causal):
    q_lens, kv_lens, hq, hkv = [1, 37, 128, 1], [300, 97, 700, 54], 8, 2
    q, k, v, cu_q, cu_k = make_varlen(q_lens, kv_lens, hq, hkv, d, seed=page_size * 31 + d)
    k_pages, v_pages, table, num_pages = make_paged(k, v, kv_lens, page_size, seed=page_size + d)
    seqused_k = torch.tensor(kv_lens, dtype=torch.int32, device=DEV)

    out_c, lse_c = flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(q_lens), max(kv_lens),
                                          causal=causal, return_lse=True)
    out_p, lse_p = flash_attn_varlen_func(q, k_pages, v_pages, cu_q, None, max(q_lens),
                                          max(kv_lens), causal=causal, seqused_k=seqused_k,
                                          page_table=table, return_lse=True)
    what = f"d {d}, pages of {page_size}"
    check_accuracy(out_p, q, k, v, q_lens, kv_lens, causal, None, lse_p, what)

    p = tilesched.plan(cu_q, None, hq, hkv, d, causal=causal, seqused_k=seqused_k,
                       page_table=table, page_size=page_size, num_pages=num_pages)
    assert p.page_size == page_size
    close_to(out_p, out_c, what)
    torch.testing.assert_close(lse_p, lse_c, atol=1e-3, rtol=1e-4)
    # The same call through an explicit plan gives the plan-less call's bits.
    out_plan = flash_attn_varlen_func(q, k_pages, v_pages, cu_q, None, max(q_lens),
                                      max(kv_lens), causal=causal, seqused_k=seqused_k,
                                      page_table=table, plan=p)
    assert torch.equal(out_plan, out_p), what


# (seqlen_q, cache_seqlens, head_dim, page_size, Hq, Hkv)
PAGED_KVCACHE_CASES = [
    (1, [1500, 97, 2000, 1], 128, 16, 8, 1),     # decode, pages of 16-key boxes
    (1, [1500, 97, 2000, 54], 64, 256, 8, 2),    # decode, pages the kernel loads
    (1, [777, 2048, 33], 256, 64, 4, 4),         # decode, d = 256, BN 64 pages
    (8, [1500, 97, 2000, 8], 128, 16, 32, 8),    # verify, pages of 16-key boxes
    (256, [2048, 1800, 300], 128, 64, 8, 2),     # chunked prefill, pages of half a block
    (256, [2048, 1800, 300], 128, 128, 8, 1),    # chunked prefill, native pages
    (256, [2048, 1000, 256], 256, 320, 8, 2),    # chunked prefill, d = 256, pages of 4 x 80
]


@pytest.mark.parametrize("case", PAGED_KVCACHE_CASES,
                         ids=lambda c: f"sq{c[0]}-d{c[2]}-page{c[3]}-h{c[4]}x{c[5]}")
def test_paged_kvcache(case):
    sq, lens, d, page_size, hq, hkv = case
    b = len(lens)
    gen = cuda_gen(sq + d + page_size)
    cache_len = (max(lens) + 255) // 256 * 256
    q = randn((b, sq, hq, d), gen)
    k_cache = randn((b, cache_len, hkv, d), gen)
    v_cache = randn((b, cache_len, hkv, d), gen)
    cache_seqlens = torch.tensor(lens, dtype=torch.int32, device=DEV)
    qp, k, v, q_lens, kv_lens = kvcache_to_packed(q, k_cache, v_cache, lens)
    k_pages, v_pages, table, _ = make_paged(k, v, kv_lens, page_size, seed=d * page_size)

    out_c, lse_c = flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, causal=True,
                                           return_lse=True)
    out_p, lse_p = flash_attn_with_kvcache(q, k_pages, v_pages, cache_seqlens, page_table=table,
                                           causal=True, return_lse=True)
    assert out_p.shape == q.shape and tuple(lse_p.shape) == (b, hq, sq)
    what = f"kvcache sq {sq}, d {d}, pages of {page_size}"
    check_accuracy(out_p, qp, k, v, q_lens, kv_lens, True, None, lse_kvcache_to_packed(lse_p),
                   what)
    close_to(out_p, out_c, what)
    torch.testing.assert_close(lse_p, lse_c, atol=1e-3, rtol=1e-4)
    # FlashAttention 2's names for the table and the LSE flag.
    out_fa2, lse_fa2 = flash_attn_with_kvcache(q, k_pages, v_pages, cache_seqlens,
                                               block_table=table, return_softmax_lse=True)
    assert torch.equal(out_fa2, out_p) and torch.equal(lse_fa2, lse_p)


# ----------------------------------------------------------------------------------------------
# 3. flash_attn_with_kvcache on a contiguous cache
# ----------------------------------------------------------------------------------------------

# (cache_len, seqlen_q, cache_seqlens, head_dim, causal, Hq, Hkv)
KVCACHE_CASES = [
    (1000, 1, [1000, 513, 54, 1], 128, True, 8, 1),
    (1000, 8, [1000, 513, 54, 8], 64, True, 8, 2),
    (1000, 8, [999, 8, 600], 256, True, 8, 8),
    (1000, 1, [17, 1000, 333], 64, False, 4, 4),
    (1024, 1, [1024, 700, 97, 33], 256, True, 4, 4),
    (1024, 8, [1024, 700, 97, 33], 128, True, 8, 2),
    (1024, 8, [1024, 9, 500], 64, False, 16, 2),
    (1024, 16, [1024, 339, 20, 16], 128, True, 16, 2),   # verify: 16 tokens x 8 query heads
]


def kvcache_id(c):
    return f"len{c[0]}-sq{c[1]}-d{c[3]}-{'causal' if c[4] else 'dense'}"


@pytest.mark.parametrize("case", KVCACHE_CASES, ids=kvcache_id)
def test_kvcache_contiguous(case):
    cache_len, sq, lens, d, causal, hq, hkv = case
    b = len(lens)
    gen = cuda_gen(cache_len + sq + d)
    q = randn((b, sq, hq, d), gen)
    k_cache = randn((b, cache_len, hkv, d), gen)
    v_cache = randn((b, cache_len, hkv, d), gen)
    cache_seqlens = torch.tensor(lens, dtype=torch.int32, device=DEV)
    out, lse = flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, causal=causal,
                                       return_lse=True)
    assert out.shape == q.shape and tuple(lse.shape) == (b, hq, sq)
    qp, k, v, q_lens, kv_lens = kvcache_to_packed(q, k_cache, v_cache, lens)
    check_accuracy(out, qp, k, v, q_lens, kv_lens, causal, None, lse_kvcache_to_packed(lse),
                   f"kvcache {case}")


def test_kvcache_int_cache_seqlens():
    """cache_seqlens as one int: every sequence sees that many keys."""
    b, sq, hq, hkv, d, n = 3, 4, 8, 2, 128, 300
    gen = cuda_gen(5)
    q = randn((b, sq, hq, d), gen)
    k_cache = randn((b, 512, hkv, d), gen)
    v_cache = randn((b, 512, hkv, d), gen)
    out_int = flash_attn_with_kvcache(q, k_cache, v_cache, n)
    out_t = flash_attn_with_kvcache(q, k_cache, v_cache,
                                    torch.full((b,), n, dtype=torch.int32, device=DEV))
    assert torch.equal(out_int, out_t)


# ----------------------------------------------------------------------------------------------
# 4. Plans
# ----------------------------------------------------------------------------------------------

RAGGED_Q = [1, 300, 77, 1024, 5]
RAGGED_K = [128, 300, 500, 2048, 54]


def test_plan_reuse_is_bit_identical():
    hq, hkv, d = 8, 2, 128
    q, k, v, cu_q, cu_k = make_varlen(RAGGED_Q, RAGGED_K, hq, hkv, d, seed=11)
    mq, mk = max(RAGGED_Q), max(RAGGED_K)
    p = tilesched.plan(cu_q, cu_k, hq, hkv, d, causal=True)
    assert isinstance(p, tilesched.SchedulePlan)
    assert p.q_lens == RAGGED_Q and p.kv_lens == RAGGED_K and p.causal
    assert p.total_q == sum(RAGGED_Q) and p.num_q_heads == hq and p.head_dim == d
    assert isinstance(p.describe(), str) and p.scheduler in p.describe()
    out0, lse0 = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True,
                                        return_lse=True)
    out1, lse1 = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True,
                                        return_lse=True, plan=p)
    out2 = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True, plan=p)
    assert torch.equal(out0, out1) and torch.equal(lse0, lse1) and torch.equal(out1, out2)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs a second CUDA device")
def test_plan_launches_on_its_device_whatever_the_current_one():
    # The module makes the plan's device current for the launch and restores the caller's.
    hq, hkv, d = 8, 2, 128
    mq, mk = max(RAGGED_Q), max(RAGGED_K)
    tensors = make_varlen(RAGGED_Q, RAGGED_K, hq, hkv, d, seed=13)
    second = torch.device("cuda", 1)
    q, k, v, cu_q, cu_k = (t.to(second) for t in tensors)
    with torch.cuda.device(second):
        p = tilesched.plan(cu_q, cu_k, hq, hkv, d, causal=True, deterministic=True)
    before = torch.cuda.current_device()
    assert before != 1
    out = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True, plan=p)
    assert torch.cuda.current_device() == before and out.device == second
    q0, k0, v0, cu_q0, cu_k0 = tensors
    expected = flash_attn_varlen_func(q0, k0, v0, cu_q0, cu_k0, mq, mk, causal=True,
                                      deterministic=True)
    assert torch.equal(out.cpu(), expected.cpu())


def test_plan_serves_several_layers_varlen():
    hq, hkv, d = 8, 2, 128
    mq, mk = max(RAGGED_Q), max(RAGGED_K)
    layers = [make_varlen(RAGGED_Q, RAGGED_K, hq, hkv, d, seed=100 + i) for i in range(3)]
    cu_q, cu_k = layers[0][3], layers[0][4]
    p = tilesched.plan(cu_q, cu_k, hq, hkv, d, causal=True)
    with_plan = [flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True, plan=p)
                 for q, k, v, _, _ in layers]
    separate = [flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True)
                for q, k, v, _, _ in layers]
    for i, (a, b) in enumerate(zip(with_plan, separate)):
        assert torch.equal(a, b), f"layer {i}"


def test_plan_serves_several_layers_kvcache():
    b, sq, hq, hkv, d, page_size = 4, 1, 8, 1, 128, 128
    lens = [1500, 97, 2000, 700]
    gen = cuda_gen(21)
    cache_seqlens = torch.tensor(lens, dtype=torch.int32, device=DEV)
    layers = []
    for i in range(3):
        q = randn((b, sq, hq, d), gen)
        k = randn((sum(lens), hkv, d), gen)
        v = randn((sum(lens), hkv, d), gen)
        k_pages, v_pages, table, num_pages = make_paged(k, v, lens, page_size, seed=7)
        layers.append((q, k_pages, v_pages, table))
    table = layers[0][3]  # one table for every layer, as a model's layers share it
    p = tilesched.plan_kvcache(cache_seqlens, sq, hq, hkv, d, page_table=table,
                               page_size=page_size, num_pages=num_pages)
    assert p.batch_size == b and p.kv_lens == lens
    with_plan = [flash_attn_with_kvcache(q, kc, vc, cache_seqlens, page_table=table, plan=p)
                 for q, kc, vc, _ in layers]
    separate = [flash_attn_with_kvcache(q, kc, vc, cache_seqlens, page_table=table)
                for q, kc, vc, _ in layers]
    for i, (x, y) in enumerate(zip(with_plan, separate)):
        assert torch.equal(x, y), f"layer {i}"


SCHEDULERS = ("tile", "queued", "lpt", "lpt_queued", "planned", "ragged_queued", "split_kv",
              "stream_k")


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_scheduler_is_accurate(scheduler):
    hq, hkv, d = 8, 2, 128
    q, k, v, cu_q, cu_k = make_varlen(RAGGED_Q, RAGGED_K, hq, hkv, d, seed=31)
    mq, mk = max(RAGGED_Q), max(RAGGED_K)
    p = tilesched.plan(cu_q, cu_k, hq, hkv, d, causal=True, scheduler=scheduler)
    assert p.scheduler == scheduler
    out, lse = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True,
                                      return_lse=True, plan=p)
    check_accuracy(out, q, k, v, RAGGED_Q, RAGGED_K, True, None, lse, scheduler)
    # The plan-less call with scheduler= makes the same plan.
    out2 = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True, scheduler=scheduler)
    assert torch.equal(out, out2)


# ----------------------------------------------------------------------------------------------
# 5. Deterministic mode: batch invariance
# ----------------------------------------------------------------------------------------------

def test_deterministic_batch_invariance():
    hq, hkv, d = 8, 2, 128
    fixed_q, fixed_k = 300, 777
    fq, fk, fv, cu_q, cu_k = make_varlen([fixed_q], [fixed_k], hq, hkv, d, seed=41)
    alone, lse_alone = flash_attn_varlen_func(fq, fk, fv, cu_q, cu_k, fixed_q, fixed_k,
                                              causal=True, return_lse=True, deterministic=True)
    check_accuracy(alone, fq, fk, fv, [fixed_q], [fixed_k], True, None, lse_alone, "alone")
    rng = random.Random(1234)
    gen = cuda_gen(43)
    for trial in range(20):
        q_lens = [rng.randint(1, 1500) for _ in range(rng.randint(1, 5))]
        kv_lens = [n + rng.randint(0, 1500) for n in q_lens]
        at = rng.randint(0, len(q_lens))  # where the fixed sequence goes
        q_lens.insert(at, fixed_q)
        kv_lens.insert(at, fixed_k)
        parts = []
        for i, (n, m) in enumerate(zip(q_lens, kv_lens)):
            if i == at:
                parts.append((fq, fk, fv))
            else:
                parts.append((randn((n, hq, d), gen), randn((m, hkv, d), gen),
                              randn((m, hkv, d), gen)))
        q, k, v = (torch.cat(list(t)) for t in zip(*parts))
        out, lse = flash_attn_varlen_func(q, k, v, cu_seqlens(q_lens), cu_seqlens(kv_lens),
                                          max(q_lens), max(kv_lens), causal=True,
                                          return_lse=True, deterministic=True)
        row = sum(q_lens[:at])
        assert torch.equal(out[row:row + fixed_q], alone), f"batch {trial}: {q_lens}/{kv_lens}"
        assert torch.equal(lse[:, row:row + fixed_q], lse_alone), f"batch {trial}"


def test_split_kv_decode_batch_invariance():
    # split_kv cuts a tile's keys by its own length: a decode sequence's output and LSE are the
    # same bits beside any batchmates, also under deterministic=True.
    hq, hkv, d, keys = 8, 2, 128, 5000
    gen = cuda_gen(47)
    q0 = randn((1, 1, hq, d), gen)
    kc0, vc0 = randn((1, keys, hkv, d), gen), randn((1, keys, hkv, d), gen)
    alone, lse_alone = flash_attn_with_kvcache(q0, kc0, vc0, keys, scheduler="split_kv",
                                               deterministic=True, return_lse=True)
    rng = random.Random(4711)
    for trial in range(10):
        lens = [rng.randint(1, 9000) for _ in range(rng.randint(1, 6))]
        at = rng.randint(0, len(lens))
        lens.insert(at, keys)
        cache = max(lens)
        q = randn((len(lens), 1, hq, d), gen)
        kc, vc = randn((len(lens), cache, hkv, d), gen), randn((len(lens), cache, hkv, d), gen)
        q[at], kc[at, :keys], vc[at, :keys] = q0[0], kc0[0], vc0[0]
        lens_t = torch.tensor(lens, dtype=torch.int32, device=DEV)
        out, lse = flash_attn_with_kvcache(q, kc, vc, lens_t, scheduler="split_kv",
                                           deterministic=True, return_lse=True)
        assert torch.equal(out[at], alone[0]), f"batch {trial}: {lens}"
        assert torch.equal(lse[at], lse_alone[0]), f"batch {trial}"


# ----------------------------------------------------------------------------------------------
# 6. torch.compile and CUDA graphs
# ----------------------------------------------------------------------------------------------

def test_torch_compile_fullgraph():
    hq, hkv, d = 8, 2, 128
    q, k, v, cu_q, cu_k = make_varlen(RAGGED_Q, RAGGED_K, hq, hkv, d, seed=51)
    mq, mk = max(RAGGED_Q), max(RAGGED_K)
    p = tilesched.plan(cu_q, cu_k, hq, hkv, d, causal=True)

    def two_layers(q, k, v):
        x = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True, plan=p)
        return flash_attn_varlen_func(x, k, v, cu_q, cu_k, mq, mk, causal=True, plan=p,
                                      return_lse=True)

    torch._dynamo.reset()
    compiled = torch.compile(two_layers, fullgraph=True)
    out_c, lse_c = compiled(q, k, v)
    out_e, lse_e = two_layers(q, k, v)
    assert torch.equal(out_c, out_e) and torch.equal(lse_c, lse_e)
    # Again on new inputs of the same shapes (no recompilation needed).
    q2, k2, v2, _, _ = make_varlen(RAGGED_Q, RAGGED_K, hq, hkv, d, seed=52)
    out_c, lse_c = compiled(q2, k2, v2)
    out_e, lse_e = two_layers(q2, k2, v2)
    assert torch.equal(out_c, out_e) and torch.equal(lse_c, lse_e)
    check_accuracy(flash_attn_varlen_func(q2, k2, v2, cu_q, cu_k, mq, mk, causal=True, plan=p),
                   q2, k2, v2, RAGGED_Q, RAGGED_K, True, what="compiled inputs")


@pytest.mark.parametrize("cache", ["paged", "contiguous"])
def test_cuda_graph_decode(cache):
    b, hq, hkv, d = 4, 8, 2, 128
    lens = [1500, 97, 1024, 700]
    gen = cuda_gen(61)
    cache_seqlens = torch.tensor(lens, dtype=torch.int32, device=DEV)
    if cache == "paged":
        k = randn((sum(lens), hkv, d), gen)
        v = randn((sum(lens), hkv, d), gen)
        k_cache, v_cache, table, num_pages = make_paged(k, v, lens, 128, seed=62)
        p = tilesched.plan_kvcache(cache_seqlens, 1, hq, hkv, d, page_table=table,
                                   page_size=128, num_pages=num_pages)
    else:
        k_cache = randn((b, 2048, hkv, d), gen)
        v_cache = randn((b, 2048, hkv, d), gen)
        table = None
        p = tilesched.plan_kvcache(cache_seqlens, 1, hq, hkv, d, cache_len=2048)

    def step(q):
        return flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens, page_table=table,
                                       plan=p, return_lse=True)

    static_q = randn((b, 1, hq, d), gen)
    # Warm up on a side stream before capture, as torch.cuda.graphs' documentation says.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(static_q)
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out, static_lse = step(static_q)

    for trial in range(3):
        new_q = randn((b, 1, hq, d), gen)
        static_q.copy_(new_q)
        graph.replay()
        out_e, lse_e = step(new_q)
        assert torch.equal(static_out, out_e), f"replay {trial}"
        assert torch.equal(static_lse, lse_e), f"replay {trial}"
    torch.cuda.synchronize()
    qp = static_q.reshape(b, hq, d)
    if table is None:
        _, k, v, _, _ = kvcache_to_packed(static_q, k_cache, v_cache, lens)
    check_accuracy(static_out, qp, k, v, [1] * b, lens, True, None,
                   lse_kvcache_to_packed(static_lse), f"graph replay ({cache})")


# ----------------------------------------------------------------------------------------------
# 7. Traces
# ----------------------------------------------------------------------------------------------

def test_trace_and_viz(tmp_path):
    hq, hkv, d = 8, 2, 128
    q, k, v, cu_q, cu_k = make_varlen(RAGGED_Q, RAGGED_K, hq, hkv, d, seed=71)
    mq, mk = max(RAGGED_Q), max(RAGGED_K)
    p = tilesched.plan(cu_q, cu_k, hq, hkv, d, causal=True)
    out, lse, trace = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True,
                                             return_lse=True, trace=True, plan=p)
    assert isinstance(trace, tilesched.Trace)
    assert trace.source == "gpu"
    predicted = p.simulate()
    assert predicted.source == "sim"
    assert tilesched.simulate(p).num_events == predicted.num_events
    assert trace.num_events == predicted.num_events > 0
    assert trace.makespan_us > 0 and trace.launched_ctas > 0
    metrics = trace.metrics()
    assert metrics["tiles"] == trace.num_events and metrics["makespan_us"] > 0
    events = trace.events()
    assert all(len(col) == trace.num_events for col in events.values())
    assert set(events["prompt_idx"]) == set(range(len(RAGGED_Q)))
    # Recording does not change the result.
    out2, lse2 = flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=True,
                                        return_lse=True, plan=p)
    assert torch.equal(out, out2) and torch.equal(lse, lse2)

    paths = tilesched.viz(trace, tmp_path)
    assert (tmp_path / "schedule.html").is_file()
    assert "html" in paths and "trace" in paths
    again = tilesched.read_trace(paths["trace"])
    assert again.num_events == trace.num_events and again.source == "gpu"


def test_trace_kvcache():
    b, hq, hkv, d = 3, 8, 1, 128
    gen = cuda_gen(72)
    q = randn((b, 1, hq, d), gen)
    k_cache = randn((b, 1024, hkv, d), gen)
    v_cache = randn((b, 1024, hkv, d), gen)
    lens = torch.tensor([1024, 50, 600], dtype=torch.int32, device=DEV)
    p = tilesched.plan_kvcache(lens, 1, hq, hkv, d, cache_len=1024)
    out, trace = flash_attn_with_kvcache(q, k_cache, v_cache, lens, plan=p, trace=True)
    assert trace.source == "gpu" and trace.num_events == p.simulate().num_events
    assert torch.equal(out, flash_attn_with_kvcache(q, k_cache, v_cache, lens, plan=p))


# ----------------------------------------------------------------------------------------------
# 8. Bad inputs
# ----------------------------------------------------------------------------------------------

BAD_Q, BAD_K, BAD_HQ, BAD_HKV, BAD_D = [37, 100], [64, 200], 4, 2, 64


@pytest.fixture
def small():
    q, k, v, cu_q, cu_k = make_varlen(BAD_Q, BAD_K, BAD_HQ, BAD_HKV, BAD_D, seed=81)
    return q, k, v, cu_q, cu_k, max(BAD_Q), max(BAD_K)


def test_bad_fp16_q(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    with pytest.raises(TypeError, match="bfloat16"):
        flash_attn_varlen_func(q.half(), k, v, cu_q, cu_k, mq, mk)


def test_bad_cpu_tensors(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    with pytest.raises(ValueError, match="CUDA"):
        flash_attn_varlen_func(q.cpu(), k.cpu(), v.cpu(), cu_q.cpu(), cu_k.cpu(), mq, mk)


def test_bad_cpu_tensors_with_plan(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    p = tilesched.plan(cu_q, cu_k, BAD_HQ, BAD_HKV, BAD_D)
    with pytest.raises(ValueError, match="CUDA"):
        flash_attn_varlen_func(q.cpu(), k.cpu(), v.cpu(), cu_q, cu_k, mq, mk, plan=p)


def test_bad_cpu_tensors_compiled(small):
    # A compiled call reaches the op through the dispatcher: CPU tensors get the same error.
    q, k, v, cu_q, cu_k, mq, mk = small
    p = tilesched.plan(cu_q, cu_k, BAD_HQ, BAD_HKV, BAD_D)
    torch._dynamo.reset()
    compiled = torch.compile(
        lambda q, k, v: flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, plan=p),
        fullgraph=True, backend="eager")
    with pytest.raises(ValueError, match="CUDA"):
        compiled(q.cpu(), k.cpu(), v.cpu())


def test_bad_non_contiguous_q(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    wide = torch.cat([q, q], dim=2)  # [total_q, Hq, 2d]
    q_view = wide[:, :, :BAD_D]
    assert q_view.shape == q.shape and not q_view.is_contiguous()
    with pytest.raises(ValueError, match="contiguous"):
        flash_attn_varlen_func(q_view, k, v, cu_q, cu_k, mq, mk)


def test_bad_cu_seqlens_int64(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    with pytest.raises(TypeError, match="int32"):
        flash_attn_varlen_func(q, k, v, cu_q.long(), cu_k, mq, mk)


def test_bad_cu_seqlens_decreasing(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    bad = torch.tensor([0, 100, 37], dtype=torch.int32, device=DEV)
    with pytest.raises(ValueError, match="non-decreasing"):
        flash_attn_varlen_func(q, k, v, bad, cu_k, mq, mk)


def test_bad_head_dim():
    q, k, v, cu_q, cu_k = make_varlen(BAD_Q, BAD_K, BAD_HQ, BAD_HKV, 96, seed=82)
    with pytest.raises(ValueError, match="head dim"):
        flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(BAD_Q), max(BAD_K))


@pytest.mark.parametrize("entry", ["past_the_cache", "negative"])
def test_bad_page_table_entry(small, entry):
    q, k, v, cu_q, cu_k, mq, mk = small
    k_pages, v_pages, table, num_pages = make_paged(k, v, BAD_K, 64, seed=83)
    table = table.clone()
    table[1, 2] = num_pages if entry == "past_the_cache" else -1  # a page sequence 1 uses
    seqused_k = torch.tensor(BAD_K, dtype=torch.int32, device=DEV)
    with pytest.raises(ValueError, match="out of range"):
        flash_attn_varlen_func(q, k_pages, v_pages, cu_q, None, mq, mk, seqused_k=seqused_k,
                               page_table=table)


def test_bad_page_table_dtype(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    k_pages, v_pages, table, _ = make_paged(k, v, BAD_K, 64, seed=84)
    seqused_k = torch.tensor(BAD_K, dtype=torch.int32, device=DEV)
    with pytest.raises(TypeError, match="int32"):
        flash_attn_varlen_func(q, k_pages, v_pages, cu_q, None, mq, mk, seqused_k=seqused_k,
                               page_table=table.long())


def test_bad_q_rows(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    with pytest.raises(ValueError, match="rows"):
        flash_attn_varlen_func(q[:-1].contiguous(), k, v, cu_q, cu_k, mq, mk)


def test_bad_causal_more_queries_than_keys():
    q, k, v, cu_q, cu_k = make_varlen([64, 10], [64, 5], BAD_HQ, BAD_HKV, BAD_D, seed=85)
    with pytest.raises(ValueError, match="queries"):
        flash_attn_varlen_func(q, k, v, cu_q, cu_k, 64, 64, causal=True)


def test_bad_kvcache_causal_more_queries_than_keys():
    gen = cuda_gen(86)
    q = randn((2, 8, BAD_HQ, BAD_D), gen)
    k_cache = randn((2, 256, BAD_HKV, BAD_D), gen)
    lens = torch.tensor([100, 4], dtype=torch.int32, device=DEV)
    with pytest.raises(ValueError, match="queries"):
        flash_attn_with_kvcache(q, k_cache, k_cache, lens, causal=True)


def test_bad_kvcache_new_keys():
    gen = cuda_gen(87)
    q = randn((2, 1, BAD_HQ, BAD_D), gen)
    k_cache = randn((2, 256, BAD_HKV, BAD_D), gen)
    k_new = randn((2, 1, BAD_HKV, BAD_D), gen)
    lens = torch.tensor([100, 4], dtype=torch.int32, device=DEV)
    with pytest.raises(ValueError, match="new keys"):
        flash_attn_with_kvcache(q, k_cache, k_cache, lens, k=k_new, v=k_new)


def test_bad_kvcache_seqlens_int64():
    gen = cuda_gen(88)
    q = randn((2, 1, BAD_HQ, BAD_D), gen)
    k_cache = randn((2, 256, BAD_HKV, BAD_D), gen)
    lens = torch.tensor([100, 4], dtype=torch.int64, device=DEV)
    with pytest.raises(TypeError, match="int32"):
        flash_attn_with_kvcache(q, k_cache, k_cache, lens)


def test_bad_plan_from_another_shape(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    other = tilesched.plan([0, 50, 150], [0, 64, 264], BAD_HQ, BAD_HKV, BAD_D)
    with pytest.raises(ValueError, match="shape"):
        flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, plan=other)
    other_heads = tilesched.plan(cu_q, cu_k, 2 * BAD_HQ, BAD_HKV, BAD_D)
    with pytest.raises(ValueError, match="shape"):
        flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, plan=other_heads)


def test_bad_heads_not_a_multiple(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    q6 = torch.cat([q, q[:, :2]], dim=1).contiguous()  # 6 query heads over 4 KV heads
    k4 = torch.cat([k, k], dim=1).contiguous()
    v4 = torch.cat([v, v], dim=1).contiguous()
    with pytest.raises(ValueError, match="multiple"):
        flash_attn_varlen_func(q6, k4, v4, cu_q, cu_k, mq, mk)


def test_bad_scheduler_and_scale(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    with pytest.raises(ValueError, match="scheduler"):
        flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, scheduler="fastest")
    with pytest.raises(ValueError, match="softmax_scale"):
        flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, softmax_scale=-1.0)


def test_bad_seqused_k_without_pages(small):
    q, k, v, cu_q, cu_k, mq, mk = small
    with pytest.raises(ValueError, match="seqused_k"):
        flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk,
                               seqused_k=torch.tensor(BAD_K, dtype=torch.int32, device=DEV))
