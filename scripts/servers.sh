#!/usr/bin/env bash
# Install (Debian packages) and start the servers polylock's tests, demos and benchmarks use,
# on 127.0.0.1 only. A server already answering on its port is reused.
#
#   scripts/servers.sh install     apt-get install what is missing
#   scripts/servers.sh start       install if needed, then start what is not running
#   scripts/servers.sh stop        stop the servers this script started
#   scripts/servers.sh env         print the URLs as shell exports
#
# Ports: POLYLOCK_REDIS_PORT (6379), POLYLOCK_ZK_PORT (2181), and three independent Redis masters
# for RedLock, POLYLOCK_REDLOCK_PORTS ("6381 6382 6383"). State lives under target/servers/.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state="${POLYLOCK_SERVER_DIR:-$root/target/servers}"
redis_port="${POLYLOCK_REDIS_PORT:-6379}"
zk_port="${POLYLOCK_ZK_PORT:-2181}"
redlock_ports="${POLYLOCK_REDLOCK_PORTS:-6381 6382 6383}"
zk_home=/usr/share/zookeeper

log() { printf 'servers: %s\n' "$*" >&2; }

sudo_if_needed() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install() {
  local missing=()
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
  command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
  [ -x "$zk_home/bin/zkServer.sh" ] || missing+=(zookeeper)
  # Build tools of the C binding's tests and examples.
  [ -f /usr/include/hiredis/hiredis.h ] || missing+=(libhiredis-dev)
  command -v cc >/dev/null 2>&1 || missing+=(gcc)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl) # certificates of the TLS test
  # The Java binding's build (usually already there: the JDK and Maven of the machine).
  command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    sudo_if_needed apt-get update -qq
    sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

redis_up() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

# start_redis PORT
start_redis() {
  local port=$1
  if redis_up "$port"; then
    log "redis already answering on 127.0.0.1:$port"
    return
  fi
  mkdir -p "$state/redis-$port"
  redis-server --bind 127.0.0.1 --port "$port" --daemonize yes \
    --dir "$state/redis-$port" --pidfile "$state/redis-$port/redis.pid" \
    --logfile "$state/redis-$port/redis.log" --save '' --appendonly no >/dev/null
  for _ in $(seq 1 50); do
    redis_up "$port" && { log "redis started on 127.0.0.1:$port"; return; }
    sleep 0.1
  done
  log "redis did not start; see $state/redis-$port/redis.log"
  exit 1
}

# True when a ZooKeeper server answers "srvr" on 127.0.0.1:$1.
zk_answers() {
  local port=$1 reply
  reply=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf srvr >&3 && cat <&3" 2>/dev/null) || return 1
  grep -q "Zookeeper version" <<<"$reply"
}

# Write a config for one server of a standalone server or an ensemble and start it.
#   start_zk_server DIR CLIENT_PORT [MYID "server.1=... server.2=..."]
start_zk_server() {
  local dir=$1 port=$2 myid=${3:-} servers=${4:-}
  mkdir -p "$dir/data"
  {
    echo "tickTime=500"
    echo "initLimit=20"
    echo "syncLimit=10"
    echo "dataDir=$dir/data"
    echo "clientPort=$port"
    echo "clientPortAddress=127.0.0.1"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=srvr,ruok,mntr"
    echo "maxClientCnxns=0"
    echo "minSessionTimeout=1000"
    echo "maxSessionTimeout=60000"
    for s in $servers; do echo "$s"; done
  } >"$dir/zoo.cfg"
  [ -z "$myid" ] || echo "$myid" >"$dir/data/myid"
  ZOO_LOG_DIR="$dir" ZOOPIDFILE="$dir/zookeeper.pid" JVMFLAGS="-Xmx256m" \
    "$zk_home/bin/zkServer.sh" start "$dir/zoo.cfg" >"$dir/start.out" 2>&1
}

start_zk() {
  if zk_answers "$zk_port"; then
    log "zookeeper already answering on 127.0.0.1:$zk_port"
    return
  fi
  start_zk_server "$state/zk-$zk_port" "$zk_port"
  for _ in $(seq 1 100); do
    zk_answers "$zk_port" && { log "zookeeper started on 127.0.0.1:$zk_port"; return; }
    sleep 0.2
  done
  log "zookeeper did not start; see $state/zk-$zk_port/"
  exit 1
}

stop() {
  local zkpid="$state/zk-$zk_port/zookeeper.pid"
  if [ -f "$zkpid" ]; then kill "$(cat "$zkpid")" 2>/dev/null || true; rm -f "$zkpid"; fi
  local port pidfile
  for port in $redis_port $redlock_ports; do
    pidfile="$state/redis-$port/redis.pid"
    if [ -f "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; rm -f "$pidfile"; fi
  done
}

case "${1:-start}" in
  install) install ;;
  start)
    install
    start_redis "$redis_port"
    for port in $redlock_ports; do start_redis "$port"; done
    start_zk
    ;;
  zk-server) shift; start_zk_server "$@" ;; # used by the ensemble tests
  stop) stop ;;
  env)
    echo "export POLYLOCK_REDIS_URL=redis://127.0.0.1:$redis_port"
    echo "export POLYLOCK_ZK_URL=zk://127.0.0.1:$zk_port"
    echo "export POLYLOCK_REDLOCK_URLS=$(printf 'redis://127.0.0.1:%s,' $redlock_ports | sed 's/,$//')"
    ;;
  *) echo "usage: $0 install|start|stop|env|zk-server DIR PORT [MYID SERVERS]" >&2; exit 64 ;;
esac
