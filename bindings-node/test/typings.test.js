'use strict';
// index.d.ts is hand-written: it must declare every export of index.js and every public member
// of its classes, and declare nothing they lack.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const polylock = require('..');

const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');

/** The members each `export class` of the typings declares. */
function declaredClasses() {
  const classes = {};
  const re = /^export class (\w+)[^{]*\{\n([\s\S]*?)^\}/gm;
  for (const [, name, body] of dts.matchAll(re)) {
    const members = new Set();
    for (const line of body.split('\n')) {
      const m = /^ {2}(?:readonly |static |private )*(\w+)\??[(<:]/.exec(line);
      if (m && !['constructor', 'on', 'once'].includes(m[1])) members.add(m[1]);
    }
    classes[name] = members;
  }
  return classes;
}

/** The public members of a class at run time: its prototype's, without `_` ones. */
function runtimeMembers(cls) {
  return new Set(
    Object.getOwnPropertyNames(cls.prototype).filter((n) => n !== 'constructor' && !n.startsWith('_')),
  );
}

test('every export of index.js is declared in index.d.ts, and nothing more', () => {
  const declared = new Set([...dts.matchAll(/^export (?:declare )?(?:class|function|const) (\w+)/gm)].map((m) => m[1]));
  assert.deepEqual([...declared].sort(), Object.keys(polylock).sort());
});

test('every public member of the exported classes is declared, and every declared one exists', () => {
  const classes = declaredClasses();
  for (const [name, members] of Object.entries(classes)) {
    const cls = polylock[name];
    assert.equal(typeof cls, 'function', `${name} is not a class of index.js`);
    if (name === 'PolylockError') continue; // `code` is an own property of each error
    const own = runtimeMembers(cls);
    for (const m of own) assert.ok(members.has(m), `${name}.${m} is not declared in index.d.ts`);
    for (const m of members) assert.ok(m in cls.prototype, `${name}.${m} is declared but index.js has none`);
  }
  assert.ok(classes.Lock.has('tryLock') && classes.LockHold.has('release'));
});
