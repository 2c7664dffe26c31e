'use strict';
// Builds the native addon with cargo (the only toolchain needed besides node and npm) and puts it
// next to index.js as polylock.node. POLYLOCK_NODE_PROFILE=dev builds in debug (the test suite).
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const here = __dirname;
// `npm install` runs this with --if-needed: nothing to build when the prebuilt addon of this
// platform is installed (the polylock-<platform> package, an optional dependency).
if (process.argv.includes('--if-needed')) {
  const native = require('./native');
  const have = native.prebuilt();
  if (have) {
    console.log(`polylock: using the prebuilt ${have}`);
    process.exit(0);
  }
  if (!fs.existsSync(path.join(here, 'Cargo.toml'))) {
    console.warn(
      `polylock: no prebuilt addon for ${native.platformTriple()} and no sources to build one ` +
        '(install from the repository with cargo to build it)'
    );
    process.exit(0);
  }
}
const profile = process.env.POLYLOCK_NODE_PROFILE || 'release';
const cargo = process.env.CARGO || 'cargo';
const args = ['build', '-p', 'polylock-node', '--message-format=short'];
if (profile === 'release') args.push('--release');
else if (profile !== 'dev' && profile !== 'debug') args.push('--profile', profile);
execFileSync(cargo, args, { cwd: here, stdio: ['ignore', 'inherit', 'inherit'] });
const meta = JSON.parse(
  execFileSync(cargo, ['metadata', '--format-version', '1', '--no-deps'], { cwd: here, encoding: 'utf8' })
);
const dir = profile === 'dev' || profile === 'debug' ? 'debug' : profile;
const file = { darwin: 'libpolylock_node.dylib', win32: 'polylock_node.dll' }[process.platform] || 'libpolylock_node.so';
fs.copyFileSync(path.join(meta.target_directory, dir, file), path.join(here, 'polylock.node'));
console.log(`polylock: built polylock.node (${dir})`);
