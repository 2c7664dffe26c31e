#!/usr/bin/env bash
# The randomized checker (faults/chaos.py): workers in Rust, Python, Node and Java, CLI holders and
# a force-unlocking operator do seeded random operations on every primitive of every backend
# against the local servers (started here if they are not running), each section reported to a
# fenced resource; then it counts double holders, over-permit, untold losses and what is left on
# the servers, cleans up, and prints one summary line:
#   chaos: N operations, N sections, N double holders, N over-permit, N untold, N left (seed S)
# Exit status 0 only when the last four are 0 (and no worker failed); a failing run prints the
# command that replays it.
#
#   scripts/chaos.sh [--seconds N | --minutes M] [--seed S] [--self-test] [--no-java] [--no-node]
#
# --seed S replays a run's decisions (its first line names the seed); --self-test plants a rogue
# writer, an over-permit, a leaked Redis lock and leftovers on ZooKeeper, etcd, MySQL and
# PostgreSQL, and must fail naming each (exit 1; 3 if the checker missed one or saw more).
# The workers come from the one release build (scripts/build.sh), built here only if missing;
# ChaosWorker.java is compiled against the JAR on every run (a second).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
py=${PYTHON:-python3}

if ! started=$(bash scripts/servers.sh start 2>&1); then
  echo "$started" >&2
  exit 1
fi
eval "$(bash scripts/servers.sh env)"

[ -x "$target/release/polylock" ] || bash scripts/build.sh release
[ -x "$target/debug/examples/chaos_worker" ] || cargo build --workspace --example chaos_worker --quiet
"$py" -c "import polylock" 2>/dev/null || bash scripts/build.sh python
args=()
if command -v node >/dev/null; then
  [ -f bindings-node/polylock.node ] || bash scripts/build.sh node
else
  echo "chaos: no Node.js here; the Node worker sits out" >&2
  args+=(--no-node)
fi
if command -v javac >/dev/null && command -v mvn >/dev/null; then
  jar=bindings-java/target/polylock-0.1.0.jar
  [ -f "$jar" ] || bash scripts/build.sh java
  mkdir -p "$target/chaos-java"
  javac -d "$target/chaos-java" -cp "$jar" faults/ChaosWorker.java
else
  echo "chaos: no JDK and Maven here; the Java worker sits out" >&2
  args+=(--no-java)
fi
exec "$py" faults/chaos.py "${args[@]}" "$@"
