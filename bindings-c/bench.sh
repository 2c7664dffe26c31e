#!/usr/bin/env bash
# The C boundary's cost per acquire+release pair (release build), beside the Rust API in the same run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
cargo build --release -p polylock-c --quiet
mkdir -p "$target/c"
cc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude bindings-c/bench/bench.c "$target/release/libpolylock.a" \
  -lpthread -ldl -lm -o "$target/c/bench"
"$target/c/bench" "${1:-${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}}"
