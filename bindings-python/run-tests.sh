#!/usr/bin/env bash
# Install the Python package the way a user does (the wheel maturin builds, as scripts/package.sh
# ships it; scripts/build.sh python, unless POLYLOCK_SKIP_BUILD=1), run the pytest suite
# against the servers of scripts/servers.sh, type-check the examples with mypy --strict, and run
# the examples as smoke tests.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
eval "$(bash scripts/servers.sh ensure)" # alone: the servers (scripts/test.sh started them)
py=${PYTHON:-python3}
url=${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}

[ "${POLYLOCK_SKIP_BUILD:-}" = 1 ] || bash scripts/build.sh python
# prometheus_client and OpenTelemetry: tests/test_metrics.py (polylock.metrics' optional libraries);
# psycopg, psycopg2 and PyMySQL: tests/test_fence.py (the SQL guards over the users' own drivers).
$py -m pip install --quiet --disable-pip-version-check pytest mypy redis types-redis uvloop \
  "psycopg[binary]" psycopg2-binary PyMySQL \
  prometheus_client opentelemetry-api opentelemetry-sdk >/dev/null 2>&1 ||
  $py -m pip install --quiet --disable-pip-version-check pytest mypy redis uvloop \
    "psycopg[binary]" psycopg2-binary PyMySQL \
    prometheus_client opentelemetry-api opentelemetry-sdk
cd bindings-python
$py -m pytest -q -p no:cacheprovider tests
# The asyncio calls again on the runtime driver (the loop driver is the default above).
POLYLOCK_PY_DRIVER=runtime $py -m pytest -q -p no:cacheprovider tests/test_asyncio_driver.py
cd "$root"
$py -m mypy --strict --no-error-summary examples/python/quickstart.py examples/python/seckill_buyer.py
echo "mypy --strict: examples OK"
$py examples/python/quickstart.py "$url"
$py examples/python/quickstart.py "${POLYLOCK_ZK_URL:-zk://127.0.0.1:2181}"
name="py-smoke-$$"
redis-cli -u "$url" SET "seckill:$name:stock" 20 >/dev/null
$py examples/python/seckill_buyer.py --url "$url" --name "$name" >/tmp/polylock-py-b1.json &
b1=$!
$py examples/python/seckill_buyer.py --url "$url" --name "$name" >/tmp/polylock-py-b2.json
wait $b1
sold=$(redis-cli -u "$url" GET "seckill:$name:sold")
echo "Python seckill: sold $sold ($(cat /tmp/polylock-py-b1.json) $(cat /tmp/polylock-py-b2.json))"
[ "$sold" = 20 ]
