#!/usr/bin/env python3
"""Unit test of tools/bench_report.py on small synthetic Google Benchmark JSON.

Usage: test_bench_report.py            the tables, pairing, targets and size sweep (no matplotlib)
       test_bench_report.py --plots    the SVG plots; exits 77 (ctest SKIP_RETURN_CODE) when this
                                       Python has no matplotlib
"""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_report  # noqa: E402

SKIP = 77


def run(entities: int, figures: dict[str, tuple[float, int | None]]) -> dict:
    """A run's JSON: `figures` maps `scenario/variant` to (ns per item, entities counter or
    None), reported as median aggregates of 3 repetitions."""
    benchmarks = []
    for name, (ns, n) in figures.items():
        entry = {"name": f"{name}/real_time_median", "run_name": f"{name}/real_time",
                 "run_type": "aggregate", "aggregate_name": "median", "repetitions": 3,
                 "items_per_second": 1e9 / ns}
        if n is not None:
            entry["entities"] = n
        benchmarks.append(entry)
    return {"context": {"entities": str(entities), "date": "today", "host_name": "test"},
            "benchmarks": benchmarks}


STANDARD = run(1_000_000, {
    "create/raw": (2.0, 1_000_000), "create/tessera": (10.0, 1_000_000),
    "add_remove/raw": (0.1, 10_000), "add_remove/tessera": (20.0, 10_000),
    "clone/raw": (4.0, 1_000_000), "clone/tessera": (5.0, 1_000_000),
    "snapshot_binary/raw": (4.0, 1_000_000), "snapshot_binary/tessera": (16.0, 1_000_000),
    "propagate/raw": (4.0, 100_000), "propagate/tessera": (5.0, 100_000),
    "propagate/tessera_1pct": (2.0, 100_000),
    "frame_overhead/raw": (2.0, None), "frame_overhead/tessera": (20.0, None),
})
SWEEP_1K = run(1_000, {
    "create/raw": (1.0, 1_000), "create/tessera": (4.0, 1_000),
    "add_remove/raw": (0.1, 1_000), "add_remove/tessera": (15.0, 1_000),
})
# No entities counter: the run's context gives the count.
SWEEP_10K = run(10_000, {"create/raw": (1.5, None), "create/tessera": (6.0, None),
                         "add_remove/tessera": (99.0, None)})


class Tables(unittest.TestCase):
    def test_targets_of_snapshots_and_transforms(self):
        text = bench_report.render(STANDARD, "results.json")
        self.assertIn("| `clone` | tessera | 5.00 | 1.25x | <= 1.5x raw | yes |", text)
        self.assertIn("| `snapshot_binary` | tessera | 16.0 | 4.00x | <= 3x raw | no (4.00x raw) |",
                      text)
        self.assertIn("| `propagate` | tessera | 5.00 | 1.25x | <= 1.5x raw | yes |", text)
        self.assertIn("<= 0.2x tessera | no (0.400x tessera) |", text)
        self.assertIn("| `create` | tessera | 10.0 | 5.00x | <= 20 ns | yes |", text)

    def test_archetype_counts_are_rows_of_one_scenario(self):
        self.assertEqual(bench_report.split_name("archetypes/move/10000/real_time"),
                         ("archetypes/move", "10,000 archetypes"))
        data = run(1_000_000, {"archetypes/query_first/10": (100.0, None),
                               "archetypes/query_first/10000": (150.0, None)})
        text = bench_report.render(data, "results.json")
        self.assertIn("| `archetypes/query_first` | 10 archetypes | 100 |", text)
        self.assertIn("| `archetypes/query_first` | 10,000 archetypes | 150 |", text)
        self.assertLess(text.index("| 10 archetypes |"), text.index("| 10,000 archetypes |"))

    def test_series_take_the_standard_run_on_a_tie(self):
        series = bench_report.collect_series([SWEEP_1K, SWEEP_10K, STANDARD])
        self.assertEqual(series[("create", "tessera")], {1_000: 4.0, 10_000: 6.0,
                                                         1_000_000: 10.0})
        # add_remove at 10,000: the standard run (20 ns), not the sweep (99 ns).
        self.assertEqual(series[("add_remove", "tessera")], {1_000: 15.0, 10_000: 20.0})
        self.assertNotIn(("frame_overhead", "tessera"), series)

    def test_size_table_gives_ratios_per_count(self):
        series = bench_report.collect_series([SWEEP_1K, SWEEP_10K, STANDARD])
        lines = bench_report.size_table(["create"], series, memory=False)
        self.assertIn("| scenario | variant | N = 1,000 | N = 10,000 | N = 1,000,000 |", lines)
        self.assertIn("| `create` | tessera | 4.00 (4.00x) | 6.00 (4.00x) | 10.0 (5.00x) |", lines)

    def test_main_without_plots(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            paths = []
            for name, data in (("results", STANDARD), ("n1000", SWEEP_1K), ("n10000", SWEEP_10K)):
                paths.append(d / f"{name}.json")
                paths[-1].write_text(json.dumps(data))
            out = d / "docs" / "benchmarks.md"
            rc = bench_report.main(["bench_report.py", str(paths[0]), str(out), "--no-plots",
                                    "--sweep", str(paths[1]), str(paths[2])])
            self.assertEqual(rc, 0)
            text = out.read_text()
            self.assertIn("## Snapshots and clones", text)
            self.assertIn("for N = 1,000, 10,000", text)
            self.assertIn("`frame_overhead`: 20 empty systems and no entities: not plotted", text)
            self.assertNotIn("![", text)
            self.assertFalse((out.parent / "bench").exists())


class Plots(unittest.TestCase):
    def test_one_small_svg_per_family(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            src = d / "results.json"
            src.write_text(json.dumps(STANDARD))
            sweep = d / "n1000.json"
            sweep.write_text(json.dumps(SWEEP_1K))
            out = d / "docs" / "benchmarks.md"
            rc = bench_report.main(["bench_report.py", str(src), str(out), "--sweep", str(sweep)])
            self.assertEqual(rc, 0)
            text = out.read_text()
            for slug in ("creation", "structural", "transforms", "snapshots"):
                svg = out.parent / "bench" / f"{slug}.svg"
                self.assertIn(f"](bench/{slug}.svg)", text)
                body = svg.read_text()
                self.assertIn("<text", body)  # svg.fonttype none: text, no glyph outlines
                self.assertLess(len(body), 100_000)
            # Families without figures get no plot (schedules: frame_overhead only).
            self.assertFalse((out.parent / "bench" / "schedules.svg").exists())


def main() -> int:
    plots = "--plots" in sys.argv[1:]
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(f"skipped: {sys.executable} has no matplotlib (Debian: python3-matplotlib)")
            return SKIP
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Plots if plots else Tables)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
