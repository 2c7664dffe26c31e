#!/usr/bin/env bash
# The main demo: one flash sale (seed 002), five runtimes, one lock. Installs and starts Redis,
# ZooKeeper, MariaDB and PostgreSQL on 127.0.0.1 when they are missing, builds the buyers
# of examples/ (Rust, C, Python, Node, Java) from the one release build (scripts/build.sh), then runs
# scripts/lib/demo.py: round 1 on Redis, round 2 on ZooKeeper, round 3 on MariaDB, round 4 on
# PostgreSQL (servers.sh starts both), a table, the overlap and fencing-token checks, and
# demo-timeline.svg. Options go to demo.py (try --help).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
for a in "$@"; do
  if [ "$a" = --help ] || [ "$a" = -h ]; then exec python3 scripts/lib/demo.py --help; fi
done

log() { echo "demo: $*" >&2; }
bash scripts/servers.sh start >&2
eval "$(bash scripts/servers.sh env)"
target="${CARGO_TARGET_DIR:-$root/target}"

log "building the Rust buyer and the C library (scripts/build.sh release)"
bash scripts/build.sh release >&2
mkdir -p "$target/demo"
cc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/seckill_buyer.c "$target/release/libpolylock.a" \
  -lhiredis -lpthread -ldl -lm -o "$target/demo/seckill_buyer_c"
log "installing the Python package, the Node example and the JAR (scripts/build.sh; cargo finds them built)"
bash scripts/build.sh python node java >&2
python3 -m pip install --quiet --disable-pip-version-check redis >&2
mvn -B -q -f examples/java/pom.xml package dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2
export POLYLOCK_DEMO_JAVA_CP="$root/examples/java/target/classes:$(cat examples/java/target/classpath.txt)"
export POLYLOCK_DEMO_RUST="$target/release/examples/seckill" POLYLOCK_DEMO_C="$target/demo/seckill_buyer_c"
exec python3 scripts/lib/demo.py --url "$POLYLOCK_REDIS_URL" --url "$POLYLOCK_ZK_URL" "$@"
