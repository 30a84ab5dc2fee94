"""Runs `tilesched sim`, `viz` and `compare --html` on a small workload and checks the files with
independent parsers: the HTML pages parse as XML (xml.etree), each Gantt chart has exactly one
<rect class="tile"> per trace event, schedule.html also has the busy chart and the last wave's
zoom, the comparison page has the ranking table, perfetto.json has one "X" event per tile, and
`viz` of the written trace reproduces the same chart. Then `sim` of 262,144 tiles: schedule.html
stays bounded (boxes capped, the busy curve binned) and its busy curve and last wave agree with
the trace, recomputed here from trace.json.gz.

usage: check_outputs.py TILESCHED WORKLOAD.json COST.json SCRATCH_DIR
(COST.json: the file of the built-in cost profile the workload names)
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def run(*args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def tile_rects(root):
    return [r for r in root.iter(SVG + "rect") if r.get("class") == "tile"]


def svg_of(root, cls):
    """The one <svg class=cls> of a page."""
    found = [s for s in root.iter(SVG + "svg") if s.get("class") == cls]
    if len(found) != 1:
        sys.exit(f"expected one <svg class=\"{cls}\">, found {len(found)}")
    return found[0]


def last_wave(events):
    """(begin, makespan): the earliest last end of a CTA that ran a tile, and the makespan."""
    last_end = {}
    for e in events:
        last_end[e["cta"]] = max(last_end.get(e["cta"], 0.0), e["end_us"])
    return min(last_end.values()), max(last_end.values())


def check_dir(out_dir):
    for name in ("schedule.html", "trace.json", "perfetto.json"):
        path = os.path.join(out_dir, name)
        if not os.path.isfile(path):
            sys.exit(f"missing {path}")
    with open(os.path.join(out_dir, "trace.json")) as f:
        trace = json.load(f)
    events = trace["events"]
    if not events:
        sys.exit("trace has no events")
    root = ET.parse(os.path.join(out_dir, "schedule.html")).getroot()
    svgs = [s.get("class") for s in root.iter(SVG + "svg")]
    if svgs != ["gantt", "busy", "last-wave"]:
        sys.exit(f"schedule.html's charts are {svgs}: expected gantt, busy, last-wave")
    rects = tile_rects(svg_of(root, "gantt"))
    if len(rects) != len(events):
        sys.exit(f"{len(rects)} tile boxes for {len(events)} trace events")
    for r in rects:
        if r.find(SVG + "title") is None:
            sys.exit("a tile box has no <title>")
    # Few tiles: the zoom boxes every tile running in the last wave.
    begin, _ = last_wave(events)
    in_wave = sum(1 for e in events if e["end_us"] > begin)
    zoomed = len(tile_rects(svg_of(root, "last-wave")))
    if zoomed != in_wave:
        sys.exit(f"the last wave's zoom has {zoomed} boxes for {in_wave} tiles running in it")
    with open(os.path.join(out_dir, "perfetto.json")) as f:
        perfetto = json.load(f)
    complete = [e for e in perfetto["traceEvents"] if e["ph"] == "X"]
    if len(complete) != len(events):
        sys.exit(f"{len(complete)} perfetto X events for {len(events)} trace events")
    return len(events)


def bin_means(events, bins):
    """Mean busy CTAs in each of `bins` equal bins of [0, makespan], from the trace."""
    makespan = max(e["end_us"] for e in events)
    width = makespan / bins
    busy = [0.0] * bins
    for e in events:
        start, end = max(e["start_us"], 0.0), min(e["end_us"], makespan)
        b = min(int(start / width), bins - 1)
        while start < end and b < bins:
            edge = min(end, (b + 1) * width)
            busy[b] += edge - start
            start, b = edge, b + 1
    return [b / width for b in busy]


def check_large(tool, out_dir):
    """262,144 tiles: the page's three charts exist, stay bounded, and tell the trace's story."""
    run(tool, "sim", "--batch", "4", "--seq-len", "65536", "--heads", "128", "--kv-heads", "8",
        "--mask", "causal", "--pictures", "summary", "--gzip", "--out", out_dir)
    with gzip.open(os.path.join(out_dir, "trace.json.gz"), "rt") as f:
        events = json.load(f)["events"]
    if len(events) != 262144:
        sys.exit(f"the large trace has {len(events)} events, not 262144")
    page_path = os.path.join(out_dir, "schedule.html")
    text = open(page_path, encoding="utf-8").read()
    root = ET.parse(page_path).getroot()
    sizes = {cls: len(ET.tostring(svg_of(root, cls))) for cls in ("gantt", "busy", "last-wave")}
    # Bounds: 20,000 boxes in the chart and 5,000 in the zoom at about 300 bytes each, 560 bins.
    limits = {"gantt": 7_000_000, "busy": 150_000, "last-wave": 1_700_000}
    for cls, size in sizes.items():
        if size > limits[cls]:
            sys.exit(f"the {cls} chart of 262144 tiles takes {size} bytes, more than {limits[cls]}")
    if len(text) > 9_000_000:
        sys.exit(f"schedule.html of 262144 tiles takes {len(text)} bytes")
    if len(tile_rects(svg_of(root, "gantt"))) > 20000:
        sys.exit("the Gantt chart draws more than 20000 boxes")
    zoomed = len(tile_rects(svg_of(root, "last-wave")))
    if not 0 < zoomed <= 5000:
        sys.exit(f"the last wave's zoom draws {zoomed} boxes (1..5000 expected)")

    # The busy curve: each bin's tooltip gives its mean, which the trace gives too.
    bins = [r for r in svg_of(root, "busy").iter(SVG + "rect") if r.get("class") == "bin"]
    expected = bin_means(events, 560)
    if len(bins) != len(expected):
        sys.exit(f"the busy chart has {len(bins)} bins, not {len(expected)}")
    for k, (rect, mean) in enumerate(zip(bins, expected)):
        shown = float(re.search(r": ([0-9.]+) CTAs busy", rect.find(SVG + "title").text).group(1))
        if abs(shown - mean) > 0.051:
            sys.exit(f"busy bin {k}: the page says {shown} CTAs, the trace gives {mean:.2f}")
    # The last wave: from the first CTA idle for good to the makespan, as the trace has it.
    begin, makespan = last_wave(events)
    title = svg_of(root, "last-wave").find(SVG + "text").text
    m = re.fullmatch(r"last wave: ([0-9.]+) us to ([0-9.]+) us", title)
    if not m or abs(float(m.group(1)) - begin) > 1 or abs(float(m.group(2)) - makespan) > 1:
        sys.exit(f"the zoom is titled '{title}'; the trace's last wave is {begin}..{makespan} us")
    shutil.rmtree(out_dir)  # 20 MB of gzipped trace and Perfetto files


def main():
    tool, workload, cost_file, scratch = sys.argv[1:5]
    shutil.rmtree(scratch, ignore_errors=True)
    sim_dir = os.path.join(scratch, "sim", "deeper")  # created with its parents
    out = run(tool, "sim", workload, "--out", sim_dir)
    if "makespan" not in out or "CTA    0 |" not in out:
        sys.exit("sim did not print the metrics table and the terminal view:\n" + out)
    tiles = check_dir(sim_dir)

    viz_dir = os.path.join(scratch, "viz")
    run(tool, "viz", os.path.join(sim_dir, "trace.json"), "--out", viz_dir)
    if check_dir(viz_dir) != tiles:
        sys.exit("viz of the written trace drew a different number of tiles")

    page = os.path.join(scratch, "compare", "deeper", "compare.html")  # folders created
    run(tool, "compare", workload, "--html", page)
    root = ET.parse(page).getroot()
    rankings = [t for t in root.iter("table") if t.get("class") == "ranking"]
    # 10 strategies, each at every distinct one of the workload's own C, C = SMs and C = SMs x CTAs
    # per SM at its head dim (from the cost profile), and split_kv and stream_k at each C where the
    # workload's tiles are fewer than 4 rounds of C: a header and a row per run.
    with open(workload) as f:
        w = json.load(f)
    with open(cost_file) as f:
        cost = json.load(f)
    per_sm = cost["head_dims"][str(w["head_dim"])]["ctas_per_sm"]
    tiles = sum(-(-q // w["block_m"]) for q in w["q_lens"]) * w["num_q_heads"]
    runs = sum(10 + (2 if tiles < 4 * c else 0)
               for c in {w["num_ctas"], cost["sms"], cost["sms"] * per_sm})
    if len(rankings) != 1 or len(list(rankings[0].iter("tr"))) != 1 + runs:
        sys.exit(f"the comparison page lacks the ranking table (a header and {runs} runs)")
    svgs = list(root.iter(SVG + "svg"))
    if len(svgs) != runs:
        sys.exit(f"expected {runs} charts on the comparison page, found {len(svgs)}")
    for svg in svgs:
        if not tile_rects(svg):
            sys.exit("a comparison chart has no tiles")
    check_large(tool, os.path.join(scratch, "large"))
    print(f"ok: {tiles} tiles in every output")


if __name__ == "__main__":
    main()
