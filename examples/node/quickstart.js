'use strict';
// polylock from Node: node examples/node/quickstart.js [URL]
const { connect } = require('polylock');

async function main() {
  const url = process.argv[2] || 'redis://127.0.0.1:6379';
  const client = await connect(url);
  const lock = client.lock(url.startsWith('zk://') ? '/quickstart/goods' : 'quickstart:goods');
  try {
    // acquire, run, release; the signal aborts if the lock is lost meanwhile
    await lock.using(async (signal) => {
      console.log(`holding ${lock.name} with fencing token ${lock.fencingToken}`, signal.aborted ? '(lost)' : '');
    }, { waitMs: 5000 });
  } finally {
    await client.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
