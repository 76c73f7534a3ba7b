#!/usr/bin/env bash
# A profile-guided build of the leasehold CLI: about as fast as
# `cargo build --release` on friday-rush since the plain build's hand-made
# layout, ~4 % faster on the 10,000-worker hour (docs/performance.md,
# "Profile-guided build").
#
#   scripts/build-pgo.sh                      # builds target/pgo/leasehold
#   scripts/build-pgo.sh --bench friday_rush  # then runs that criterion bench on the profile
#
# The work is cargo-pgo's (installed if missing): an instrumented build, a
# fixed training set (every shipped scenario, seeded, one job, so the
# profile is the same on every machine), an optimised build from the merged
# profile. Then the binary is checked against the golden trace hashes: PGO
# changes code layout and inlining, never what a run computes, and the
# check proves it for the binary this script hands you.
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")/.."

die() { echo "error: $*" >&2; exit 2; }

# The names Cargo.toml declares as [[bench]]: nothing else is a bench.
benches=$(sed -n '/^\[\[bench\]\]/,/^$/s/^name = "\(.*\)"/\1/p' Cargo.toml | tr '\n' ' ')
benches=${benches% }
bench=""
while [ $# -gt 0 ]; do
    case "$1" in
        --bench)
            [ $# -ge 2 ] || die "--bench needs a bench name ($benches)"
            case " $benches " in
                *" $2 "*) bench="$2" ;;
                *) die "--bench: no bench named '$2' (known: $benches)" ;;
            esac
            shift 2
            ;;
        -h|--help)
            # The header comment: from line 2 up to the first line of code.
            sed -n '2,/^[^#]/p' "$self" | sed '$d' | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown argument '$1' (known: --bench NAME, --help)" ;;
    esac
done
command -v cargo >/dev/null || die "cargo is not installed"
# Pinned, so every machine builds the same way.
cargo_pgo_version=0.3.0
installed=$(cargo pgo --version 2>/dev/null | awk '{print $2}' || true)
if [ "$installed" != "$cargo_pgo_version" ]; then
    echo "== installing cargo-pgo $cargo_pgo_version${installed:+ (replacing $installed)}"
    cargo install cargo-pgo --locked --version "$cargo_pgo_version"
fi
# The profile must be merged by the llvm-profdata of rustc's own LLVM, from
# the toolchain's llvm-tools component, where cargo-pgo looks first (it
# falls back to any llvm-profdata on PATH, whose format may not match).
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    echo "== installing the toolchain's llvm-tools (llvm-profdata)"
    rustup component add llvm-tools ||
        die "llvm-profdata not found at $profdata, and rustup could not add llvm-tools"
    # Not where expected: cargo-pgo would quietly take another one.
    [ -x "$profdata" ] || die "rustup added llvm-tools, but $profdata is still missing"
fi
# Wherever cargo puts builds here (CARGO_TARGET_DIR, a config file).
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -nE 's/.*"target_directory":"([^"]*)".*/\1/p')
[ -n "$target_dir" ] || die "cannot find cargo's target directory in cargo metadata"
# cargo-pgo builds for an explicit --target, so its binaries live apart from
# `cargo build --release`'s.
built="$target_dir/$host/release/leasehold"
out="$target_dir/pgo"
mkdir -p "$out"

echo "== 1/4 instrumented build"
cargo pgo clean
cargo pgo build -- --bin leasehold --locked

echo "== 2/4 training run"
# friday-rush (the main job) weighs most; every other scenario is there so
# the profile covers their paths too (task-mode leases, outages, skew...).
# Exit 1 (violations found) is expected: unfenced-service demonstrates an
# impossibility and fails by design. Anything else stops the build.
train() {
    local rc=0
    "$built" sweep "$@" --jobs 1 >/dev/null || rc=$?
    [ "$rc" -le 1 ] || die "training sweep $* exited $rc"
}
train scenarios/friday-rush.json --seeds 1..200
for scenario in scenarios/*.json; do
    train "$scenario" --seeds 1..30
done

echo "== 3/4 optimised build from the profile"
cargo pgo optimize build -- --bin leasehold --locked
cp "$built" "$out/leasehold"

echo "== 4/4 the golden trace hashes, from the built binary"
golden=tests/golden/friday-rush-correct.txt
results="$out/golden-check.jsonl"
rm -f "$results"
rc=0
"$out/leasehold" sweep scenarios/friday-rush.json --seeds 1..20 --jobs 1 --out "$results" >/dev/null || rc=$?
if [ "$rc" != 0 ]; then
    echo "error: the profile-guided binary's sweep of friday-rush seeds 1..20 exited $rc" >&2
    exit 1
fi
# One "seed hash events" line per result, in seed order, as the golden file has them.
actual=$(sed -E 's/.*"seed":([0-9]+),.*"events":([0-9]+),"trace_hash":"([0-9a-f]+)".*/\1 \3 \2/' "$results" | sort -n)
if [ "$actual" != "$(cat "$golden")" ]; then
    diff <(echo "$actual") "$golden" >&2 || true
    echo "error: the profile-guided binary does not reproduce $golden" >&2
    exit 1
fi
echo "built $out/leasehold: friday-rush seeds 1..20 match $golden"

if [ -n "$bench" ]; then
    echo "== bench $bench on the profile (criterion's data in $out/criterion)"
    # Measured in docs/performance.md, whatever the profile.
    echo "   (read run / floor against a plain \`cargo bench\`'s floor: this build's floor runs ~5 % slow)"
    # Apart from a plain `cargo bench`'s target/criterion, so neither is
    # compared against the other's baseline.
    CRITERION_HOME="$out/criterion" cargo pgo optimize bench -- --bench "$bench" --locked
fi
