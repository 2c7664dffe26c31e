#!/usr/bin/env bash
# Every test of polylock, against real servers this script installs and starts on 127.0.0.1:
# the Rust suites (cargo test, debug builds, one shared target directory), the C suite under
# AddressSanitizer, the Python suite (pytest), the Node suite (node --test), the Java suite (JUnit) and the Spring Boot starter's. Ends with one line: "N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/servers.sh start || { echo "0 passed, 1 failed"; exit 1; }
eval "$(bash scripts/servers.sh env)"

log=$(mktemp)
status=0
cargo test --workspace --no-fail-fast --color never 2>&1 | tee "$log" || status=$?
echo "== C suite (bindings-c, ASan + UBSan)"
bash bindings-c/run-tests.sh 2>&1 | tee -a "$log" || status=1
echo "== Python suite (pip install ./bindings-python, pytest, mypy --strict on the examples)"
bash bindings-python/run-tests.sh 2>&1 | tee -a "$log" || status=1
echo "== Node suite (npm install in bindings-node, node --test)"
bash bindings-node/run-tests.sh 2>&1 | tee -a "$log" || status=1
echo "== Java suite (mvn verify in bindings-java: JUnit, Redisson and Curator interop; examples)"
bash bindings-java/run-tests.sh 2>&1 | tee -a "$log" || status=1
echo "== Java Spring Boot starter (bindings-java/spring: @DistributedLocked, auto-configuration)"
bash bindings-java/spring/run-tests.sh 2>&1 | tee -a "$log" || status=1

# cargo ("test result: ok. N passed; N failed"), the C and Java runners and pytest ("N passed, N failed"),
# node --test ("ℹ pass N", "ℹ fail N").
passed=$( (grep -Eo '(^test result: .* |^)[0-9]+ passed' "$log" | grep -Eo '[0-9]+'; grep -Eo '^ℹ pass [0-9]+' "$log" | grep -Eo '[0-9]+') | awk '{s+=$1} END {print s+0}')
failed=$( (grep -Eo '(; |, |^)[0-9]+ failed' "$log" | grep -Eo '[0-9]+'; grep -Eo '^ℹ fail [0-9]+' "$log" | grep -Eo '[0-9]+') | awk '{s+=$1} END {print s+0}')
rm -f "$log"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi # a build or script failure counts
echo
echo "${passed} passed, ${failed} failed"
[ "$passed" -gt 0 ] || exit 1
exit "$status"
