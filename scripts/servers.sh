#!/usr/bin/env bash
# Install (Debian packages) and start the servers polylock's tests, demos and benchmarks use,
# on 127.0.0.1 only. A server already answering on its port is reused.
#
#   scripts/servers.sh install     apt-get install what is missing
#   scripts/servers.sh start       install if needed, then start what is not running
#   scripts/servers.sh stop        stop the servers this script started
#   scripts/servers.sh env         print the URLs as shell exports
#
# Ports: POLYLOCK_REDIS_PORT (6379). State lives under target/servers/.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state="${POLYLOCK_SERVER_DIR:-$root/target/servers}"
redis_port="${POLYLOCK_REDIS_PORT:-6379}"

log() { printf 'servers: %s\n' "$*" >&2; }

sudo_if_needed() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install() {
  local missing=()
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    sudo_if_needed apt-get update -qq
    sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

redis_up() { redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null | grep -q PONG; }

start_redis() {
  if redis_up; then
    log "redis already answering on 127.0.0.1:$redis_port"
    return
  fi
  mkdir -p "$state/redis-$redis_port"
  redis-server --bind 127.0.0.1 --port "$redis_port" --daemonize yes \
    --dir "$state/redis-$redis_port" --pidfile "$state/redis-$redis_port/redis.pid" \
    --logfile "$state/redis-$redis_port/redis.log" --save '' --appendonly no >/dev/null
  for _ in $(seq 1 50); do
    redis_up && { log "redis started on 127.0.0.1:$redis_port"; return; }
    sleep 0.1
  done
  log "redis did not start; see $state/redis-$redis_port/redis.log"
  exit 1
}

stop() {
  local pidfile="$state/redis-$redis_port/redis.pid"
  if [ -f "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; rm -f "$pidfile"; fi
}

case "${1:-start}" in
  install) install ;;
  start) install; start_redis ;;
  stop) stop ;;
  env) echo "export POLYLOCK_REDIS_URL=redis://127.0.0.1:$redis_port" ;;
  *) echo "usage: $0 install|start|stop|env" >&2; exit 64 ;;
esac
