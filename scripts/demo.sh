#!/usr/bin/env bash
# The flash sale of seed 002: 100 items, 4 buyer processes, one polylock lock on Redis.
# Installs and starts Redis on 127.0.0.1 if needed. Extra arguments go to the seckill example
# (try --help).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/servers.sh start
eval "$(bash scripts/servers.sh env)"
cargo run --quiet --example seckill -- --url "$POLYLOCK_REDIS_URL" "$@"
