#!/usr/bin/env bash
# The hunt's mutation score: mutants of crates/protocol that nobody chose
# (cargo-mutants'), each judged by one test, tests/mutation_hunt.rs (the
# correct protocol, as mutated, hunted on every hunt scenario at CI's hunt
# budget, with the cost budget and the watchdog). A mutant the hunt does not
# fail is missed. See docs/variants.md ("Mutants nobody chose").
#
#   scripts/mutation-score.sh                 the fixed sample: shard 1 of 8,
#                                             dealt round-robin from
#                                             cargo-mutants' list in source order
#   scripts/mutation-score.sh --shard 3/8     another shard (all 8: every mutant)
#   scripts/mutation-score.sh --in-diff FILE  every mutant on the lines a diff
#                                             touches (the pull-request job)
#
# Options (.cargo/mutants.toml holds the rest: the test, the profile, the
# exclusions, the timeouts): --out DIR (default target/mutation-score),
# --jobs N (mutants built and tested at once; default 1: each already uses
# both cores of a small machine). Needs cargo-mutants:
#   cargo install --locked cargo-mutants
# Prints caught, missed, unviable and timeouts, and each missed mutant. Exits
# 0 when the mutants ran (whatever they scored), 2 on bad arguments, and
# cargo-mutants' own code when it could not run them (1, or 4: the tests fail
# on the unmutated tree).
set -euo pipefail
cd "$(dirname "$0")/.."

shard="1/8"
diff=""
out="target/mutation-score"
jobs=1
while [ $# -gt 0 ]; do
    case "$1" in
        --shard) shard="${2:?--shard needs K/N}"; shift 2 ;;
        --in-diff) diff="${2:?--in-diff needs a diff file}"; shift 2 ;;
        --out) out="${2:?--out needs a directory}"; shift 2 ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        *) echo "error: unknown argument $1 (see the comment at the top of $0)" >&2; exit 2 ;;
    esac
done
if ! [[ "$shard" =~ ^[0-9]+/[0-9]+$ ]]; then
    echo "error: --shard $shard: write K/N, e.g. 1/8" >&2
    exit 2
fi
if ! command -v cargo-mutants >/dev/null; then
    echo "error: cargo-mutants is not installed: cargo install --locked cargo-mutants" >&2
    exit 2
fi

# cargo-mutants' --shard counts from 0; ours, like `sweep --shard`, from 1.
k=${shard%/*}
n=${shard#*/}
if [ "$k" -lt 1 ] || [ "$k" -gt "$n" ]; then
    echo "error: --shard $shard: K must be from 1 to N" >&2
    exit 2
fi
if [ -n "$diff" ]; then
    select=(--in-diff "$diff")
    what="every mutant on the lines $diff touches"
else
    select=(--shard "$((k - 1))/$n" --sharding round-robin)
    what="shard $shard of the mutants (round-robin, source order)"
fi

mkdir -p "$out"
echo "mutation score of the hunt: $what"
echo "command: cargo mutants -p leasehold-protocol ${select[*]} --jobs $jobs --output $out"
set +e
nice -n 10 cargo mutants -p leasehold-protocol "${select[@]}" --no-shuffle \
    --jobs "$jobs" --output "$out" --colors never --no-times
code=$?
set -e
# 0: all caught; 2: some missed; 3: some timed out. Anything else: no score.
case "$code" in
    0 | 2 | 3) ;;
    *) echo "error: cargo-mutants exited $code without a score (see $out/mutants.out/debug.log)" >&2; exit "$code" ;;
esac

result="$out/mutants.out"
count() {
    if [ -f "$result/$1.txt" ]; then grep -c . "$result/$1.txt" || true; else echo 0; fi
}
caught=$(count caught)
missed=$(count missed)
unviable=$(count unviable)
timeouts=$(count timeout)
tested=$((caught + missed + timeouts))
echo
echo "caught $caught, missed $missed, unviable $unviable, timeouts $timeouts"
if [ "$tested" -gt 0 ]; then
    # Timeouts count as caught: the hunt did not pass them.
    echo "score: $(( (caught + timeouts) * 1000 / tested / 10 )).$(( (caught + timeouts) * 1000 / tested % 10 )) % of $tested viable mutants failed the hunt"
fi
if [ "$missed" -gt 0 ]; then
    echo
    echo "missed (the hunt passed them):"
    sed 's/^/  /' "$result/missed.txt"
fi
exit 0
