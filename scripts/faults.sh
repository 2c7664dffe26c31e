#!/usr/bin/env bash
# The fault harness (faults/harness.py): its workers come from the one release build
# (scripts/build.sh: the Rust example, the Python package, the Java JAR; built here if missing) and
# faults/FaultWorker.java, then it plays each fault against servers of its own on free
# loopback ports and prints a table per fault. Arguments go to the harness (--only, --seconds,
# --no-java). Exit status 1 when a fault found a double holder, an untold loss, a token that did
# not rise, no section accepted after the fault, or (the SIGSTOP rows) a stale write a real fence
# accepted or a fence that refused nothing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
py=${PYTHON:-python3}

bash scripts/servers.sh install >/dev/null   # redis-server, zookeeper, etcd, protoc (the harness starts its own servers)
# The real fences of the SIGSTOP rows: the MariaDB and PostgreSQL of scripts/servers.sh (started if
# they are not running), written through psycopg and PyMySQL by the harness and its Python worker.
bash scripts/servers.sh start-sql >&2
eval "$(bash scripts/servers.sh env-sql)"
"$py" -c "import psycopg, pymysql" 2>/dev/null ||
  "$py" -m pip install --quiet --disable-pip-version-check "psycopg[binary]" PyMySQL
cargo build --workspace --example fault_worker --quiet # dev profile, as scripts/build.sh builds it
"$py" -c "import polylock" 2>/dev/null || bash scripts/build.sh python
java_args=()
if command -v mvn >/dev/null && command -v javac >/dev/null; then
  jar=bindings-java/target/polylock-0.1.0.jar
  [ -f "$jar" ] || bash scripts/build.sh java
  mkdir -p "$target/faults-java"
  javac -d "$target/faults-java" -cp "$jar" faults/FaultWorker.java
else
  echo "faults: no JDK and Maven here; the Java worker sits out" >&2
  java_args=(--no-java)
fi
exec "$py" faults/harness.py "${java_args[@]}" "$@"
