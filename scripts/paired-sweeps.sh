#!/usr/bin/env bash
# Two leasehold binaries timed against each other on a shared, noisy machine
# (docs/performance.md, "Wall time, paired"): each pair runs both at the same
# time, one per core (taskset), so both see the same minute of the host's
# noise; the cores swap every pair. Prints each pair's seeds/s and the ratio
# B/A, then the medians and how many pairs B won.
#
#   scripts/paired-sweeps.sh PAIRS BIN_A BIN_B [SEEDS]   (SEEDS default 301..700)
#
# Copy the binaries out of target/ first: a build in between would replace
# them mid-measurement.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    echo "usage: scripts/paired-sweeps.sh PAIRS BIN_A BIN_B [SEEDS]" >&2
    exit 2
}
[[ $# -ge 3 && $# -le 4 ]] || usage
pairs=$1
bin_a=$2
bin_b=$3
seeds=${4:-301..700}
if ! [[ "$pairs" =~ ^[1-9][0-9]{0,2}$ ]]; then
    echo "PAIRS must be a whole number from 1 to 999, not '$pairs'" >&2
    exit 2
fi
for bin in "$bin_a" "$bin_b"; do
    [[ -x "$bin" ]] || { echo "not an executable: $bin" >&2; exit 2; }
done
[[ $(nproc) -ge 2 ]] || { echo "needs two cores, one per binary" >&2; exit 2; }
command -v taskset > /dev/null || { echo "needs taskset (util-linux)" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
sweep() {
    taskset -c "$1" "$2" sweep scenarios/friday-rush.json --seeds "$seeds" \
        --jobs 1 --progress off > "$3" 2>&1
}
seeds_per_s() {
    grep -oE '[0-9.]+ seeds/s' "$1" | cut -d' ' -f1
}

printf '%8s %8s %7s\n' "A" "B" "B/A"
for ((i = 1; i <= pairs; i++)); do
    core_a=$((i % 2))
    core_b=$((1 - core_a))
    sweep "$core_a" "$bin_a" "$scratch/a" &
    sweep "$core_b" "$bin_b" "$scratch/b" &
    wait
    a=$(seeds_per_s "$scratch/a")
    b=$(seeds_per_s "$scratch/b")
    [[ -n "$a" && -n "$b" ]] || { echo "a sweep printed no seeds/s:"; cat "$scratch/a" "$scratch/b"; exit 1; } >&2
    echo "$a $b" >> "$scratch/pairs"
    awk -v a="$a" -v b="$b" 'BEGIN { printf "%8.1f %8.1f %7.3f\n", a, b, b / a }'
done
# Medians of A, B and the pair ratios; pairs B won.
awk '
    function median(v, n,   i, j, t) {
        for (i = 2; i <= n; i++) {
            t = v[i]
            for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]
            v[j + 1] = t
        }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { n++; a[n] = $1; b[n] = $2; r[n] = $2 / $1; won += ($2 > $1) }
    END {
        printf "medians: A %.1f, B %.1f seeds/s; B/A %.3f (median pair); B faster in %d of %d\n",
            median(a, n), median(b, n), median(r, n), won, n
    }' "$scratch/pairs"
