#!/usr/bin/env bash
# Build the JAR the way a user does (mvn package builds the native library into it: the release
# build in the workspace's one target directory, scripts/build.sh), run the unit tests (Surefire) and the suites
# against the servers of scripts/servers.sh, Redisson, Curator, ShedLock and plain-JDBC interop included (Failsafe, from
# the packaged JAR), then build the examples against the installed JAR and run them as smoke
# tests. Prints "N passed, N failed" (JUnit's counts; a skipped test counts as failed).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
eval "$(bash scripts/servers.sh ensure)" # alone: the servers (scripts/test.sh started them)
url=${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}
zk=${POLYLOCK_ZK_URL:-zk://127.0.0.1:2181}
mvn=(mvn -B -q -Dstyle.color=never)

status=0
# The Curator interop suite runs the polylock command beside Curator (the release build).
[ "${POLYLOCK_SKIP_BUILD:-}" = 1 ] || cargo build --workspace --release --bin polylock --quiet || status=1
export POLYLOCK_CLI="${CARGO_TARGET_DIR:-$root/target}/release/polylock"
rm -rf bindings-java/target/surefire-reports bindings-java/target/failsafe-reports
"${mvn[@]}" -f bindings-java/pom.xml verify || status=1
# Virtual threads need Java 21+: run VirtualThreadIT (and the unit tests again) on the newest JDK
# of the machine (this kind of machine has a Temurin JDK beside its default one).
newer=""
for j in /usr/lib/jvm/*/bin/java; do
  major=$("$j" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  if [ -n "$major" ] && [ "$major" -ge 21 ]; then newer=$j; fi
done
if [ -n "$newer" ]; then
  echo "== VirtualThreadIT on $("$newer" -version 2>&1 | head -1)"
  "${mvn[@]}" -f bindings-java/pom.xml verify -Dit.test=VirtualThreadIT -Djvm="$newer" \
    -DargLine=--enable-native-access=ALL-UNNAMED || status=1
else
  echo "no JDK 21 or newer under /usr/lib/jvm: the virtual-thread tests could not run"
  status=1
fi
summary=$(cat bindings-java/target/surefire-reports/*.txt bindings-java/target/failsafe-reports/*.txt 2>/dev/null |
  grep -Eo 'Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+' |
  awk -F'[:,] *' '{run+=$2; bad+=$4+$6+$8} END {printf "%d %d", run-bad, bad}')
read -r passed failed <<<"$summary"
echo # Maven leaves colour resets without a newline: start the count on its own line
echo "${passed:-0} passed, ${failed:-0} failed (Java: JUnit)"

smoke() {
  if [ "${POLYLOCK_SKIP_BUILD:-}" != 1 ]; then
    "${mvn[@]}" -f bindings-java/pom.xml install -DskipTests || return 1
  fi
  "${mvn[@]}" -f examples/java/pom.xml package dependency:build-classpath \
    -Dmdep.outputFile=target/classpath.txt || return 1
  local cp="examples/java/target/classes:$(cat examples/java/target/classpath.txt)"
  java -cp "$cp" example.QuickStart "$url" || return 1
  java -cp "$cp" example.QuickStart "$zk" || return 1
  local name="java-smoke-$$"
  redis-cli -u "$url" SET "seckill:$name:stock" 20 >/dev/null
  java -cp "$cp" example.SeckillBuyer --url "$url" --name "$name" >/tmp/polylock-java-b1.json &
  local b1=$!
  java -cp "$cp" example.SeckillBuyer --url "$url" --lock-url "$url" --name "$name" >/tmp/polylock-java-b2.json || return 1
  wait $b1 || return 1
  local sold
  sold=$(redis-cli -u "$url" GET "seckill:$name:sold")
  echo "Java seckill: sold $sold ($(cat /tmp/polylock-java-b1.json) $(cat /tmp/polylock-java-b2.json))"
  [ "$sold" = 20 ]
}
smoke || { echo "Java examples smoke test failed"; status=1; }
[ "${passed:-0}" -gt 0 ] || status=1
exit $status
