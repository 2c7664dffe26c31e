#!/usr/bin/env bash
# What an operator sees, end to end, on the real servers of scripts/servers.sh and the release
# build (scripts/build.sh, which the test suites share):
#   - a lock held by a Python process (service "py-holder") shows with its identity (service,
#     host, pid, runtime) in `polylock status --match` on Redis and ZooKeeper, and its waiter
#     (a `polylock lock --fair` with POLYLOCK_SERVICE=cli-waiter) queued behind it (fair locks
#     keep their queue on Redis; every ZooKeeper lock does);
#   - `polylock top` under tmux draws both, switches its order with `s` and quits on `q`;
#   - `polylock serve`: /metrics parses with prometheus_client's parser and says the lock is
#     held with one waiter; a bearer token is enforced; and the live page in a real headless
#     Chromium shows the hold, then its waiter, then the handoff, each within a few seconds
#     (scripts/lib/operate-page.js), with screenshots kept in $target/operate/.
# Exit 1 on any failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
polylock="$target/release/polylock"
out="$target/operate"
tools="${POLYLOCK_TOOLS:-$HOME/.cache/polylock/tools}"
playwright_version=1.65.1
mkdir -p "$out"
eval "$(bash scripts/servers.sh ensure)" # alone: the servers (scripts/test.sh started them)
eval "$(bash scripts/servers.sh env)"
redis=${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}
zk=${POLYLOCK_ZK_URL:-zk://127.0.0.1:2181}

for tool in tmux chromium; do
  command -v "$tool" >/dev/null || bash scripts/setup.sh browser || { echo "operate: $tool is missing (scripts/setup.sh browser puts it there)"; exit 1; }
done
python3 -c 'import prometheus_client' 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check prometheus_client
node_tools="$tools/node"
if [ ! -d "$node_tools/node_modules/playwright-core" ]; then
  mkdir -p "$node_tools"
  (cd "$node_tools" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "playwright-core@$playwright_version" >/dev/null)
fi

pids=()
session="polylock-operate-$$"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  tmux kill-session -t "$session" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "operate: FAIL: $*" >&2; exit 1; }

# A Python process that holds NAME on URL as service py-holder until its stdin closes, then
# releases it. It prints "held" when it holds the lock.
hold_in_python() { # URL NAME FIFO
  python3 -c '
import sys, polylock
url, name = sys.argv[1], sys.argv[2]
client = polylock.connect(url, service="py-holder")
lock = client.fair_lock(name)
lock.acquire()
print("held", flush=True)
sys.stdin.read()
lock.release()
client.close()
' "$1" "$2" <"$3" &
  pids+=($!)
}

check_status() { # URL PATTERN NAME
  local line
  for _ in $(seq 50); do
    line=$("$polylock" status --json --url "$1" --match "$2" 7>&-)
    if python3 - "$line" "$3" <<'PY'; then return 0; fi
import json, sys
lines = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
mine = [l for l in lines if l["name"] == sys.argv[2]]
assert len(mine) == 1, lines
l = mine[0]
assert l["locked"] and len(l["holders"]) == 1, l
who = l["holders"][0]["identity"]
assert who["service"] == "py-holder" and who["runtime"].startswith("python "), who
assert isinstance(who["pid"], int) and who["host"], who
assert len(l["waiters"]) == 1 and l["waiter_identities"][0]["service"] == "cli-waiter", l
PY
    sleep 0.2
  done
  echo "$line"
  return 1
}

for url in "$redis" "$zk"; do
  case "$url" in
    zk*) name="/polylock-operate-$$/orders-42"; pattern="/polylock-operate-$$/*" ;;
    *) name="operate-$$:orders:42"; pattern="operate-$$:*" ;;
  esac
  fifo="$out/hold-$$.fifo"
  rm -f "$fifo"; mkfifo "$fifo"
  hold_in_python "$url" "$name" "$fifo"
  exec 7>"$fifo" # keeps the holder's stdin open (every process started next closes it: 7>&-)
  holder=${pids[-1]}
  for _ in $(seq 100); do
    "$polylock" status --url "$url" --fair "$name" | grep -q '"locked":true' && break
    sleep 0.1
  done
  POLYLOCK_SERVICE=cli-waiter "$polylock" lock --url "$url" --fair -w 60s "$name" >"$out/waiter.out" 7>&- &
  waiter=$!
  pids+=($waiter)
  check_status "$url" "$pattern" "$name" || fail "status --match on $url does not show the Python holder and its waiter"
  echo "operate: status --match on ${url%%://*}: the Python holder (py-holder) and the waiter (cli-waiter) in order"

  if [ "${url%%://*}" = redis ]; then
    # top, in a real terminal (tmux), on the same moment.
    tmux new-session -d -s "$session" -x 160 -y 20 "$polylock top --url $url --match '$pattern'" 7>&-
    seen=""
    for _ in $(seq 50); do
      seen=$(tmux capture-pane -p -t "$session")
      grep -q "py-holder" <<<"$seen" && grep -q "$name" <<<"$seen" && break
      sleep 0.2
    done
    grep -q "py-holder" <<<"$seen" || { echo "$seen"; fail "top does not show the holder"; }
    grep -q "cli-waiter" <<<"$seen" || { echo "$seen"; fail "top does not show the next waiter"; }
    grep -q "by longest hold" <<<"$seen" || { echo "$seen"; fail "top's header"; }
    printf '%s\n' "$seen" >"$out/top.txt"
    tmux send-keys -t "$session" s
    sleep 1.5
    tmux capture-pane -p -t "$session" | grep -q "by most waiters" || fail "top did not switch its order on s"
    tmux send-keys -t "$session" q
    for _ in $(seq 30); do tmux has-session -t "$session" 2>/dev/null || break; sleep 0.1; done
    ! tmux has-session -t "$session" 2>/dev/null || fail "top did not quit on q"
    echo "operate: top under tmux shows the holder and the next waiter, s reorders, q quits ($out/top.txt)"
  fi

  exec 7>&- # the holder releases; the waiter gets the lock
  wait "$holder" || fail "the Python holder failed"
  for _ in $(seq 100); do grep -q fencing_token "$out/waiter.out" && break; sleep 0.1; done
  grep -q fencing_token "$out/waiter.out" || fail "the waiter did not get the lock after the release"
  kill "$waiter"; wait "$waiter" || true
  rm -f "$fifo"
done

# serve: /metrics, the token, and the live page in Chromium (which drives its own holders).
port_file="$out/serve.out"
"$polylock" serve --url "$redis" --match "operate-page-$$:*" --listen 127.0.0.1:0 --interval 300ms \
  --token "t-$$" >"$port_file" 2>&1 &
pids+=($!)
base=""
for _ in $(seq 100); do
  base=$(sed -n 's#^polylock serve: \(http://[^/]*\)/ .*#\1#p' "$port_file")
  [ -n "$base" ] && break
  sleep 0.1
done
[ -n "$base" ] || { cat "$port_file"; fail "serve did not start"; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/metrics")
[ "$code" = 401 ] || fail "serve answered $code without its token"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer wrong" "$base/metrics")
[ "$code" = 401 ] || fail "serve answered $code to a wrong token"
POLYLOCK_BASE="$base" POLYLOCK_TOKEN="t-$$" POLYLOCK_NAME="operate-page-$$:orders:7" \
  POLYLOCK_URL="$redis" POLYLOCK_CLI="$polylock" POLYLOCK_OUT="$out" \
  PLAYWRIGHT_CORE="$node_tools/node_modules/playwright-core" node scripts/lib/operate-page.js ||
  fail "the live page"
echo "operate: PASS"
