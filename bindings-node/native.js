'use strict';
// Finds the native addon: the prebuilt one of this platform's package (polylock-<platform>, an
// optional dependency, napi-rs's layout), else polylock.node built next to this file by build.js
// (`npm install` from source, with cargo).
const fs = require('node:fs');
const path = require('node:path');

/** The platform package's suffix: linux-x64-gnu, linux-arm64-musl, darwin-arm64, ... */
function platformTriple() {
  const { platform, arch } = process;
  if (platform !== 'linux') return `${platform}-${arch}`;
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
  const glibc = report && report.header && report.header.glibcVersionRuntime;
  return `${platform}-${arch}-${glibc ? 'gnu' : 'musl'}`;
}

function prebuilt() {
  const name = `polylock-${platformTriple()}`;
  try {
    return require.resolve(name);
  } catch {
    return null;
  }
}

function local() {
  const file = path.join(__dirname, 'polylock.node');
  return fs.existsSync(file) ? file : null;
}

function load() {
  const file = prebuilt() || local();
  if (!file) {
    throw new Error(
      `polylock: no native addon for ${platformTriple()}: install the polylock-${platformTriple()} ` +
        'package, or build from source (npm install with cargo on the PATH runs build.js)'
    );
  }
  return require(file);
}

module.exports = { load, prebuilt, local, platformTriple };
