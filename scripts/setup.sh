#!/usr/bin/env bash
# The one install step: everything polylock's builds, tests, docs and packages need beyond the
# toolchains a new machine has (Rust 1.85+, Python 3.9+, Node 20+, a JDK 17+ with Maven, git),
# from Debian's packages, in one apt-get run. Whatever is already there is skipped, so a warm
# machine spends a second here. Every script that runs cargo, starts a server or opens a browser
# calls the part it needs first, so each also starts from a bare machine when run alone.
#
#   scripts/setup.sh [PART...]              these parts (all by default)
#   scripts/setup.sh --provides [PART...]   print the commands those parts put on the PATH
#   scripts/setup.sh --missing [PART...]    print the Debian packages still to install
#
#   rust     what building the Rust core needs beyond the toolchain: protoc and the well-known
#            .proto files (the etcd client crate compiles etcd's .proto files at build time), a C
#            compiler, make, pkg-config, binutils (strip)
#   java     a JDK and Maven, when the machine has none
#   ctest    hiredis and openssl: the C binding's tests and examples, the TLS tests' certificates
#   build    rust, java and ctest
#   redis    Redis (redis-server, redis-cli)
#   servers  redis, and ZooKeeper, etcd and etcdctl, MariaDB, PostgreSQL, PgBouncer: the servers
#            scripts/servers.sh starts on 127.0.0.1
#   browser  Debian's Chromium (the docs check and the live page under test) and tmux (`polylock
#            top` under test)
set -euo pipefail

# One row per command: PART COMMAND PACKAGE [TEST]. TEST is a file that must exist (for packages
# that bring no command, or whose command lives off the PATH); without it, `command -v COMMAND`.
table() {
  cat <<'EOF'
rust     protoc        protobuf-compiler
rust     -             libprotobuf-dev       /usr/include/google/protobuf/descriptor.proto
rust     cc            gcc
rust     make          make
rust     pkg-config    pkg-config
rust     strip         binutils
java     javac         default-jdk-headless
java     mvn           maven
ctest    -             libhiredis-dev        /usr/include/hiredis/hiredis.h
ctest    openssl       openssl
redis    redis-server  redis-server
redis    redis-cli     redis-tools
servers  -             zookeeper             /usr/share/zookeeper/bin/zkServer.sh
servers  etcd          etcd-server
servers  etcdctl       etcd-client
servers  mariadbd      mariadb-server
servers  mariadb       mariadb-client
servers  -             postgresql            /usr/lib/postgresql/15/bin/initdb
servers  pgbouncer     pgbouncer
browser  chromium      chromium
browser  tmux          tmux
EOF
}

mode=install
parts=()
for a in "$@"; do
  case "$a" in
    --provides) mode=provides ;;
    --missing) mode=missing ;;
    build) parts+=(rust java ctest) ;;
    servers) parts+=(redis servers) ;;
    rust | java | ctest | redis | browser) parts+=("$a") ;;
    *) echo "usage: $0 [--provides|--missing] [rust|java|ctest|build|redis|servers|browser]..." >&2; exit 64 ;;
  esac
done
[ ${#parts[@]} -gt 0 ] || parts=(rust java ctest redis servers browser)
wanted() { [[ " ${parts[*]} " == *" $1 "* ]]; }

# Some PostgreSQL's initdb counts as there (Debian's version differs between releases).
pg_present() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }

missing=()
provides=()
while read -r part cmd pkg test; do
  wanted "$part" || continue
  [ "$cmd" = - ] || provides+=("$cmd")
  if [ "$pkg" = postgresql ]; then
    pg_present && continue
  elif [ -n "$test" ]; then
    [ -e "$test" ] && continue
  else
    command -v "$cmd" >/dev/null 2>&1 && continue
  fi
  missing+=("$pkg")
done < <(table)

case $mode in
  provides) printf '%s\n' "${provides[@]}"; exit 0 ;;
  missing) [ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"; exit 0 ;;
esac

if [ ${#missing[@]} -gt 0 ]; then
  printf 'setup: installing %s\n' "${missing[*]}" >&2
  as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  export DEBIAN_FRONTEND=noninteractive
  # The packages' own services stay stopped: scripts/servers.sh runs each server on its own port
  # and data directory (policy-rc.d 101 is Debian's "do not start services" answer).
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 755 /usr/sbin/policy-rc.d
    trap 'as_root rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# What is still missing now is a failure here, not a puzzle later in a build or a test.
left=$(bash "${BASH_SOURCE[0]}" --missing "${parts[@]}")
if [ -n "$left" ]; then
  echo "setup: still missing after apt-get install: $(echo $left)" >&2
  exit 1
fi
