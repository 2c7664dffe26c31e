#!/usr/bin/env bash
# The conformance suite (conformance/README.md): the scenarios of conformance/scenarios/*.json,
# run by a small runner in each runtime (Rust, C, Python, Node, Java and the command line) against
# the servers of scripts/servers.sh, all six side by side. Uses what scripts/build.sh built and
# builds nothing itself but the C runner (cc, against libpolylock) and the Java runner (javac,
# against the JAR), a second each. Prints one line per runtime,
#   conformance <runtime>: N passed, N failed, N not applicable
# then its failures, the suite's wall time, and a last line "N passed, N failed".
#
#   scripts/conformance.sh [--only TEXT]          scenarios whose id contains TEXT
#   POLYLOCK_CONFORMANCE_ONLY="rust c"            only these runtimes
#   POLYLOCK_CONFORMANCE_JOBS=3                   scenario instances a runner runs at once
#   scripts/conformance.sh --table [--check]      write docs/src/contract-table.md from the
#                                                 runners' vocabularies (--check: fail if it
#                                                 differs from the committed one)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
py=${PYTHON:-python3}
out="$target/conformance"
mkdir -p "$out"
start=$SECONDS
only_rt=" ${POLYLOCK_CONFORMANCE_ONLY:-rust c python node java cli} "
jobs=${POLYLOCK_CONFORMANCE_JOBS:-3}
wanted() { [[ "$only_rt" == *" $1 "* ]]; }
# The servers (started here when none answers: a runner that cannot connect would fail every
# scenario, as if the runtimes disagreed) and the one release build (built here when missing).
if [ -z "${POLYLOCK_REDIS_URL:-}" ]; then
  bash scripts/servers.sh start >&2 || { echo "the servers did not start (scripts/servers.sh start)"; echo "0 passed, 1 failed"; exit 1; }
  eval "$(bash scripts/servers.sh env)"
fi
export POLYLOCK_CLI="${POLYLOCK_CLI:-$target/release/polylock}"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
jar="bindings-java/target/polylock-$version.jar"
missing=()
[ -x "$POLYLOCK_CLI" ] && [ -x "$target/debug/examples/conformance" ] && [ -f "$target/release/libpolylock.so" ] || missing+=(cargo)
"$py" -c "import polylock" 2>/dev/null || missing+=(python)
[ -f bindings-node/polylock.node ] || missing+=(node)
[ -f "$jar" ] || missing+=(java)
if [ ${#missing[@]} -gt 0 ]; then
  echo "conformance: building ${missing[*]} first (scripts/build.sh)" >&2
  bash scripts/build.sh "${missing[@]}" >&2 || { echo "the build failed"; echo "0 passed, 1 failed"; exit 1; }
fi

# The two runners that need compiling, from the build's artifacts.
prepare() {
  local ok=0
  if wanted c || [ "${1:-}" = all ]; then
    cc -std=c11 -Wall -Wextra -Werror -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
      -fno-sanitize-recover=undefined -Iinclude conformance/runners/c/runner.c \
      -L"$target/release" -lpolylock -Wl,-rpath,"$target/release" -lpthread -o "$out/c-runner" || ok=1
  fi
  if wanted java || [ "${1:-}" = all ]; then
    rm -rf "$out/java-runner" && mkdir -p "$out/java-runner"
    javac -Xlint:all -Werror -cp "$jar" -d "$out/java-runner" conformance/runners/java/Runner.java || ok=1
  fi
  return $ok
}

# The command that runs RUNTIME's runner with ARGS.
runner() { # runner RUNTIME ARGS...
  local rt=$1
  shift
  case $rt in
    rust) "$target/debug/examples/conformance" --scenarios conformance "$@" ;;
    c) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "$out/c-runner" --scenarios conformance "$@" ;;
    python) "$py" conformance/runners/python/runner.py --scenarios conformance "$@" ;;
    node) node conformance/runners/node/runner.js --scenarios conformance "$@" ;;
    java) java -cp "$jar:$out/java-runner" Runner --scenarios conformance "$@" ;;
    cli) "$py" conformance/runners/cli/runner.py --polylock "$POLYLOCK_CLI" --scenarios conformance "$@" ;;
  esac
}

if [ "${1:-}" = --table ]; then
  prepare all || exit 1
  for rt in rust c python node java cli; do
    runner "$rt" --vocabulary >"$out/$rt.vocabulary.json" || { echo "the $rt runner gave no vocabulary"; exit 1; }
  done
  "$py" scripts/lib/contract-table.py "$out"/{rust,c,python,node,java,cli}.vocabulary.json >"$out/contract-table.md" || exit 1
  if [ "${2:-}" = --check ]; then
    if ! diff -u docs/src/contract-table.md "$out/contract-table.md"; then
      echo "docs/src/contract-table.md is not what the runners say: run scripts/conformance.sh --table"
      exit 1
    fi
    echo "docs/src/contract-table.md is current"
  else
    cp "$out/contract-table.md" docs/src/contract-table.md
    echo "wrote docs/src/contract-table.md"
  fi
  exit 0
fi

prepare || { echo "0 passed, 1 failed"; exit 1; }
declare -A pids=()
for rt in rust c python node java cli; do
  wanted "$rt" || continue
  (runner "$rt" --jobs "$jobs" "$@") >"$out/$rt.log" 2>&1 &
  pids[$rt]=$!
done
status=0
for rt in rust c python node java cli; do
  [ -n "${pids[$rt]:-}" ] || continue
  wait "${pids[$rt]}" || status=1
done
passed=0
failed=0
for rt in rust c python node java cli; do
  [ -n "${pids[$rt]:-}" ] || continue
  line=$(grep -E "^conformance $rt: " "$out/$rt.log" | tail -1)
  if [ -z "$line" ]; then
    echo "conformance $rt: 0 passed, 1 failed, 0 not applicable (the runner did not finish; its log follows)"
    tail -20 "$out/$rt.log"
    failed=$((failed + 1))
    status=1
    continue
  fi
  echo "$line"
  grep -E '^FAIL ' "$out/$rt.log" | sed 's/^/  /'
  read -r p f <<<"$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/' <<<"$line")"
  passed=$((passed + p))
  failed=$((failed + f))
done
echo "conformance suite: $((SECONDS - start))s (wall, the six runtimes side by side)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
