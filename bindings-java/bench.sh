#!/usr/bin/env bash
# polylock beside Redisson (same run, same Redis): builds the release native library into the JAR,
# then runs io.polylock.bench.LockBench from the test classpath. Usage: bench.sh [redis-url] [seconds]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bash "$here/../scripts/servers.sh" start >/dev/null
mvn -B -q -f "$here/pom.xml" test-compile
mvn -B -q -f "$here/pom.xml" exec:java -Dexec.mainClass=io.polylock.bench.LockBench \
    -Dexec.classpathScope=test -Dexec.args="${1:-redis://127.0.0.1:6379} ${2:-3}"
