#!/usr/bin/env bash
# Every test of polylock, against real servers this script installs and starts on 127.0.0.1.
#
# One build serves every suite: the workspace's release profile (the profile users run), built
# once in the build stage (the Rust test binaries and examples, the C library, the Python wheel,
# the Node addon, the JAR), then the suites run side by side, since they wait on servers far more
# than they compute: the Rust test binaries (several at once), the C suite under AddressSanitizer,
# the Python suite (pytest), the Node suite (node --test, both drivers), the Java suite (JUnit,
# Redisson and Curator interop) and the Spring Boot starter's. Each suite's output goes to
# target/test-logs/<suite>.log and is printed when it ends. Ends with each stage's wall time and
# one line: "N passed, N failed".
#
#   POLYLOCK_TEST_ONLY="rust python"   run only these suites (rust c python node java spring operate)
#   POLYLOCK_RUST_JOBS=3               Rust test binaries run at once
#   POLYLOCK_SUITE_TIMEOUT=1500        seconds a suite may run before it is stopped and failed
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
logs="$target/test-logs"
rm -rf "$logs"
mkdir -p "$logs"
only=" ${POLYLOCK_TEST_ONLY:-rust c python node java spring operate} "
wanted() { [[ "$only" == *" $1 "* ]]; }

stages=()
stage_start=$SECONDS
stage() { # stage NAME: close the current stage's clock under NAME
  stages+=("$(printf '%-34s %5ds' "$1" $((SECONDS - stage_start)))")
  stage_start=$SECONDS
}

bash scripts/servers.sh start || { echo "0 passed, 1 failed"; exit 1; }
eval "$(bash scripts/servers.sh env)"
# The Rust and Java suites look at the whole SQL server (its sessions, waiters and locks) to
# prove that nothing is left behind: each gets a MariaDB and a PostgreSQL of its own, so that the
# suites running beside it cannot change what it counts.
sql_set() { # MYSQL_PORT PG_PORT start-sql|env-sql
  POLYLOCK_MYSQL_PORT=$1 POLYLOCK_PG_PORT=$2 bash scripts/servers.sh "$3"
}
sql_set 3317 5443 start-sql && sql_set 3327 5453 start-sql || { echo "0 passed, 1 failed"; exit 1; }
rust_sql=$(sql_set 3317 5443 env-sql)
java_sql=$(sql_set 3327 5453 env-sql)
stage "servers"

status=0
echo "== build (release, once for every suite)"
bash scripts/build.sh || { echo "the build failed"; echo; echo "0 passed, 1 failed"; exit 1; }
stage "build"

# A suite runs in the background, its output in its log; the loop below prints it when it ends
# and keeps its status. A suite still running after POLYLOCK_SUITE_TIMEOUT seconds is stopped
# (its whole process group: it runs as a job of its own), counted failed and its log
# printed, so a hang shows which suite and where instead of running into CI's own limit.
suite_timeout=${POLYLOCK_SUITE_TIMEOUT:-1500}
declare -A pids=() watchers=()
run_suite() { # run_suite NAME COMMAND...
  local name=$1
  shift
  # The suite and its watcher each lead a process group of their own (job control on): the
  # watcher stops all of the suite, and the loop below stops the watcher and its sleep at once.
  set -m
  ("$@") >"$logs/$name.log" 2>&1 &
  local group=$!
  pids[$name]=$group
  (
    sleep "$suite_timeout"
    echo "== $name suite: still running after ${suite_timeout}s (POLYLOCK_SUITE_TIMEOUT): stopped" >>"$logs/$name.log"
    kill -TERM -- "-$group" 2>/dev/null
    sleep 15
    kill -KILL -- "-$group" 2>/dev/null
  ) >/dev/null 2>&1 &
  watchers[$name]=$!
  set +m
}
started=$SECONDS
export POLYLOCK_SKIP_BUILD=1
if wanted rust; then run_suite rust bash -c "$rust_sql; exec bash scripts/test-rust.sh"; fi
if wanted c; then run_suite c bash bindings-c/run-tests.sh; fi
if wanted python; then run_suite python bash bindings-python/run-tests.sh; fi
if wanted node; then run_suite node bash bindings-node/run-tests.sh; fi
# What an operator sees (status --match, top under tmux, serve's /metrics and live page in
# Chromium), with a Python holder: after the Python wheel is installed by the build above.
if wanted operate; then run_suite operate bash scripts/operate-test.sh; fi
if wanted java || wanted spring; then
  java_lane() {
    local s=0
    eval "$java_sql"
    if wanted java; then bash bindings-java/run-tests.sh || s=1; fi
    if wanted spring; then bash bindings-java/spring/run-tests.sh || s=1; fi
    return $s
  }
  run_suite java java_lane
fi
# Print each suite as it ends (in the order they end).
declare -A took=()
while [ ${#pids[@]} -gt 0 ]; do
  wait -n -p done_pid "${pids[@]}"
  rc=$?
  for name in "${!pids[@]}"; do
    [ "${pids[$name]}" = "$done_pid" ] || continue
    took[$name]=$((SECONDS - started))
    kill -- "-${watchers[$name]}" 2>/dev/null
    echo "== $name suite (exit $rc, ${took[$name]}s)"
    cat "$logs/$name.log"
    [ "$rc" = 0 ] || { status=1; echo "== $name suite FAILED (exit $rc)"; }
    unset "pids[$name]"
  done
done
for name in rust c python node java; do
  [ -n "${took[$name]:-}" ] && stages+=("$(printf '  %-32s %5ds' "$name suite (side by side)" "${took[$name]}")")
done
stage "suites (side by side)"

# cargo ("test result: ok. N passed; N failed"), the C and Java runners and pytest ("N passed, N
# failed"), node --test ("ℹ pass N", "ℹ fail N").
cat "$logs"/*.log >"$logs/all.txt"
passed=$( (grep -Eo '(^test result: .* |^)[0-9]+ passed' "$logs/all.txt" | grep -Eo '[0-9]+'; grep -Eo '^ℹ pass [0-9]+' "$logs/all.txt" | grep -Eo '[0-9]+') | awk '{s+=$1} END {print s+0}')
failed=$( (grep -Eo '(; |, |^)[0-9]+ failed' "$logs/all.txt" | grep -Eo '[0-9]+'; grep -Eo '^ℹ fail [0-9]+' "$logs/all.txt" | grep -Eo '[0-9]+') | awk '{s+=$1} END {print s+0}')
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi # a build or script failure counts
echo
echo "== stage times (wall)"
printf '%s\n' "${stages[@]}"
echo
echo "${passed} passed, ${failed} failed"
[ "$passed" -gt 0 ] || exit 1
exit "$status"
