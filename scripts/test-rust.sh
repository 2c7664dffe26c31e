#!/usr/bin/env bash
# The Rust tests of the workspace (dev profile, built by scripts/build.sh): the test binaries
# run POLYLOCK_RUST_JOBS at a time (default 3: they wait on servers, not on the CPU), each in its
# package's directory as `cargo test` runs them, its output kept together; then the doc tests.
# Needs the servers of scripts/servers.sh (started here when run alone).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
eval "$(bash scripts/servers.sh ensure)"
jobs=${POLYLOCK_RUST_JOBS:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The binaries and their packages' directories, from cargo's own list (builds what is missing).
cargo test --workspace --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["profile"]["test"] and m.get("executable"):
        print(os.path.dirname(m["manifest_path"]), m["executable"], m["target"]["name"], sep="\t")
' >"$out/list"
if [ ! -s "$out/list" ]; then
  echo "no Rust test binaries (the build failed?)"
  cargo test --workspace --no-run
  exit 1
fi

run_one() { # DIR EXE NAME: run one test binary, print its output in one piece
  local dir=$1 exe=$2 name=$3 rc=0
  # A binary still running after 600 s is stopped (exit 124): the log names the one that hung.
  (cd "$dir" && timeout -k 10 600 "$exe") >"$OUT/$name.log" 2>&1 || rc=$?
  [ "$rc" != 124 ] || echo "$name: still running after 600 s: stopped; 1 failed" >>"$OUT/$name.log"
  { echo "== Rust: $name (exit $rc)"; cat "$OUT/$name.log"; } | flock "$OUT/print.lock" cat
  return $rc
}
export -f run_one
export OUT=$out
status=0
tr '\t' '\n' <"$out/list" | xargs -d '\n' -n 3 -P "$jobs" bash -c 'run_one "$@"' _ || status=1

echo "== Rust: doc tests"
cargo test --workspace --doc 2>&1 || status=1
exit $status
