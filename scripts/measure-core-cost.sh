#!/usr/bin/env bash
# What a friday-rush run costs without its checks: the trace hash and the
# checker, each removed and both, on the same runs (docs/performance.md,
# "What the checks cost").
#
#   scripts/measure-core-cost.sh [ROUNDS]   measure HEAD (default 12 rounds)
#   scripts/measure-core-cost.sh --check-patch   only check that the patch applies
#
# It never touches the working tree: it checks HEAD out into a temporary
# worktree, applies scripts/core-cost.patch there (a null observer stopped at
# the checked run's event count, a compile-time switch that skips record
# hashing, and examples/core_cost.rs), builds the example twice into
# target/core-cost/, proves the unchecked runs are the checked ones (same
# events, same trace hashes), then times the four configurations
# interleaved, ROUNDS times each, seeds 1..=20 seven times per round, and
# prints the medians. With valgrind installed it also counts instructions
# per event (callgrind, one batch each).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
patch="$repo/scripts/core-cost.patch"

if [[ "${1:-}" == "--check-patch" ]]; then
    git apply --check "$patch"
    echo "scripts/core-cost.patch applies to the working tree"
    exit 0
fi
rounds=${1:-12}
if ! [[ "$rounds" =~ ^[1-9][0-9]{0,3}$ ]]; then
    echo "ROUNDS must be a whole number from 1 to 9999, not '$rounds'" >&2
    exit 2
fi

work=$(mktemp -d)
tree="$work/tree"
cleanup() {
    git -C "$repo" worktree remove --force "$tree" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
git worktree add --detach -q "$tree" HEAD
git -C "$tree" apply "$patch"
echo "measuring HEAD $(git rev-parse --short HEAD) (uncommitted changes are not measured)"

export CARGO_TERM_COLOR=never
(cd "$tree" && CARGO_TARGET_DIR="$repo/target/core-cost/hashed" \
    cargo build --release --quiet --example core_cost)
(cd "$tree" && LEASEHOLD_STRIP_HASH=1 CARGO_TARGET_DIR="$repo/target/core-cost/unhashed" \
    cargo build --release --quiet --example core_cost)
hashed="$repo/target/core-cost/hashed/release/examples/core_cost"
unhashed="$repo/target/core-cost/unhashed/release/examples/core_cost"
"$hashed" check

configs=("hashed full" "hashed unchecked" "unhashed full" "unhashed unchecked")
label() {
    case "$1" in
        "hashed full") echo "as shipped (hash and checker)" ;;
        "hashed unchecked") echo "no checker" ;;
        "unhashed full") echo "no trace hash" ;;
        "unhashed unchecked") echo "neither" ;;
    esac
}
results="$work/results"
for _ in $(seq "$rounds"); do
    for config in "${configs[@]}"; do
        set -- $config
        bin=$hashed
        [[ $1 == unhashed ]] && bin=$unhashed
        echo "$config: $("$bin" "$2" 7)" >>"$results"
    done
done

echo
echo "friday-rush seeds 1..=20, medians of $rounds interleaved rounds (load average $(cut -d' ' -f1-3 /proc/loadavg)):"
for config in "${configs[@]}"; do
    grep "^$config: " "$results" | grep -oE '[0-9.]+ ns/event' | cut -d' ' -f1 | sort -n |
        awk -v name="$(label "$config")" '{ns[NR] = $1} END {
            m = ns[int((NR + 1) / 2)];
            printf "  %-30s %6.1f ns/event  %5.2f M events/s  (best %.1f, worst %.1f)\n", name, m, 1000 / m, ns[1], ns[NR]
        }'
done

if command -v valgrind >/dev/null; then
    echo
    echo "instructions (callgrind, one batch of seeds 1..=20):"
    for config in "${configs[@]}"; do
        set -- $config
        bin=$hashed
        [[ $1 == unhashed ]] && bin=$unhashed
        out=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            --toggle-collect='core_cost::batch' "$bin" "$2" 1 2>&1)
        refs=$(grep -oE 'I +refs: +[0-9,]+' <<<"$out" | grep -oE '[0-9,]+$' | tr -d ,)
        events=$(grep -oE '^[a-z]+: [0-9]+ events' <<<"$out" | grep -oE '[0-9]+ events' | cut -d' ' -f1)
        awk -v name="$(label "$config")" -v refs="$refs" -v events="$events" \
            'BEGIN {printf "  %-30s %6.1f M instructions, %d per event\n", name, refs / 1e6, refs / events}'
    done
fi
