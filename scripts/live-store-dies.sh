#!/usr/bin/env bash
# A PostgreSQL server that dies mid-run (issue 39: "the run reports it as a
# store outage, and nothing is lost or hidden"). Runs friday-rush live on
# the cluster in DIR (scripts/local-postgres.sh) with its simulated faults
# off (scenarios/live/friday-rush-calm.json: the fault under test is the
# server), crashes the server a few seconds in, brings it back two seconds
# later, and requires of the run:
#   - exit 0 and an `ok (live)` verdict: every task done, every invariant held;
#   - the outage reported as one (`STORE OUTAGE (real)`, failures counted);
#   - its trace judged again to the same verdict (`replay --check`).
#
#   scripts/live-store-dies.sh DIR [LEASEHOLD_BINARY]
set -euo pipefail
dir=${1:?usage: live-store-dies.sh DIR [LEASEHOLD_BINARY]}
bin=${2:-./target/debug/leasehold}
here=$(dirname "$0")
url=${LEASEHOLD_POSTGRES_URL:?set LEASEHOLD_POSTGRES_URL (scripts/local-postgres.sh start DIR)}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$bin" live scenarios/live/friday-rush-calm.json --store "$url" --speed 10 --seed 1 --reset \
    --trace "$out/live.jsonl" > "$out/report.txt" 2>&1 &
live=$!
sleep 8
echo "crashing the PostgreSQL server in $dir mid-run" >&2
"$here/local-postgres.sh" kill "$dir"
sleep 2
"$here/local-postgres.sh" start "$dir" > /dev/null
set +e
wait "$live"
code=$?
set -e
cat "$out/report.txt"
fail() { echo "live-store-dies: $1" >&2; exit 1; }
[ "$code" = 0 ] || fail "the live run exited $code, not 0"
grep -q '^ok (live):' "$out/report.txt" || fail "no ok verdict"
grep -q 'STORE OUTAGE (real)' "$out/report.txt" || fail "the server's death was not reported as a store outage"
"$bin" replay --check "$out/live.jsonl" || fail "replay --check disagrees with the run's verdict"
echo "live-store-dies: the server died mid-run; the outage was reported, every task done once"
