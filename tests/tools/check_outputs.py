"""Runs `tilesched sim`, `viz` and `compare --html` on a small workload and checks the files with
independent parsers: the HTML pages parse as XML (xml.etree), each chart has exactly one
<rect class="tile"> per trace event, the comparison page has the ranking table, perfetto.json has
one "X" event per tile, and `viz` of the written trace reproduces the same chart.

usage: check_outputs.py TILESCHED WORKLOAD.json COST.json SCRATCH_DIR
(COST.json: the file of the built-in cost profile the workload names)
"""
import json
import os
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
    svgs = list(root.iter(SVG + "svg"))
    if len(svgs) != 1:
        sys.exit(f"expected one <svg> in schedule.html, found {len(svgs)}")
    rects = tile_rects(svgs[0])
    if len(rects) != len(events):
        sys.exit(f"{len(rects)} tile boxes for {len(events)} trace events")
    for r in rects:
        if r.find(SVG + "title") is None:
            sys.exit("a tile box has no <title>")
    with open(os.path.join(out_dir, "perfetto.json")) as f:
        perfetto = json.load(f)
    complete = [e for e in perfetto["traceEvents"] if e["ph"] == "X"]
    if len(complete) != len(events):
        sys.exit(f"{len(complete)} perfetto X events for {len(events)} trace events")
    return len(events)


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
    print(f"ok: {tiles} tiles in every output")


if __name__ == "__main__":
    main()
