#!/usr/bin/env python3
"""Draws a schedule trace (Schedule::trace_to, arena --trace) as a timeline PNG.

The trace is Chrome trace-event JSON: ui.perfetto.dev and chrome://tracing open the same file.
This draws what they show, for a page of docs/ (no browser needed): one track per worker thread
(the events' tid), one bar per system run (its "X" event), coloured by system, with the frame
starts marked.

Usage: trace_plot.py TRACE.json OUT.png [--frames N] [--title TEXT]
  --frames N   draw the last N traced frames (default 3; 0: all of them)
Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    runs = [e for e in events if e.get("ph") == "X"]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return runs, names


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=3)
    ap.add_argument("--title", default="")
    args = ap.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, track_names = load(args.trace)
    if not runs:
        print("trace_plot.py: no complete (X) events in %s" % args.trace, file=sys.stderr)
        return 1
    frames = sorted({e.get("args", {}).get("frame", 0) for e in runs})
    if args.frames > 0:
        frames = frames[-args.frames:]
    runs = [e for e in runs if e.get("args", {}).get("frame", 0) in frames]
    origin = min(e["ts"] for e in runs)
    tracks = sorted({e["tid"] for e in runs})
    systems = sorted({e["name"] for e in runs},
                     key=lambda n: min(e["ts"] for e in runs if e["name"] == n))
    palette = plt.get_cmap("tab20")
    colour = {name: palette(i % 20) for i, name in enumerate(systems)}

    fig, ax = plt.subplots(figsize=(13, 1.2 + 0.55 * len(tracks)), dpi=110)
    for row, tid in enumerate(tracks):
        for e in (e for e in runs if e["tid"] == tid):
            start = (e["ts"] - origin) / 1000.0
            width = max(e["dur"] / 1000.0, 0.002)
            ax.broken_barh([(start, width)], (row - 0.38, 0.76), facecolors=colour[e["name"]],
                           edgecolors="black", linewidth=0.3)
    end = max(e["ts"] + e["dur"] for e in runs)
    span_ms = (end - origin) / 1000.0
    for frame in frames:
        start = (min(e["ts"] for e in runs if e["args"]["frame"] == frame) - origin) / 1000.0
        ax.axvline(start, color="grey", linestyle="--", linewidth=0.8)
        ax.text(start + span_ms * 0.003, -0.43, "frame %d" % frame, fontsize=8,
                color="dimgrey", va="bottom")
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([track_names.get(t, "worker %d" % t) for t in tracks])
    ax.set_ylim(len(tracks) - 0.4, -0.85)
    ax.set_xlim(0, span_ms * 1.01)
    ax.set_xlabel("milliseconds")
    ax.set_title(args.title or "schedule trace: %s" % args.trace, fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=colour[n], edgecolor="black",
                             linewidth=0.3) for n in systems]
    ax.legend(handles, systems, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8,
              frameon=False, title="system", title_fontsize=8)
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    fig.tight_layout()
    fig.savefig(args.out)
    print("trace_plot.py: %d runs of %d systems on %d tracks, %d frames -> %s"
          % (len(runs), len(systems), len(tracks), len(frames), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
