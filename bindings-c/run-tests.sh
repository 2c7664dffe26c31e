#!/usr/bin/env bash
# Build libpolylock (release: the one build, scripts/build.sh), run the C suite under
# AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer included), and build and run the
# C examples with -Wall -Wextra -Werror -std=c11. Needs the servers of scripts/servers.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
eval "$(bash scripts/servers.sh ensure)" # alone: the servers (scripts/test.sh started them)
target="${CARGO_TARGET_DIR:-$root/target}"
out="$target/c"
mkdir -p "$out"

[ "${POLYLOCK_SKIP_BUILD:-}" = 1 ] || cargo build -p polylock-c --release --quiet
lib="$target/release"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

# The suite runs once against each form of the library: a static link takes from the archive
# only what something refers to (it once lost the ZooKeeper client's spawner that way), a shared
# one takes it whole.
cflags=(-std=c11 -Wall -Wextra -Werror -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer
  -fno-sanitize-recover=undefined -DCARGO_VERSION="\"$version\"" -Iinclude)
cc "${cflags[@]}" bindings-c/tests/test_polylock.c "$lib/libpolylock.a" -lpthread -ldl -lm \
  -o "$out/test_polylock_static"
cc "${cflags[@]}" bindings-c/tests/test_polylock.c -L"$lib" -lpolylock -Wl,-rpath,"$lib" \
  -lpthread -o "$out/test_polylock_shared"
echo "== C suite, static library (libpolylock.a)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "$out/test_polylock_static"
echo "== C suite, shared library (libpolylock.so)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "$out/test_polylock_shared"
echo "== C fork cases (no sanitizer: ASan's allocator is not fork-safe)"
cc -std=c11 -Wall -Wextra -Werror -O1 -Iinclude bindings-c/tests/fork.c "$lib/libpolylock.a" \
  -lpthread -ldl -lm -o "$out/fork_cases"
"$out/fork_cases"

# Examples: the shared library for the quick start, the static one for the buyer.
cc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/quickstart.c -L"$lib" -lpolylock \
  -Wl,-rpath,"$lib" -o "$out/quickstart"
cc -std=c11 -Wall -Wextra -Werror -Iinclude examples/c/seckill_buyer.c "$lib/libpolylock.a" \
  -lhiredis -lpthread -ldl -lm -o "$out/seckill_buyer"
"$out/quickstart" "${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}"
"$out/quickstart" "${POLYLOCK_ZK_URL:-zk://127.0.0.1:2181}"

# `make install` into a prefix of our own, then the quick start built against the installed copy
# through pkg-config: shared (run from the prefix) and static (the archive and Libs.private).
prefix="$out/prefix"
rm -rf "$prefix"
make --no-print-directory -s install PREFIX="$prefix" PROFILE=release >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion polylock)" = "$version" ]
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror examples/c/quickstart.c $(pkg-config --cflags --libs polylock) \
  -o "$out/quickstart_installed"
LD_LIBRARY_PATH="$prefix/lib" "$out/quickstart_installed" "${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror $(pkg-config --cflags polylock) examples/c/quickstart.c \
  "$(pkg-config --variable=libdir polylock)/libpolylock.a" $(pkg-config --static --libs-only-l polylock | sed 's/-lpolylock//') \
  -o "$out/quickstart_static"
"$out/quickstart_static" "${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}"
make --no-print-directory -s uninstall PREFIX="$prefix"
[ ! -e "$prefix/lib/pkgconfig/polylock.pc" ] && [ ! -e "$prefix/include/polylock.h" ]
echo "C install: make install, pkg-config --cflags --libs polylock (shared and static), make uninstall: ok"

# Two C buyers against 30 items must sell exactly 30.
name="c-smoke-$$"
redis-cli -u "${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}" SET "seckill:$name:stock" 30 >/dev/null
"$out/seckill_buyer" --url "${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}" --name "$name" >"$out/b1.json" &
b1=$!
"$out/seckill_buyer" --url "${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}" --name "$name" >"$out/b2.json"
wait $b1
sold=$(redis-cli -u "${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}" GET "seckill:$name:sold")
left=$(redis-cli -u "${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}" GET "seckill:$name:stock")
echo "C seckill: sold $sold, left $left ($(cat "$out/b1.json") $(cat "$out/b2.json"))"
[ "$sold" = 30 ] && [ "$left" = 0 ]
