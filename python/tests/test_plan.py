"""The package without torch or a GPU: plans made on the host, their checks of bad input, the
simulator's traces and the pictures. (test_gpu.py runs the attention functions where there is a
Hopper GPU and torch.)"""

import json
import math

import numpy as np
import pytest

import tilesched
from tilesched.planning import make_plan


def host_plan(q_lens, kv_lens=None, heads=(8, 2), d=128, causal=True, **kw):
    cu = lambda lens: [0] + list(np.cumsum(lens).tolist())
    return tilesched.plan(cu(q_lens), cu(kv_lens or q_lens), heads[0], heads[1], d,
                          causal=causal, device=False, **kw)


def tiles_of(q_lens, block_m, heads):
    return sum(math.ceil(n / block_m) for n in q_lens) * heads


def test_import_needs_no_torch():
    assert isinstance(tilesched.gpu_built(), bool)
    assert tilesched.__version__
    for name in ("plan", "plan_kvcache", "simulate", "viz", "read_trace", "SchedulePlan"):
        assert hasattr(tilesched, name)


def test_auto_scheduler_for_causal_is_a_dynamic_one():
    p = host_plan([700, 3000, 129, 4096])
    assert p.scheduler in ("queued", "lpt_queued")
    assert p.block_m in (128,)
    assert p.num_ctas == 132  # the built-in h200 profile without a device
    assert "auto" in p.describe()


def test_auto_scheduler_splits_the_keys_of_a_chunk_over_a_long_cache():
    # 256 new tokens at 8 query heads are 16 tiles for 132 CTAs: only split keys fill them.
    p = tilesched.plan_kvcache([131328], 256, 8, 2, 128, cache_len=131328, device=False)
    assert p.scheduler in ("split_kv", "stream_k")
    assert "lpt_queued:" in p.describe() and "queued:" in p.describe()
    # A batch of many tiles keeps a dynamic scheduler; deterministic=True never splits.
    assert host_plan([700, 3000, 129, 4096]).scheduler in ("queued", "lpt_queued")
    d = tilesched.plan_kvcache([131328], 256, 8, 2, 128, cache_len=131328, device=False,
                               deterministic=True)
    assert d.scheduler == "queued"


def test_auto_scheduler_for_dense_is_the_static_stride():
    p = host_plan([512, 512], causal=False, d=64)
    assert p.scheduler == "tile"
    assert p.block_m in (128, 192)


def test_explicit_scheduler_block_m_and_ctas_are_kept():
    p = host_plan([1000, 200], scheduler="lpt", block_m=128, num_ctas=20)
    assert (p.scheduler, p.block_m, p.num_ctas) == ("lpt", 128, 20)


def test_deterministic_pins_whole_tiles_of_128_rows():
    p = host_plan([300, 5000], d=64, deterministic=True)
    assert (p.scheduler, p.block_m) == ("queued", 128)
    assert p.deterministic
    with pytest.raises(ValueError, match="deterministic=True runs whole tiles"):
        host_plan([300], deterministic=True, scheduler="split_tail")
    with pytest.raises(ValueError, match="128 rows"):
        host_plan([300], d=64, deterministic=True, block_m=192)


def test_simulate_replays_every_tile():
    q_lens = [700, 3000, 129]
    p = host_plan(q_lens, heads=(4, 4), scheduler="lpt_queued")  # whole tiles, no pieces
    t = tilesched.simulate(p)
    assert t.source == "sim"
    assert t.num_events == tiles_of(q_lens, p.block_m, 4)
    m = t.metrics()
    assert m["makespan_us"] > 0 and 0 < m["efficiency"] <= 1
    ev = t.events()
    assert len(ev["cta"]) == t.num_events
    assert sorted(zip(ev["prompt_idx"], ev["prompt_offset"], ev["head_idx"])) == sorted(
        (b, off, h) for b, n in enumerate(q_lens) for off in range(0, n, p.block_m)
        for h in range(4))
    assert json.loads(p.workload_json())["q_lens"] == q_lens


def test_viz_and_read_trace_round_trip(tmp_path):
    t = tilesched.simulate(host_plan([1000, 2000]))
    paths = tilesched.viz(t, tmp_path / "out")
    assert (tmp_path / "out" / "schedule.html").stat().st_size > 1000
    assert set(paths) == {"trace", "html", "perfetto"}
    back = tilesched.read_trace(paths["trace"])
    assert back.num_events == t.num_events
    assert back.makespan_us == pytest.approx(t.makespan_us)
    t.save(str(tmp_path / "t.json.gz"))
    assert tilesched.read_trace(tmp_path / "t.json.gz").num_events == t.num_events


def test_viz_and_read_trace_refuse_bad_input(tmp_path):
    t = tilesched.simulate(host_plan([100]))
    with pytest.raises(ValueError, match="pictures must be one of"):
        tilesched.viz(t, tmp_path, pictures="some")
    with pytest.raises(TypeError, match="tilesched.Trace"):
        tilesched.viz("trace.json", tmp_path)
    with pytest.raises(Exception, match="missing.json"):
        tilesched.read_trace(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format_version": 1, "events": 3}')
    with pytest.raises(ValueError):
        tilesched.read_trace(bad)
    with pytest.raises(TypeError, match="SchedulePlan"):
        tilesched.simulate(t)


@pytest.mark.parametrize("cu, error, match", [
    ([1, 5], ValueError, r"cu_seqlens_q\[0\] must be 0"),
    ([0, 5, 3], ValueError, "non-decreasing"),
    ([0], ValueError, "batch \\+ 1 >= 2"),
    (np.array([0.0, 4.0]), TypeError, "integers"),
    (np.zeros((2, 2), dtype=np.int32), ValueError, "1-D"),
    ("0,4", TypeError, "1-D tensor or a sequence"),
    ([0, -1], ValueError, r"\[0, 2\^32\)"),
])
def test_cu_seqlens_are_checked(cu, error, match):
    with pytest.raises(error, match=match):
        tilesched.plan(cu, [0, 4], 8, 2, 128, device=False)


@pytest.mark.parametrize("kw, error, match", [
    (dict(d=96), ValueError, "head dim 96 is not supported"),
    (dict(heads=(6, 4)), ValueError, r"query heads \(6\) must be a multiple of KV heads \(4\)"),
    (dict(heads=(0, 1)), ValueError, "num_q_heads must be at least 1"),
    (dict(scheduler="fastest"), ValueError, "scheduler must be one of"),
    (dict(clusters="sometimes"), ValueError, "clusters must be"),
    (dict(num_ctas=0), ValueError, "num_ctas must be at least 1"),
    (dict(causal=1), TypeError, "causal must be True or False"),
])
def test_plan_arguments_are_checked(kw, error, match):
    heads = kw.pop("heads", (8, 2))
    d = kw.pop("d", 128)
    with pytest.raises(error, match=match):
        host_plan([100, 200], heads=heads, d=d, **kw)


def test_causal_needs_as_many_keys_as_queries():
    with pytest.raises(ValueError, match="more queries \\(300\\) than keys \\(200\\)"):
        host_plan([300], kv_lens=[200])
    # Dense attention of more queries than keys is fine.
    assert host_plan([300], kv_lens=[200], causal=False).total_q == 300


def test_queries_without_keys_are_refused():
    with pytest.raises(ValueError, match="no keys"):
        host_plan([4, 4], kv_lens=[10, 0], causal=False)


def test_paged_plans_take_any_page_size():
    # The kernel loads pages of any size itself (docs/gpu-kernel.md, "Paged KV cache").
    for ps in (1, 16, 64, 200, 256):
        pages = math.ceil(5000 / ps)
        p = make_plan([1, 1], [5000, 300], 32, 8, 128, page_size=ps, causal=True,
                      max_pages_per_seq=pages, num_pages=pages + 10, device=False)
        assert p.page_size == ps and p._c.max_pages_per_seq == pages
        assert p._c.num_pages == pages + 10
    with pytest.raises(ValueError, match="needs 20 pages of 256"):
        make_plan([1], [5000], 32, 8, 128, page_size=256, causal=True, max_pages_per_seq=10,
                  num_pages=100, device=False)
    with pytest.raises(ValueError, match="needs 313 pages of 16"):
        make_plan([1], [5000], 32, 8, 128, page_size=16, causal=True, max_pages_per_seq=10,
                  num_pages=400, device=False)


def test_contiguous_cache_plans():
    even = tilesched.plan_kvcache([4000, 10, 1024], 1, 32, 8, 128, cache_len=4096, device=False)
    assert even.page_size == 4096
    uneven = tilesched.plan_kvcache([999, 10], 8, 32, 8, 128, cache_len=1000, device=False)
    assert uneven.page_size == 1000
    with pytest.raises(ValueError, match=r"cache_seqlens\[1\] = 5000 exceeds"):
        tilesched.plan_kvcache([10, 5000], 1, 32, 8, 128, cache_len=4096, device=False)
    with pytest.raises(ValueError, match="cache_len"):
        tilesched.plan_kvcache([10], 1, 32, 8, 128, device=False)
    with pytest.raises(ValueError, match="seqlen_q must be at least 1"):
        tilesched.plan_kvcache([10], 0, 32, 8, 128, cache_len=64, device=False)


def test_tensor_checks_name_the_argument_and_the_rule():
    p = host_plan([3, 5], heads=(4, 2), d=64, causal=False)
    q = np.zeros((8, 4, 64), np.float32)
    k = np.zeros((8, 2, 64), np.float32)
    lse = np.zeros((8, 4), np.float32)
    with pytest.raises(ValueError, match=r"q has shape \[7, 4, 64\] but the plan needs \[8, 4, 64\]"):
        p._c.check(q[:7], k, k, q, lse)
    with pytest.raises(TypeError, match="q must be bfloat16, not float32"):
        p._c.check(q, k, k, q, lse)
    with pytest.raises(ValueError, match=r"k has shape \[8, 4, 64\]"):
        p._c.check(q, q, k, q, lse)
    with pytest.raises(ValueError, match="softmax_lse has shape"):
        p._c.check(q, k, k, q, lse[:, :2])
    with pytest.raises(ValueError, match=r"q has shape \[8, 4, 64, 1, \.\.\. \(5 dimensions\)\]"):
        p._c.check(q.reshape(8, 4, 64, 1, 1), k, k, q, lse)
    with pytest.raises(ValueError, match="no page_table"):
        paged = make_plan([1], [512], 4, 2, 64, causal=True, page_size=256, max_pages_per_seq=2,
                          num_pages=2, device=False)
        paged._c.check(np.zeros((1, 4, 64), np.float32), np.zeros((2, 256, 2, 64), np.float32),
                       np.zeros((2, 256, 2, 64), np.float32), np.zeros((1, 4, 64), np.float32),
                       np.zeros((1, 4), np.float32))



def test_decode_plans_pack_the_query_heads_of_a_kv_head():
    p = tilesched.plan_kvcache([4000, 10, 1024], 1, 32, 8, 128, cache_len=4096, device=False)
    assert p.packs_gqa and "Decode tiles" in p.describe()
    assert (p.num_q_heads, p.num_kv_heads, p.total_q) == (32, 8, 3)
    assert json.loads(p.workload_json())["decoding"] is True
    # One tile (or its pieces) per (sequence, KV head), each its new token for 4 query heads.
    t = p.simulate()
    ev = t.events()
    assert {(ev["prompt_idx"][i], ev["head_idx"][i]) for i in range(t.num_events)} == \
        {(b, h) for b in range(3) for h in range(8)}
    assert set(ev["query_rows"]) == {1}
    # Speculative verify (8 new tokens) is packed alike; plain MHA and pack_gqa=False are not.
    verify = tilesched.plan_kvcache([4000, 77], 8, 32, 8, 128, cache_len=4096, device=False)
    assert verify.packs_gqa and verify.total_q == 16
    assert set(verify.simulate().events()["query_rows"]) == {8}
    assert not tilesched.plan_kvcache([4000], 1, 8, 8, 128, cache_len=4096, device=False).packs_gqa
    assert not tilesched.plan_kvcache([4000], 1, 32, 8, 128, cache_len=4096, pack_gqa=False,
                                      device=False).packs_gqa
    with pytest.raises(ValueError, match="at most 16 new tokens per sequence; seqlen_q is 17"):
        tilesched.plan_kvcache([4000], 17, 32, 8, 128, cache_len=4096, pack_gqa=True,
                               device=False)
    # 16 query heads per KV head are 256 rows, past every tile height at d = 128: one new token
    # is copy-packed instead; several run a tile per query head, and pack_gqa=True is refused.
    wide = tilesched.plan_kvcache([4000], 1, 32, 2, 128, cache_len=4096, device=False)
    assert wide.packs_gqa and "GQA packed" in wide.describe()
    assert not tilesched.plan_kvcache([4000], 4, 32, 2, 128, cache_len=4096,
                                      device=False).packs_gqa
    with pytest.raises(ValueError, match="do not fit the kernel's tiles"):
        tilesched.plan_kvcache([4000], 4, 32, 2, 128, cache_len=4096, pack_gqa=True,
                               device=False)


def test_key_lengths_come_from_cu_seqlens_k_or_a_paged_cache_s_seqused_k():
    # Packed keys start at their cu_seqlens_k offsets: other lengths would misplace them.
    with pytest.raises(ValueError, match="seqused_k is supported with a paged cache"):
        tilesched.plan([0, 3, 7], [0, 3, 7], 8, 2, 128, seqused_k=[3, 4], device=False)
    with pytest.raises(ValueError, match="give cu_seqlens_k"):
        tilesched.plan([0, 3, 7], None, 8, 2, 128, device=False)
    with pytest.raises(ValueError, match="2 sequences in cu_seqlens_q but 3 key lengths"):
        tilesched.plan([0, 3, 7], [0, 3, 7, 9], 8, 2, 128, device=False)


def test_scheduler_names_come_from_the_kind_table():
    # The package accepts the kinds the C++ table names (names.hpp), "auto" beside them.
    names = tilesched._C.scheduler_names()
    assert {"tile", "queued", "lpt_queued", "split_tail", "split_kv", "stream_k"} <= set(names)
    for name in ("split_kv", "stream_k"):
        p = tilesched.plan([0, 300, 700], [0, 900, 1400], 8, 2, 128, causal=True,
                           scheduler=name, device=False)
        assert p.scheduler == name
