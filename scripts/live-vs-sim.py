#!/usr/bin/env python3
"""What the simulator predicts against what real stores executed.

For friday-rush with its faults off at several fleet sizes, runs the
simulator (`leasehold run --json`, several seeds, averaged) and the live
fleet (`leasehold live --json`) on SQLite and, when LEASEHOLD_POSTGRES_URL is
set, on PostgreSQL, and prints a Markdown table of store operations by kind:
per run and, for heartbeat writes, per minute of scenario time.

    scripts/live-vs-sim.py [--leasehold PATH] [--workers 10,20,40] [--speed 20]
                           [--points-out docs/charts/live-points.json]

With --points-out it also writes the measured heartbeat load as points for
the load chart's overlay (`leasehold chart load --live FILE`).

Every live run's counts are of the requests the real store executed (the
live run records each as the simulator records its store's).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

KINDS = [
    ("heartbeat writes / min", None),
    ("heartbeat writes", ("store_load", "heartbeat_writes")),
    ("claims", ("store_load", "claims")),
    ("progress writes", ("store_load", "progress_writes")),
    ("completions", ("store_load", "completions")),
    ("conflicts", ("store", "conflicts")),
    ("index scans (polls)", ("store", "index_scans")),
    ("scans (reclaimers)", ("store", "scans")),
    ("gets", ("store", "gets")),
    ("creates", ("store", "creates")),
    ("conditional puts", ("store", "conditional_puts")),
    ("deletes", ("store", "deletes")),
    ("all store requests", None),
]


def scenario(workers, path):
    with open("scenarios/friday-rush.json") as f:
        s = json.load(f)
    s["name"] = f"friday-rush-{workers}w-no-faults"
    s["fleet"]["workers"] = workers
    # The load alone: no fault kinds.
    f = s["faults"]
    s["faults"] = {
        "fault_phase_ms": f["fault_phase_ms"],
        "swarm": False,
        "restart_delay_ms": f["restart_delay_ms"],
    }
    with open(path, "w") as f:
        json.dump(s, f)


def value(run, kind):
    name, where = kind
    store = run["store"]
    if name == "all store requests":
        return sum(
            store[k]
            for k in [
                "gets",
                "scans",
                "index_scans",
                "creates",
                "conditional_puts",
                "unconditional_puts",
                "deletes",
            ]
        )
    if name == "heartbeat writes / min":
        return run["store_load"]["heartbeat_writes"] / (run["sim_time_ms"] / 60000)
    return run[where[0]][where[1]]


def run_json(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"{' '.join(args)}: exit {out.returncode}: {out.stderr}")
    return json.loads(out.stdout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leasehold", default="target/debug/leasehold")
    p.add_argument("--workers", default="10,20,40")
    p.add_argument("--speed", default="20")
    p.add_argument("--sim-seeds", type=int, default=5)
    p.add_argument("--points-out", default=None)
    a = p.parse_args()
    points = []
    stores = [("SQLite", None)]
    if os.environ.get("LEASEHOLD_POSTGRES_URL"):
        stores.append(("PostgreSQL", os.environ["LEASEHOLD_POSTGRES_URL"]))
    tmp = tempfile.mkdtemp(prefix="leasehold-live-vs-sim-")
    for workers in [int(w) for w in a.workers.split(",")]:
        path = os.path.join(tmp, f"rush-{workers}.json")
        scenario(workers, path)
        sims = [
            run_json([a.leasehold, "run", path, "--seed", str(seed), "--json"])
            for seed in range(1, a.sim_seeds + 1)
        ]
        lives = []
        for name, url in stores:
            url = url or "sqlite:" + os.path.join(tmp, f"rush-{workers}.db")
            live = run_json(
                [a.leasehold, "live", path, "--store", url, "--seed", "1",
                 "--speed", a.speed, "--reset", "--json"]
            )
            lives.append((name, live))
        header = ["friday-rush, no faults, %d workers" % workers, "simulated (mean of %d seeds)" % len(sims)]
        for name, live in lives:
            header += [name, "diff"]
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for kind in KINDS:
            sim = sum(value(r, kind) for r in sims) / len(sims)
            row = [kind[0], f"{sim:,.0f}"]
            for name, live in lives:
                got = value(live, kind)
                diff = (got - sim) / sim * 100 if sim else 0.0
                row += [f"{got:,.0f}", f"{diff:+.1f} %"]
            print("| " + " | ".join(row) + " |")
        verdicts = ", ".join(
            f"{name}: {'ok' if live['ok'] else ','.join(live['invariants'])}, "
            f"{live['live']['store_requests_per_s']:,.0f} requests/s"
            for name, live in lives
        )
        print(f"\nlive verdicts: {verdicts}\n")
        hb = ("heartbeat writes / min", None)
        every = ("all store requests", None)
        for name, live in lives:
            points.append({
                "store": name,
                "workers": workers,
                "speed": int(a.speed),
                "heartbeat_writes_per_min": round(value(live, hb), 1),
                "simulated_heartbeat_writes_per_min": round(
                    sum(value(r, hb) for r in sims) / len(sims), 1),
                "store_requests": value(live, every),
                "simulated_store_requests": round(
                    sum(value(r, every) for r in sims) / len(sims)),
                "ok": live["ok"],
            })
    if a.points_out:
        with open(a.points_out, "w") as f:
            json.dump({"points": points}, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
