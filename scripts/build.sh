#!/usr/bin/env bash
# The one release build of polylock that the bindings' test suites, the fault harness, the demo,
# chaos and the packages share (optimised, with line tables), with one feature set for every crate
# (see workspace-hack/Cargo.toml), in one target directory ($CARGO_TARGET_DIR, default target/);
# and the Rust test binaries, which build in the dev profile (debug assertions on, a third of the
# release profile's compile time for two dozen test crates). What each consumer finds afterwards,
# with nothing left for it to compile:
#   target/release/polylock                  the CLI
#   target/release/libpolylock.{so,a}        the C library (include/polylock.h regenerated)
#   target/release/examples/seckill          the Rust seckill buyer (the demo)
#   target/debug/deps/<test>-*               the Rust test binaries (scripts/test-rust.sh)
#   target/debug/examples/                   the test tools: the conformance runner, the fault and
#                                            chaos workers (dev profile: each is a whole program
#                                            over the core, 80-110 s apiece optimised, 20 s here)
#   target/wheels/polylock-*.whl             the Python wheel (maturin, as scripts/package.sh ships
#                                            it), installed into the current Python
#   bindings-node/polylock.node              the Node addon (build.js: cargo finds it built)
#   bindings-java/target/polylock-*.jar      the JAR, also installed into ~/.m2 for the Spring
#                                            starter and the examples
# Later cargo, maturin, napi and Maven runs of the same profile reuse all of it.
#
#   scripts/build.sh [cargo] [python] [node] [java]    only these parts (all by default)
# where cargo is both cargo parts: release (the libraries, the CLI, seckill: what the packages,
# the docs and the demo use) and dev (the Rust test binaries and the test tools).
# A suite's run-tests.sh builds its part this way unless POLYLOCK_SKIP_BUILD=1 (scripts/test.sh
# builds everything first, then runs the suites side by side).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
py=${PYTHON:-python3}
target="${CARGO_TARGET_DIR:-$root/target}"
t0=$SECONDS
took() { printf 'build: %-28s %4ds\n' "$1" $((SECONDS - t0)); t0=$SECONDS; }

parts=" ${*:-cargo python node java} "
parts=${parts/ cargo / release dev }
# The Rust test tools, built in the dev profile beside the test binaries (scripts/conformance.sh,
# scripts/faults.sh and scripts/chaos.sh run them from target/debug/examples).
test_tools="--example conformance --example fault_worker --example chaos_worker"
part() { [[ "$parts" == *" $1 "* ]]; }

bash scripts/setup.sh build # protoc (etcd's client compiles .proto files), a C compiler, ...
if part release; then
  # --lib --bins too: with a target flag cargo builds only the targets named, and --example alone
  # leaves out the C library (cdylib, staticlib), the Node and Java libraries and the CLI. The
  # Python extension is maturin's alone: maturin links it with flags of its own, and a cargo build
  # of it beside maturin's would make each compile it again on every run (80 s each here).
  # POLYLOCK_BUILD_JSON=1: cargo's JSON messages on stdout (scripts/docs-examples.py reads the
  # rlibs of polylock and tokio from them).
  cargo build --workspace --exclude polylock-python --release --lib --bins --example seckill --quiet \
    ${POLYLOCK_BUILD_JSON:+--message-format=json}
  took "cargo release (libraries, CLI, seckill)"
fi
if part dev; then
  cargo test --workspace --no-run --quiet 2>/dev/null ||
    cargo test --workspace --no-run # again, to show the errors
  cargo build --workspace $test_tools --quiet
  took "cargo dev (Rust test binaries, test tools)"
fi

if part python; then
  "$py" -m pip install --quiet --disable-pip-version-check "maturin>=1.9,<2"
  rm -rf "$target/wheels"
  "$py" -m maturin build --release --strip --quiet -m bindings-python/Cargo.toml -o "$target/wheels"
  "$py" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$target"/wheels/polylock-*.whl
  took "python wheel"
fi

if part node; then
  (cd bindings-node && POLYLOCK_NODE_PROFILE=release npm install --no-audit --no-fund --loglevel=error >/dev/null)
  (cd examples/node && POLYLOCK_NODE_PROFILE=release npm install --no-audit --no-fund --loglevel=error >/dev/null)
  took "node addon"
fi

if part java; then
  mvn -B -q -Dstyle.color=never -f bindings-java/pom.xml install -DskipTests
  took "java jar"
fi
