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
# for RedLock, POLYLOCK_REDLOCK_PORTS ("6381 6382 6383"); MariaDB on POLYLOCK_MYSQL_PORT (3307) and
# PostgreSQL on POLYLOCK_PG_PORT (5433), each on a data directory of its own, run as an
# unprivileged user (mysql, postgres) when this script runs as root, never as the system
# service; two PgBouncers in front of that PostgreSQL, session pooling on
# POLYLOCK_PGBOUNCER_SESSION_PORT (PostgreSQL's port + 1000: 6433) and transaction pooling on
# POLYLOCK_PGBOUNCER_TX_PORT (+ 1001: 6434). Highly available Redis: a master (POLYLOCK_SENTINEL_MASTER_PORT, 6390) with two replicas
# (6391, 6392) watched by three sentinels (26390-26392, master name "mymaster"), and a six-node
# cluster, three masters each with a replica (POLYLOCK_CLUSTER_PORTS, 7001-7006). etcd (Debian's
# etcd-server, etcdctl from etcd-client): one member on POLYLOCK_ETCD_PORT (2379, peer port +1), a
# member with TLS and authentication on POLYLOCK_ETCD_SECURE_PORT (2389: https only, user polylock,
# the test CA of the SQL servers), and a three-member cluster on POLYLOCK_ETCD_CLUSTER_PORTS
# (2391-2393, peers on +100) for the failover tests. State lives under target/servers/ (or
# /var/tmp/polylock-servers/<id of the clone> when the clone lies under a folder that the server users
# cannot enter; POLYLOCK_SERVER_DIR chooses it; `scripts/servers.sh dir` prints it).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# MariaDB and PostgreSQL run as the unprivileged users mysql and postgres (when this runs as root):
# their data must lie where those users can enter. A clone inside a mode-700 home (root's, say)
# keeps its servers' state under /var/tmp instead, in a folder named after the clone.
state_dir() {
  if [ -n "${POLYLOCK_SERVER_DIR:-}" ]; then echo "$POLYLOCK_SERVER_DIR"; return; fi
  local dir="$root/target/servers" d="$root"
  if [ "$(id -u)" = 0 ]; then
    while [ "$d" != / ]; do
      # Every folder above the state must be enterable by others (x for "other").
      if [ -e "$d" ] && [ "$(( 0$(stat -c %a "$d") & 01 ))" = 0 ]; then
        dir="/var/tmp/polylock-servers/$(printf '%s' "$root" | cksum | cut -d' ' -f1)"
        break
      fi
      d=$(dirname "$d")
    done
  fi
  echo "$dir"
}
state=$(state_dir)
redis_port="${POLYLOCK_REDIS_PORT:-6379}"
zk_port="${POLYLOCK_ZK_PORT:-2181}"
redlock_ports="${POLYLOCK_REDLOCK_PORTS:-6381 6382 6383}"
zk_home=/usr/share/zookeeper
mysql_port="${POLYLOCK_MYSQL_PORT:-3307}"
pg_port="${POLYLOCK_PG_PORT:-5433}"
# The PgBouncers follow their PostgreSQL, so that each set of start-sql has its own.
pgb_session_port="${POLYLOCK_PGBOUNCER_SESSION_PORT:-$((pg_port + 1000))}"
pgb_tx_port="${POLYLOCK_PGBOUNCER_TX_PORT:-$((pg_port + 1001))}"
sentinel_master="${POLYLOCK_SENTINEL_MASTER_PORT:-6390}"
sentinel_ports="${POLYLOCK_SENTINEL_PORTS:-26390 26391 26392}"
cluster_ports="${POLYLOCK_CLUSTER_PORTS:-7001 7002 7003 7004 7005 7006}"
etcd_port="${POLYLOCK_ETCD_PORT:-2379}"
etcd_secure_port="${POLYLOCK_ETCD_SECURE_PORT:-2389}"
etcd_cluster_ports="${POLYLOCK_ETCD_CLUSTER_PORTS:-2391 2392 2393}"
# The test database and its user (the same name and password on both servers).
sql_db=polylock
sql_user=polylock
sql_password=polylock-pw

log() { printf 'servers: %s\n' "$*" >&2; }

sudo_if_needed() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Everything the servers, the builds and the suites need (scripts/setup.sh: one apt-get run).
install() { bash "$root/scripts/setup.sh"; }

redis_up() { redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG; }

# start_redis PORT [REDIS-SERVER ARGS...]
start_redis() {
  local port=$1
  shift
  if redis_up "$port"; then
    log "redis already answering on 127.0.0.1:$port"
    return
  fi
  mkdir -p "$state/redis-$port"
  redis-server --bind 127.0.0.1 --port "$port" --daemonize yes \
    --dir "$state/redis-$port" --pidfile "$state/redis-$port/redis.pid" \
    --logfile "$state/redis-$port/redis.log" --save '' --appendonly no "$@" >/dev/null
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

# --- Highly available Redis: Sentinel and Cluster -----------------------------------------------

# A master with two replicas and three sentinels (quorum 2, a master is down after 1 s).
start_sentinel() {
  local port dir
  start_redis "$sentinel_master"
  for port in $((sentinel_master + 1)) $((sentinel_master + 2)); do
    start_redis "$port" --replicaof 127.0.0.1 "$sentinel_master"
  done
  for port in $sentinel_ports; do
    if redis_up "$port"; then log "sentinel already answering on 127.0.0.1:$port"; continue; fi
    dir="$state/sentinel-$port"
    mkdir -p "$dir"
    printf '%s\n' "port $port" "bind 127.0.0.1" "dir $dir" "pidfile $dir/sentinel.pid" \
      "logfile $dir/sentinel.log" "daemonize yes" \
      "sentinel monitor mymaster 127.0.0.1 $sentinel_master 2" \
      "sentinel down-after-milliseconds mymaster 1000" \
      "sentinel failover-timeout mymaster 10000" >"$dir/sentinel.conf"
    redis-server "$dir/sentinel.conf" --sentinel >/dev/null
  done
  for _ in $(seq 1 100); do
    local ok=1
    for port in $sentinel_ports; do
      redis-cli -p "$port" SENTINEL GET-MASTER-ADDR-BY-NAME mymaster 2>/dev/null | grep -q . || ok=0
    done
    [ $ok = 1 ] && { log "sentinels on $sentinel_ports watch mymaster"; return; }
    sleep 0.1
  done
  log "the sentinels did not start; see $state/sentinel-*/sentinel.log"
  exit 1
}

# Six cluster nodes; the cluster is created once (three masters, a replica each).
start_cluster() {
  local port addrs=()
  for port in $cluster_ports; do
    start_redis "$port" --cluster-enabled yes --cluster-node-timeout 2000 \
      --cluster-config-file "nodes-$port.conf"
    addrs+=("127.0.0.1:$port")
  done
  local first=${cluster_ports%% *}
  if ! redis-cli -p "$first" CLUSTER INFO | grep -q "cluster_known_nodes:6"; then
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >/dev/null
  fi
  for _ in $(seq 1 100); do
    redis-cli -p "$first" CLUSTER INFO | grep -q "cluster_state:ok" &&
      { log "cluster on $cluster_ports is ok"; return; }
    sleep 0.1
  done
  log "the cluster did not form; see $state/redis-$first/redis.log"
  exit 1
}

# Stop the process of a pid file and wait (up to 10 s) until it is gone, then drop the file: what
# comes after (removing its folder, which a sentinel rewrites as it exits) finds it ended.
stop_pid() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$pidfile"
}

stop() {
  stop_pid "$state/zk-$zk_port/zookeeper.pid"
  local port
  for port in $sentinel_ports; do
    stop_pid "$state/sentinel-$port/sentinel.pid"
    rm -rf "$state/sentinel-$port" # its config was rewritten by the sentinel: start afresh
  done
  for port in $redis_port $redlock_ports $sentinel_master $((sentinel_master + 1)) \
    $((sentinel_master + 2)) $cluster_ports; do
    stop_pid "$state/redis-$port/redis.pid"
  done
  # Without persistence a cluster node restarts empty: forget the old cluster so it is made again.
  for port in $cluster_ports; do rm -f "$state/redis-$port/nodes-$port.conf"; done
}

# --- SQL servers: MariaDB (MySQL protocol) and PostgreSQL --------------------------------------

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

install_sql() { bash "$root/scripts/setup.sh" servers; }

# Run a command as USER when this script runs as root, else as ourselves.
as_user() {
  local user=$1; shift
  # From /: the caller's folder may be one the user cannot enter (a clone in root's home).
  if [ "$(id -u)" = 0 ]; then (cd / && runuser -u "$user" -- "$@"); else "$@"; fi
}

# A directory the server's user owns.
server_dir() {
  local dir=$1 user=$2
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown -R "$user:" "$dir"; fi
}

# A test CA and a certificate for 127.0.0.1 signed by it (made once, under $state/tls), for
# the SQL TLS tests. Each server gets its own copy ($1), owned by the user it runs as ($2), with a
# key only that user can read (PostgreSQL refuses any other).
test_ca() {
  [ -f "$state/tls/cert.pem" ] && return 0
  rm -rf "$state/tls" && mkdir -p "$state/tls"
  (
    cd "$state/tls" &&
      openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=polylock-test-ca \
        -keyout ca.key -out ca.pem &&
      openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout key.pem -out server.csr &&
      printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >server.ext &&
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
        -extfile server.ext -out cert.pem
  ) >/dev/null 2>&1 || { log "openssl could not make the test certificates"; exit 1; }
}

server_certs() {
  local dir=$1 user=$2
  test_ca
  mkdir -p "$dir"
  cp "$state/tls/ca.pem" "$state/tls/cert.pem" "$state/tls/key.pem" "$dir/"
  chmod 644 "$dir/ca.pem" "$dir/cert.pem"
  chmod 600 "$dir/key.pem"
  if [ "$(id -u)" = 0 ]; then chown -R "$user:" "$dir"; fi
}

mysql_up() {
  mariadb-admin --no-defaults --protocol=tcp -h 127.0.0.1 -P "$mysql_port" -u "$sql_user" \
    -p"$sql_password" --connect-timeout=2 ping >/dev/null 2>&1
}

start_mysql() {
  if mysql_up; then
    log "mariadb already answering on 127.0.0.1:$mysql_port"
    return
  fi
  local dir="$state/mariadb-$mysql_port" user
  user=$([ "$(id -u)" = 0 ] && echo mysql || id -un)
  server_dir "$dir" "$user"
  if [ ! -d "$dir/data/mysql" ]; then
    as_user "$user" mariadb-install-db --no-defaults --datadir="$dir/data" \
      --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 \
      || { log "mariadb-install-db failed; see $dir/install.log"; exit 1; }
  fi
  server_certs "$dir/tls" "$user"
  # Started in the background by this script (not the system service), as $user.
  as_user "$user" setsid mariadbd --no-defaults --datadir="$dir/data" --port="$mysql_port" \
    --bind-address=127.0.0.1 --socket="$dir/mysqld.sock" --pid-file="$dir/mariadbd.pid" \
    --log-error="$dir/error.log" --skip-name-resolve --max-connections=500 \
    --ssl-cert="$dir/tls/cert.pem" --ssl-key="$dir/tls/key.pem" \
    --innodb-buffer-pool-size=64M </dev/null >/dev/null 2>&1 &
  local i
  for i in $(seq 1 150); do
    if mariadb-admin --no-defaults -S "$dir/mysqld.sock" -u root ping >/dev/null 2>&1; then break; fi
    [ "$i" = 150 ] && { log "mariadb did not start; see $dir/error.log"; exit 1; }
    sleep 0.2
  done
  mariadb --no-defaults -S "$dir/mysqld.sock" -u root <<SQL
CREATE DATABASE IF NOT EXISTS $sql_db;
CREATE USER IF NOT EXISTS '$sql_user'@'%' IDENTIFIED BY '$sql_password';
GRANT ALL ON $sql_db.* TO '$sql_user'@'%';
CREATE USER IF NOT EXISTS '${sql_user}_tls'@'%' IDENTIFIED BY '$sql_password' REQUIRE SSL;
GRANT ALL ON $sql_db.* TO '${sql_user}_tls'@'%';
FLUSH PRIVILEGES;
SQL
  mysql_up || { log "mariadb answers, but not to $sql_user; see $dir/error.log"; exit 1; }
  log "mariadb started on 127.0.0.1:$mysql_port"
}

# Every MariaDB this script started (the default one and any extra set of start-sql).
stop_mysql() {
  local pidfile
  for pidfile in "$state"/mariadb-*/mariadbd.pid; do stop_pid "$pidfile"; done
}

pg_up() { "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -t 2 >/dev/null 2>&1; }

start_pg() {
  if pg_up; then
    log "postgresql already answering on 127.0.0.1:$pg_port"
    return
  fi
  local dir="$state/postgres-$pg_port" user bin
  bin=$(pg_bin)
  user=$([ "$(id -u)" = 0 ] && echo postgres || id -un)
  server_dir "$dir" "$user"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_user "$user" "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust \
      --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 \
      || { log "initdb failed; see $dir/initdb.log"; exit 1; }
  fi
  server_certs "$dir/tls" "$user"
  # The TLS test's role is refused without TLS (hostnossl ... reject comes first).
  cat >"$dir/data/pg_hba.conf" <<HBA
local all all trust
hostnossl all ${sql_user}_tls 127.0.0.1/32 reject
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
HBA
  if [ "$(id -u)" = 0 ]; then chown "$user:" "$dir/data/pg_hba.conf"; fi
  as_user "$user" "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-p $pg_port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c ssl=on -c ssl_cert_file=$dir/tls/cert.pem -c ssl_key_file=$dir/tls/key.pem" \
    start >/dev/null || { log "postgresql did not start; see $dir/postgres.log"; exit 1; }
  as_user "$user" "$bin/psql" -q -h "$dir" -p "$pg_port" -U postgres -d postgres -v ON_ERROR_STOP=1 <<SQL >/dev/null
SELECT 'CREATE ROLE $sql_user LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$sql_user') \gexec
ALTER ROLE $sql_user WITH LOGIN PASSWORD '$sql_password';
SELECT 'CREATE ROLE ${sql_user}_tls LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${sql_user}_tls') \gexec
ALTER ROLE ${sql_user}_tls WITH LOGIN PASSWORD '$sql_password';
GRANT pg_read_all_settings, pg_read_all_stats TO $sql_user;
SELECT 'CREATE DATABASE $sql_db OWNER $sql_user' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$sql_db') \gexec
GRANT $sql_user TO ${sql_user}_tls;
SQL
  log "postgresql started on 127.0.0.1:$pg_port"
}

# Every PostgreSQL this script started (the default one and any extra set of start-sql).
stop_pg() {
  local dir user
  user=$([ "$(id -u)" = 0 ] && echo postgres || id -un)
  for dir in "$state"/postgres-*; do
    [ -f "$dir/data/postmaster.pid" ] || continue
    as_user "$user" "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  done
}

# PgBouncer (Debian's pgbouncer) in front of the PostgreSQL on $pg_port, run as postgres when this
# script runs as root (PgBouncer refuses root). It admits the test user by SCRAM with the password
# in a userlist of its own, and logs in to PostgreSQL with it.
pgbouncer_up() {
  PGPASSWORD="$sql_password" PGCONNECT_TIMEOUT=2 "$(pg_bin)/psql" -h 127.0.0.1 -p "$1" \
    -U "$sql_user" -d "$sql_db" -At -c 'SELECT 1' >/dev/null 2>&1
}

start_pgbouncer() { # start_pgbouncer session|transaction PORT
  local mode=$1 port=$2 dir="$state/pgbouncer-$2" user
  if pgbouncer_up "$port"; then
    log "pgbouncer already answering on 127.0.0.1:$port"
    return
  fi
  command -v pgbouncer >/dev/null || { log "pgbouncer is missing; scripts/setup.sh servers installs it"; exit 1; }
  user=$([ "$(id -u)" = 0 ] && echo postgres || id -un)
  server_dir "$dir" "$user"
  printf '"%s" "%s"\n' "$sql_user" "$sql_password" >"$dir/userlist.txt"
  # No Unix socket (another PgBouncer may own /tmp/.s.PGSQL.<port>); server_round_robin stays 0:
  # a released server connection is the next one handed out, as in most deployments.
  cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$pg_port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $dir/userlist.txt
pool_mode = $mode
default_pool_size = 40
max_client_conn = 500
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
  chmod 600 "$dir/userlist.txt"
  if [ "$(id -u)" = 0 ]; then chown "$user:" "$dir/userlist.txt" "$dir/pgbouncer.ini"; fi
  as_user "$user" pgbouncer -d -q "$dir/pgbouncer.ini" >"$dir/start.out" 2>&1 ||
    { log "pgbouncer did not start; see $dir/start.out and $dir/pgbouncer.log"; exit 1; }
  for _ in $(seq 1 50); do
    pgbouncer_up "$port" && { log "pgbouncer ($mode pooling) started on 127.0.0.1:$port"; return; }
    sleep 0.1
  done
  log "pgbouncer answers no query on 127.0.0.1:$port; see $dir/pgbouncer.log"
  exit 1
}

start_pgbouncers() { start_pgbouncer session "$pgb_session_port"; start_pgbouncer transaction "$pgb_tx_port"; }

# Every PgBouncer this script started (in front of any PostgreSQL of start-sql).
stop_pgbouncers() {
  local pidfile
  for pidfile in "$state"/pgbouncer-*/pgbouncer.pid; do stop_pid "$pidfile"; done
}

# The folder of the running MariaDB's certificate (started by another checkout's servers.sh, it
# is not under this one's target/), else where this script makes it.
mysql_tls_dir() {
  local cert
  cert=$(mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$mysql_port" -u "$sql_user" \
    -p"$sql_password" --connect-timeout=2 -N -e 'SELECT @@ssl_cert' 2>/dev/null || true)
  if [ -n "$cert" ] && [ "$cert" != NULL ]; then dirname "$cert"; else echo "$state/mariadb-$mysql_port/tls"; fi
}

# The same for the running PostgreSQL (its test user may read ssl_cert_file).
pg_tls_dir() {
  local cert
  cert=$(PGPASSWORD="$sql_password" "$(pg_bin)/psql" -h 127.0.0.1 -p "$pg_port" -U "$sql_user" \
    -d "$sql_db" -At -c 'SHOW ssl_cert_file' 2>/dev/null || true)
  case "$cert" in
    /*) dirname "$cert" ;;
    *) echo "$state/postgres-$pg_port/tls" ;;
  esac
}

sql_env() {
  echo "export POLYLOCK_MYSQL_URL=mysql://$sql_user:$sql_password@127.0.0.1:$mysql_port/$sql_db"
  echo "export POLYLOCK_PG_URL=postgres://$sql_user:$sql_password@127.0.0.1:$pg_port/$sql_db"
  # A user the server admits over TLS only, and the CA that signed the server's certificate.
  echo "export POLYLOCK_MYSQL_TLS_URL=mysql://${sql_user}_tls:$sql_password@127.0.0.1:$mysql_port/$sql_db"
  echo "export POLYLOCK_MYSQL_TLS_CA=$(mysql_tls_dir)/ca.pem"
  echo "export POLYLOCK_PG_TLS_URL=postgres://${sql_user}_tls:$sql_password@127.0.0.1:$pg_port/$sql_db"
  echo "export POLYLOCK_PG_TLS_CA=$(pg_tls_dir)/ca.pem"
  # The same database and user through PgBouncer, in session and in transaction pooling.
  echo "export POLYLOCK_PGBOUNCER_SESSION_URL=postgres://$sql_user:$sql_password@127.0.0.1:$pgb_session_port/$sql_db"
  echo "export POLYLOCK_PGBOUNCER_TX_URL=postgres://$sql_user:$sql_password@127.0.0.1:$pgb_tx_port/$sql_db"
}

# --- etcd ----------------------------------------------------------------------------------------

# True when the member whose client URL is $1 answers a health check (etcdctl; TLS and
# credentials, if any, follow as etcdctl flags).
etcd_up() {
  local url=$1; shift
  ETCDCTL_API=3 timeout 3 etcdctl --endpoints "$url" --dial-timeout=1s --command-timeout=1s "$@" \
    endpoint health >/dev/null 2>&1
}

# Wait up to 30 s for etcd_up with these arguments.
etcd_wait() {
  local until=$((SECONDS + 30))
  while [ $SECONDS -lt $until ]; do etcd_up "$@" && return 0; sleep 0.2; done
  return 1
}

# One etcd member, started in the background with its state in DIR (restarted with the same
# command after a kill: the data directory wins over the initial-cluster flags).
#   start_etcd_member DIR NAME CLIENT_PORT PEER_PORT INITIAL_CLUSTER [EXTRA ETCD FLAGS...]
start_etcd_member() {
  local dir=$1 name=$2 client=$3 peer=$4 cluster=$5 scheme=http
  shift 5
  case " $* " in *" --cert-file"*) scheme=https ;; esac
  mkdir -p "$dir"
  if [ -f "$dir/etcd.pid" ] && kill -0 "$(cat "$dir/etcd.pid")" 2>/dev/null; then return 0; fi
  # Short heartbeats and elections: a killed leader is replaced within about a second.
  setsid etcd --name "$name" --data-dir "$dir/data" \
    --listen-client-urls "$scheme://127.0.0.1:$client" \
    --advertise-client-urls "$scheme://127.0.0.1:$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "$cluster" --initial-cluster-state new \
    --initial-cluster-token "polylock-$(cksum <<<"$cluster" | cut -d' ' -f1)" \
    --heartbeat-interval 50 --election-timeout 500 \
    --logger zap --log-outputs "$dir/etcd.log" "$@" </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/etcd.pid"
}

start_etcd() {
  local dir="$state/etcd-$etcd_port" peer=$((etcd_port + 1))
  if etcd_up "http://127.0.0.1:$etcd_port"; then
    log "etcd already answering on 127.0.0.1:$etcd_port"
  else
    start_etcd_member "$dir" "single-$etcd_port" "$etcd_port" "$peer" \
      "single-$etcd_port=http://127.0.0.1:$peer"
    etcd_wait "http://127.0.0.1:$etcd_port" || { log "etcd did not start; see $dir/etcd.log"; exit 1; }
    log "etcd started on 127.0.0.1:$etcd_port"
  fi
  # TLS (the test CA) and authentication: root, and the test user polylock with the root role.
  local sdir="$state/etcd-$etcd_secure_port" speer=$((etcd_secure_port + 1))
  local surl="https://127.0.0.1:$etcd_secure_port"
  if etcd_up "$surl" --cacert "$sdir/tls/ca.pem" --user "$sql_user:$sql_password"; then
    log "etcd (TLS, auth) already answering on 127.0.0.1:$etcd_secure_port"
  else
    server_certs "$sdir/tls" "$(id -un)"
    start_etcd_member "$sdir" "secure-$etcd_secure_port" "$etcd_secure_port" "$speer" \
      "secure-$etcd_secure_port=http://127.0.0.1:$speer" \
      --cert-file "$sdir/tls/cert.pem" --key-file "$sdir/tls/key.pem"
    local ctl=(env ETCDCTL_API=3 etcdctl --endpoints "$surl" --cacert "$sdir/tls/ca.pem")
    etcd_wait "$surl" --cacert "$sdir/tls/ca.pem" ||
      etcd_up "$surl" --cacert "$sdir/tls/ca.pem" --user "$sql_user:$sql_password" || true
    # Authentication is off while a wrong password still reads (3.4's etcdctl has no auth status).
    if "${ctl[@]}" --user "$sql_user:wrong-$sql_password" get probe >/dev/null 2>&1; then
      "${ctl[@]}" user add "root:root-$sql_password" >/dev/null 2>&1 || true
      "${ctl[@]}" user add "$sql_user:$sql_password" >/dev/null 2>&1 || true
      "${ctl[@]}" user grant-role "$sql_user" root >/dev/null 2>&1 || true
      "${ctl[@]}" auth enable >/dev/null 2>&1 || true
    fi
    etcd_up "$surl" --cacert "$sdir/tls/ca.pem" --user "$sql_user:$sql_password" ||
      { log "etcd (TLS, auth) did not start; see $sdir/etcd.log"; exit 1; }
    log "etcd (TLS, auth) started on 127.0.0.1:$etcd_secure_port"
  fi
  # The three-member cluster: peers on client port + 100.
  local port initial="" members=()
  for port in $etcd_cluster_ports; do
    initial+="${initial:+,}m$port=http://127.0.0.1:$((port + 100))"
  done
  for port in $etcd_cluster_ports; do
    etcd_up "http://127.0.0.1:$port" && continue
    start_etcd_member "$state/etcd-$port" "m$port" "$port" "$((port + 100))" "$initial"
    members+=("$port")
  done
  for port in $etcd_cluster_ports; do
    etcd_wait "http://127.0.0.1:$port" || { log "etcd member $port did not start; see $state/etcd-$port/etcd.log"; exit 1; }
  done
  [ ${#members[@]} -eq 0 ] && log "etcd cluster already answering on $etcd_cluster_ports" ||
    log "etcd cluster on $etcd_cluster_ports is up"
}

stop_etcd() {
  local port
  for port in $etcd_port $etcd_secure_port $etcd_cluster_ports; do
    stop_pid "$state/etcd-$port/etcd.pid"
  done
}

etcd_env() {
  echo "export POLYLOCK_ETCD_URL=etcd://127.0.0.1:$etcd_port"
  echo "export POLYLOCK_ETCD_CLUSTER_URL=etcd://$(printf '127.0.0.1:%s,' $etcd_cluster_ports | sed 's/,$//')"
  echo "export POLYLOCK_ETCD_TLS_URL=etcds://$sql_user:$sql_password@127.0.0.1:$etcd_secure_port?tls_ca_file=$state/etcd-$etcd_secure_port/tls/ca.pem"
}

case "${1:-start}" in
  install) install ;;
  start)
    install
    install_sql
    start_redis "$redis_port"
    for port in $redlock_ports; do start_redis "$port"; done
    start_zk
    start_mysql; start_pg; start_pgbouncers
    start_sentinel
    start_cluster
    start_etcd
    ;;
  # A MariaDB and a PostgreSQL of their own for a suite that looks at the whole server (its
  # sessions, waiters and locks) while other suites run beside it: POLYLOCK_MYSQL_PORT and
  # POLYLOCK_PG_PORT name them (scripts/test.sh), with PgBouncers in front of that PostgreSQL
  # (the Rust suite's PgBouncer tests); env-sql prints their URLs.
  start-sql) install_sql; start_mysql; start_pg; start_pgbouncers ;;
  env-sql) sql_env ;;
  # For a suite run alone: with no server URLs in the environment (scripts/test.sh exports
  # them), start the servers and print their URLs; else print nothing.
  #   eval "$(bash scripts/servers.sh ensure)"
  ensure)
    if [ -z "${POLYLOCK_REDIS_URL:-}" ]; then
      log "no POLYLOCK_REDIS_URL: starting the servers (scripts/servers.sh start)"
      "${BASH_SOURCE[0]}" start
      "${BASH_SOURCE[0]}" env
    fi
    ;;
  # The default Redis alone (scripts/package.sh's install checks).
  start-redis) bash "$root/scripts/setup.sh" redis; start_redis "$redis_port" ;;
  dir) echo "$state" ;;
  zk-server) shift; start_zk_server "$@" ;; # used by the ensemble tests
  etcd-member) shift; start_etcd_member "$@" ;; # used by the fault harness and failover tests
  stop) stop; stop_pgbouncers; stop_mysql; stop_pg; stop_etcd ;;
  env)
    echo "export POLYLOCK_REDIS_URL=redis://127.0.0.1:$redis_port"
    echo "export POLYLOCK_ZK_URL=zk://127.0.0.1:$zk_port"
    echo "export POLYLOCK_REDLOCK_URLS=$(printf 'redis://127.0.0.1:%s,' $redlock_ports | sed 's/,$//')"
    echo "export POLYLOCK_SENTINEL_URL=redis+sentinel://$(printf '127.0.0.1:%s,' $sentinel_ports | sed 's/,$//')/mymaster"
    echo "export POLYLOCK_CLUSTER_URL=redis+cluster://$(printf '127.0.0.1:%s,' $cluster_ports | sed 's/,$//')"
    sql_env
    etcd_env
    ;;
  *) echo "usage: $0 install|start|stop|env|start-sql|env-sql|zk-server DIR PORT [MYID SERVERS]|etcd-member DIR NAME CLIENT PEER CLUSTER [FLAGS]" >&2; exit 64 ;;
esac
