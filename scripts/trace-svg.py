#!/usr/bin/env python3
"""Draws the timeline `ftla ... --trace FILE` wrote (Chrome trace format)
as an SVG picture: one row per grid rank, one coloured bar per stretch of
a part (panel, bcast, update, wait, recovery, ...), time left to right.

    scripts/trace-svg.py TRACE.json PICTURE.svg [--title TEXT]

Python's standard library only. Perfetto (https://ui.perfetto.dev) and
chrome://tracing open the same file interactively.
"""
import argparse
import json
import sys
from xml.sax.saxutils import escape

# One colour per part, in the order the report lists them.
COLOURS = {
    "args": "#9e9e9e",
    "encode": "#8d6e63",
    "panel": "#e53935",
    "swap": "#fb8c00",
    "bcast": "#fdd835",
    "update": "#1e88e5",
    "matvec": "#1e88e5",
    "dot": "#00acc1",
    "commit": "#43a047",
    "checksums": "#6d4c41",
    "wait": "#bdbdbd",
    "checkpoint": "#8e24aa",
    "recovery": "#d81b60",
    "other": "#eeeeee",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("svg")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    with open(a.trace) as f:
        events = json.load(f)["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        sys.exit(f"{a.trace}: no stretches to draw")
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    ranks = sorted({e["pid"] for e in spans})
    end_us = max(e["ts"] + e["dur"] for e in spans)
    left, top, row, width = 110, 40 if a.title else 16, 26, 900
    scale = width / end_us
    parts = [p for p in COLOURS if any(e["name"] == p for e in spans)]
    height = top + row * len(ranks) + 70
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="100%" height="100%" fill="white"/>',
    ]
    if a.title:
        out.append(f'<text x="{left}" y="22" font-size="14">{escape(a.title)}</text>')
    for i, rank in enumerate(ranks):
        y = top + i * row
        out.append(f'<text x="{left - 8}" y="{y + 16}" text-anchor="end">{escape(names.get(rank, f"rank {rank}"))}</text>')
        for e in (e for e in spans if e["pid"] == rank):
            x, w = left + e["ts"] * scale, max(e["dur"] * scale, 0.3)
            colour = COLOURS.get(e["name"], "#000000")
            out.append(
                f'<rect x="{x:.2f}" y="{y + 2}" width="{w:.2f}" height="{row - 6}" fill="{colour}">'
                f'<title>{escape(e["name"])} step {e["args"].get("step", "")}: {e["dur"] / 1e3:.2f} ms</title></rect>'
            )
    # Time axis: about eight ticks at round milliseconds.
    y = top + row * len(ranks)
    step_ms = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 1e9) if end_us / 1e3 / s <= 8)
    t = 0.0
    while t * 1e3 <= end_us:
        x = left + t * 1e3 * scale
        out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 5}" stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{y + 18}" text-anchor="middle">{t:g} ms</text>')
        t += step_ms
    # Legend.
    x = left
    for p in parts:
        out.append(f'<rect x="{x}" y="{y + 32}" width="12" height="12" fill="{COLOURS[p]}" stroke="#555"/>')
        out.append(f'<text x="{x + 16}" y="{y + 43}">{p}</text>')
        x += 24 + 7 * len(p)
    out.append("</svg>")
    with open(a.svg, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
