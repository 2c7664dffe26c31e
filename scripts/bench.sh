#!/usr/bin/env bash
# Every benchmark of polylock, each beside its peers in the same run, and the book's performance
# page written from their reports (docs/src/performance.md: the date, the machine, the versions,
# one table per benchmark). Nothing on that page is typed by hand.
#
#   scripts/bench.sh [--short] [--note TEXT] [--only rust,sql,python,node,java,c]
#
#   rust     core/benches/lock.rs: Redis, ZooKeeper and etcd, each beside its cheapest round trip
#            (PING, `exists /`, a bare etcd-client loop, etcdctl lock) and a bare redis-rs pair
#   sql      core/benches/sql.rs: MariaDB GET_LOCK and PostgreSQL advisory locks beside bare loops
#   python   bindings-python/bench.py: beside redis-py's Lock, redis.asyncio (asyncio, uvloop),
#            pottery's Redlock
#   node     bindings-node/bench: beside node-redlock and redis-semaphore (ioredis)
#   java     bindings-java/bench.sh: beside Redisson in the same JVM
#   c        bindings-c/bench.sh: the C boundary beside the Rust API
# --short runs each for about a second (a wider spread; a quick page); the default runs longer.
# --note TEXT is printed on the page (e.g. what else the machine was doing). Needs the servers of
# scripts/servers.sh (started if missing) and the build of scripts/build.sh (the wheel, the addon).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
logs="$target/bench-logs"
short=0
note=""
only="rust sql python node java c"
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1 ;;
    --note) note=$2; shift ;;
    --only) only=${2//,/ }; shift ;;
    *) echo "unknown argument '$1'" >&2; exit 64 ;;
  esac
  shift
done
if [ "$short" = 1 ]; then
  seconds=${POLYLOCK_BENCH_SECONDS:-1} pairs=${POLYLOCK_BENCH_PAIRS:-300} rounds=2 mode="short"
else
  seconds=${POLYLOCK_BENCH_SECONDS:-3} pairs=${POLYLOCK_BENCH_PAIRS:-1000} rounds=6 mode="full"
fi
wanted() { [[ " $only " == *" $1 "* ]]; }
rm -rf "$logs"
mkdir -p "$logs"
# When and what was measured, for the page (written before the first benchmark).
printf 'date=%s\ncommit=%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(git describe --always --dirty)" >"$logs/run.txt"

bash scripts/servers.sh start >/dev/null || { echo "the servers did not start"; exit 1; }
eval "$(bash scripts/servers.sh env)"
url=${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}

status=0
# bench NAME COMMAND...: run one benchmark, its report into $logs/NAME.txt, its command beside it.
bench() {
  local name=$1
  shift
  echo "== $name: $*"
  printf '%s\n' "$*" >"$logs/$name.cmd"
  local t0=$SECONDS
  if "$@" >"$logs/$name.txt" 2>"$logs/$name.err"; then
    echo "ok" >"$logs/$name.status"
  else
    echo "failed (exit $?)" >"$logs/$name.status"
    status=1
  fi
  echo "$((SECONDS - t0))" >"$logs/$name.seconds"
  cat "$logs/$name.txt"
  [ "$(cat "$logs/$name.status")" = ok ] || { echo "== $name $(cat "$logs/$name.status")"; tail -20 "$logs/$name.err"; }
}

# Without -p: the workspace's one feature set, so the release build of scripts/build.sh is reused.
if wanted rust || wanted sql; then
  cargo bench --quiet --no-run --bench lock --bench sql 2>/dev/null || cargo bench --no-run --bench lock --bench sql
fi
if wanted rust; then
  bench rust cargo bench --quiet --bench lock -- --seconds "$seconds"
fi
if wanted sql; then
  bench sql cargo bench --quiet --bench sql -- --pairs "$pairs" --rounds "$rounds"
fi
if wanted python; then
  python3 -m pip install --quiet --disable-pip-version-check redis pottery uvloop >/dev/null 2>&1 || true
  bench python python3 bindings-python/bench.py --url "$url" --seconds "$seconds" -n "$pairs"
fi
if wanted node; then
  (cd bindings-node/bench && npm install --no-audit --no-fund --loglevel=error >/dev/null 2>&1)
  bench node bash -c "cd bindings-node/bench && exec node bench.js '$url' '$seconds'"
fi
if wanted java; then
  bench java bash bindings-java/bench.sh "$url" "$seconds"
fi
if wanted c; then
  bench c bash bindings-c/bench.sh "$url"
fi

python3 scripts/lib/bench-page.py --logs "$logs" --mode "$mode" --note "$note" --out docs/src/performance.md || status=1
echo "wrote docs/src/performance.md"
exit $status
