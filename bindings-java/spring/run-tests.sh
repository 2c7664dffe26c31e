#!/usr/bin/env bash
# The Spring Boot starter's tests: install the binding's JAR into ~/.m2 the way the starter's pom
# takes it (the release native library of the workspace's one build; skipped when
# POLYLOCK_SKIP_BUILD=1: scripts/build.sh installed it), then run the
# starter's Spring Boot tests against the real Redis of scripts/servers.sh (POLYLOCK_REDIS_URL,
# default redis://127.0.0.1:6379). Prints "N passed, N failed" (JUnit's counts from the Surefire
# reports; a skipped test counts as failed).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
mvn=(mvn -B -q -Dstyle.color=never)
eval "$(bash scripts/servers.sh ensure)" # alone: the servers (scripts/test.sh started them)

status=0
reports=bindings-java/spring/target/surefire-reports
rm -rf "$reports"
[ "${POLYLOCK_SKIP_BUILD:-}" = 1 ] || "${mvn[@]}" -f bindings-java/pom.xml install -DskipTests || status=1
if [ $status = 0 ]; then
  "${mvn[@]}" -f bindings-java/spring/pom.xml verify || status=1
fi
summary=$(cat "$reports"/*.txt 2>/dev/null |
  grep -Eo 'Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+' |
  awk -F'[:,] *' '{run+=$2; bad+=$4+$6+$8} END {printf "%d %d", run-bad, bad}')
read -r passed failed <<<"$summary"
echo # Maven leaves colour resets without a newline: start the count on its own line
echo "${passed:-0} passed, ${failed:-0} failed (Java: Spring)"
[ "${passed:-0}" -gt 0 ] || status=1
exit $status
