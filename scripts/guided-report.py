#!/usr/bin/env python3
"""Guided hunting against plain hunting, in one sitting, with one binary.

1. The planted catalogue: `leasehold hunt --budget B --json`, plain and
   `--guided`, on every hunt scenario; runs to detect each planted bug
   (median and maximum over the catalogue).
2. Coverage: `leasehold hunt --variants correct --budget N --coverage`, plain
   and guided, with N seeds per scenario so that the runs come to 10,000 (or
   --coverage-runs); the named points and fault pairs reached.

    cargo build --release
    python3 scripts/guided-report.py                  # Markdown tables
    python3 scripts/guided-report.py --budget 200 --guided-seed 1

Both hunts are deterministic (the guided one in --guided-seed), so the
figures repeat on any machine; only the wall times vary.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def hunt(binary, args):
    out = subprocess.run(
        [binary, "hunt", "--json", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if out.returncode not in (0, 1):
        sys.exit(f"leasehold hunt {' '.join(args)}: exit {out.returncode}: {out.stderr}")
    return json.loads(out.stdout)


def scenario_count(binary):
    out = subprocess.run(
        [binary, "scenarios", "--json"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    listed = json.loads(out.stdout)
    rows = listed["scenarios"] if isinstance(listed, dict) else listed
    return sum(1 for s in rows if not s.get("expected_violations"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/leasehold"))
    ap.add_argument("--budget", type=int, default=200, help="seeds per scenario")
    ap.add_argument("--guided-seed", type=int, default=1)
    ap.add_argument("--coverage-runs", type=int, default=10_000)
    a = ap.parse_args()
    seed = ["--guided", "--guided-seed", str(a.guided_seed)]

    plain = hunt(a.bin, ["--budget", str(a.budget)])
    guided = hunt(a.bin, ["--budget", str(a.budget), *seed])
    print(f"Planted catalogue, budget {a.budget} seeds per scenario (runs to detect):\n")
    print("| variant | plain | guided |")
    print("|---|---|---|")
    runs = {"plain": [], "guided": []}
    escaped = {"plain": 0, "guided": 0}
    for p, g in zip(plain["variants"], guided["variants"]):
        assert p["variant"] == g["variant"]
        if p["variant"] == "correct":
            continue
        cells = []
        for name, row in (("plain", p), ("guided", g)):
            if row["caught"]:
                runs[name].append(row["seeds_to_detect"])
                mark = " (mutated plan)" if row.get("mutated") else ""
                cells.append(f"{row['seeds_to_detect']}{mark}")
            else:
                escaped[name] += 1
                runs[name].append(row["runs"])
                cells.append(f"escaped {row['runs']}")
        print(f"| `{p['variant']}` | {cells[0]} | {cells[1]} |")
    for name, h in (("plain", plain), ("guided", guided)):
        r = runs[name]
        correct = next(v for v in h["variants"] if v["variant"] == "correct")
        verdict = "FAILED" if correct["caught"] else "clean"
        print(
            f"\n{name}: median {statistics.median_low(r)} runs, maximum {max(r)}, "
            f"{escaped[name]} escaped; correct {verdict} over {correct['runs']} runs"
        )

    scenarios = scenario_count(a.bin)
    per = -(-a.coverage_runs // scenarios)
    cov_args = ["--variants", "correct", "--budget", str(per), "--coverage"]
    plain_cov = hunt(a.bin, cov_args)
    guided_cov = hunt(a.bin, [*cov_args, *seed])
    print(
        f"\nCoverage of the correct protocol, {per} seeds per scenario x {scenarios} scenarios:\n"
    )
    print("| hunt | runs | named points reached | fault pairs reached | all points reached |")
    print("|---|---|---|---|---|")
    for name, h in (("plain", plain_cov), ("guided", guided_cov)):
        pts = h["coverage"]["points"]
        named = sum(1 for p in pts if p["kind"] != "fault-pair" and p["hits"] > 0)
        applicable = sum(1 for p in pts if p["kind"] != "fault-pair" and p["applicable"])
        pairs = sum(1 for p in pts if p["kind"] == "fault-pair")
        print(
            f"| {name} | {h['runs']} | {named} of {applicable} | {pairs} | {h['coverage']['reached']} |"
        )
    rare = sorted(
        (p for p in plain_cov["coverage"]["points"] if p["kind"] != "fault-pair"),
        key=lambda p: p["runs"],
    )[:6]
    by_name = {p["name"]: p for p in guided_cov["coverage"]["points"]}
    print("\nThe rarest named points (runs reaching each, plain / guided):\n")
    for p in rare:
        g = by_name.get(p["name"], {"runs": 0})
        print(f"- `{p['name']}`: {p['runs']} / {g['runs']}")


if __name__ == "__main__":
    main()
