#!/usr/bin/env bash
# Build the addon the way `npm install` does (release: scripts/build.sh node, unless
# POLYLOCK_SKIP_BUILD=1), run the node:test suite against the servers of scripts/servers.sh, and
# run the Node examples as smoke tests.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
[ "${POLYLOCK_SKIP_BUILD:-}" = 1 ] || bash "$root/scripts/build.sh" node
cd "$here"
# Both drivers: the loop driver (Redis I/O on Node's own event loop, the default) and the
# runtime driver (every call on polylock's runtime threads).
echo "== Node suite on the loop driver"
suites=0
node --test --test-reporter=spec test/ 2>&1 || suites=1
echo "== Node suite on the runtime driver (POLYLOCK_NODE_DRIVER=runtime)"
POLYLOCK_NODE_DRIVER=runtime node --test --test-reporter=spec test/ 2>&1 || suites=1
cd "$root"
eval "$(bash scripts/servers.sh ensure)" # alone: the servers (scripts/test.sh started them)
url=${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}
node examples/node/quickstart.js "$url"
node examples/node/quickstart.js "${POLYLOCK_ZK_URL:-zk://127.0.0.1:2181}"
# npm install ./bindings-node from another project (examples/node, installed by scripts/build.sh
# node), and two Node buyers sell 20.
cd "$root/examples/node"
name="node-smoke-$$"
redis-cli -u "$url" SET "seckill:$name:stock" 20 >/dev/null
node seckill_buyer.js --url "$url" --name "$name" >/tmp/polylock-node-b1.json &
b1=$!
node seckill_buyer.js --url "$url" --name "$name" >/tmp/polylock-node-b2.json
wait $b1
sold=$(redis-cli -u "$url" GET "seckill:$name:sold")
echo "Node seckill: sold $sold ($(cat /tmp/polylock-node-b1.json) $(cat /tmp/polylock-node-b2.json))"
[ "$sold" = 20 ]
exit $suites
