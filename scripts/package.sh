#!/usr/bin/env bash
# Build the installable artifacts into dist/ and check each where no Rust toolchain is on the PATH:
#   dist/polylock-<ver>-cp39-abi3-<platform>.whl   one abi3 wheel (Python 3.9+), with the `polylock`
#                                                   console command; maturin build --release
#   dist/polylock-<ver>.tar.gz                      the sdist (builds from source with cargo)
#   dist/polylock-c-<ver>-linux-<arch>.tar.gz       include/, lib/ (libpolylock.so, .a), lib/pkgconfig
#   dist/polylock-<ver>.tgz                         the npm package (JS, types, and the sources
#                                                   for a build where no prebuilt addon fits)
#   dist/polylock-<platform>-<ver>.tgz              its prebuilt addon for this platform (napi-rs's
#                                                   layout: an optional dependency of the main one)
#   dist/polylock-<ver>.jar                         io.polylock:polylock, the native library inside
#                                                   (Automatic-Module-Name io.polylock)
# The checks: a fresh venv installs the wheel, locks on Redis and runs `polylock --version`; a C
# program builds against the tarball exactly as unpacked (its pkg-config file is relocatable),
# through PKG_CONFIG_PATH, and locks; an empty folder
# `npm install`s the two npm tarballs and locks from CommonJS and from ESM; a plain `java -cp
# polylock.jar` program and the module path (`--module-path`, `requires io.polylock`) lock; the
# CLI's tarball runs `polylock --version` and holds a lock.
#   dist/polylock-cli-<ver>-linux-<arch>.tar.gz     the `polylock` command, stripped
#
#   scripts/package.sh [--only python|node|java|c|cli]...   these packages only (all by default)
# Installs only the build tools those need (scripts/setup.sh: protoc and a C compiler for the
# Rust core, a JDK and Maven for the JAR), and uses the Redis at $POLYLOCK_REDIS_URL (default
# redis://127.0.0.1:6379) for the install checks; with none answering there it starts one
# (scripts/servers.sh start-redis) and says so.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only)
      shift
      for part in ${1//,/ }; do
        case "$part" in
          python | node | java | c | cli) only+=("$part") ;;
          *) echo "package.sh: --only takes python, node, java, c or cli, not '$part'" >&2; exit 64 ;;
        esac
      done
      ;;
    *) echo "usage: $0 [--only python|node|java|c|cli]..." >&2; exit 64 ;;
  esac
  shift
done
[ ${#only[@]} -gt 0 ] || only=(python c cli node java)
want() { [[ " ${only[*]} " == *" $1 "* ]]; }

# The build tools of the chosen packages only: the Rust core's (protoc, a C compiler) for all,
# a JDK and Maven for the JAR; and a Redis for the install checks.
tools=(rust redis)
if want java; then tools+=(java); fi
bash scripts/setup.sh "${tools[@]}"
py=${PYTHON:-python3}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(uname -m)
if [ -z "${POLYLOCK_REDIS_URL:-}" ] && ! redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
  echo "== no Redis answers on 127.0.0.1:6379: starting one for the install checks (scripts/servers.sh start-redis)"
  bash scripts/servers.sh start-redis
fi
url=${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}
mkdir -p dist
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
clean_path=/usr/local/bin:/usr/bin:/bin

build_python() {
echo "== Python: one abi3 wheel"
"$py" -m pip install --quiet --disable-pip-version-check "maturin>=1.9,<2"
rm -f dist/polylock-*.whl
"$py" -m maturin build --release --strip --quiet -m bindings-python/Cargo.toml -o dist
wheel=$(ls dist/polylock-"$version"-*abi3*.whl)
echo "built $wheel"
# The source distribution stays available: it builds with cargo (checked below, with cargo).
rm -f dist/polylock-[0-9]*.tar.gz
"$py" -m maturin sdist -m bindings-python/Cargo.toml -o dist >/dev/null
sdist="dist/polylock-$version.tar.gz"
echo "built $sdist"

}

build_c() {
echo "== C: headers, libraries and pkg-config file"
stage="$work/polylock-c-$version-linux-$arch"
make --no-print-directory -s install PREFIX=/usr/local DESTDIR="$stage" >/dev/null
strip --strip-debug "$stage/usr/local/lib/libpolylock.a" "$stage/usr/local/lib/libpolylock.so"
(cd "$stage/usr/local" && tar czf "$root/dist/polylock-c-$version-linux-$arch.tar.gz" include lib)
echo "built dist/polylock-c-$version-linux-$arch.tar.gz"

}

build_cli() {
echo "== the polylock command (stripped)"
# scripts/build.sh's release part (the same targets select the same features): nothing to compile.
bash scripts/build.sh release >/dev/null
local stage="$work/polylock-cli-$version-linux-$arch"
mkdir -p "$stage/bin"
cp "${CARGO_TARGET_DIR:-$root/target}/release/polylock" "$stage/bin/polylock"
strip "$stage/bin/polylock"
(cd "$work" && tar czf "$root/dist/polylock-cli-$version-linux-$arch.tar.gz" "polylock-cli-$version-linux-$arch")
echo "built dist/polylock-cli-$version-linux-$arch.tar.gz (the command: $(du -h "$stage/bin/polylock" | cut -f1), stripped)"
}

build_node() {
echo "== Node: the npm package and its prebuilt addon"
triple=$(node -p "require('./bindings-node/native').platformTriple()")
(cd bindings-node && POLYLOCK_NODE_PROFILE=release node build.js >/dev/null)
plat="$work/npm-platform"
mkdir -p "$plat"
cp bindings-node/polylock.node "$plat/polylock.$triple.node"
strip --strip-debug "$plat/polylock.$triple.node"
node - "$plat" "$triple" "$version" <<'JSEOF'
const [dir, triple, version] = process.argv.slice(2);
const [os, cpu, libc] = triple.split('-');
const pkg = {
  name: `polylock-${triple}`, version, license: 'Apache-2.0',
  description: `The prebuilt native addon of polylock for ${triple}`,
  main: `polylock.${triple}.node`, files: [`polylock.${triple}.node`], os: [os], cpu: [cpu],
};
if (libc) pkg.libc = [libc === 'gnu' ? 'glibc' : 'musl'];
require('node:fs').writeFileSync(`${dir}/package.json`, JSON.stringify(pkg, null, 2) + '\n');
JSEOF
main="$work/npm-main"
mkdir -p "$main"
(cd bindings-node && cp index.js index.d.ts native.js build.js "$main/")
# The Rust sources build only inside the workspace: a from-source install is `npm install
# ./bindings-node` in the repository; the package carries the JS and the prebuilt dependency.
node - "$main" "$triple" "$version" <<'JSEOF'
const fs = require('node:fs');
const [dir, triple, version] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync('bindings-node/package.json', 'utf8'));
pkg.optionalDependencies = { [`polylock-${triple}`]: version };
pkg.files = ['index.js', 'index.d.ts', 'native.js', 'build.js'];
fs.writeFileSync(`${dir}/package.json`, JSON.stringify(pkg, null, 2) + '\n');
JSEOF
rm -f dist/polylock-*.tgz
(cd "$plat" && npm pack --silent --pack-destination "$root/dist" >/dev/null)
(cd "$main" && npm pack --silent --pack-destination "$root/dist" >/dev/null)
echo "built dist/polylock-$version.tgz and dist/polylock-$triple-$version.tgz"

}

build_java() {
echo "== Java: the JAR (mvn package, release native library inside)"
mvn -B -q -Dstyle.color=never -f bindings-java/pom.xml package -DskipTests
cp "bindings-java/target/polylock-$version.jar" dist/
"$py" -c "import sys, zipfile; sys.exit('Automatic-Module-Name: io.polylock' not in zipfile.ZipFile(sys.argv[1]).read('META-INF/MANIFEST.MF').decode())" "dist/polylock-$version.jar"
echo "built dist/polylock-$version.jar"

}

check_python() {
"$py" -m venv "$work/venv"
env -i HOME="$work" PATH="$work/venv/bin:$clean_path" bash -c '
  set -euo pipefail
  if command -v cargo >/dev/null; then echo "cargo is on the PATH"; exit 1; fi
  pip install --quiet --disable-pip-version-check "$1"
  python - "$2" <<PYEOF
import sys, uuid, polylock
client = polylock.connect(sys.argv[1])
with client.lock(f"package-check:{uuid.uuid4().hex}") as lock:
    assert lock.fencing_token > 0
client.close()
print("wheel: imported and locked")
PYEOF
  polylock --version
' check "$root/$wheel" "$url"

# The sdist, with cargo: it builds and locks. Built in the dev profile, in the workspace's target
# directory (where the test build left its dependencies: 20 s): cargo keys a workspace member's
# artifacts by its path relative to the workspace, so a release build of the unpacked sdist
# overwrites the release build's polylock: the docs' release build after it took 143 s in a fresh
# clone's .ci/run, and finds everything fresh after a dev-profile sdist build.
"$py" -m venv "$work/sdist-venv"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" MATURIN_PEP517_ARGS="--profile dev" \
  "$work/sdist-venv/bin/pip" install --quiet --disable-pip-version-check "$root/$sdist"
"$work/sdist-venv/bin/python" -c "
import sys, uuid, polylock
c = polylock.connect(sys.argv[1])
with c.lock(f'package-check:{uuid.uuid4().hex}') as lock:
    assert lock.fencing_token > 0
c.close()
print('sdist: built from source with cargo and locked')
" "$url"

}

check_c() {
# The tarball exactly as a user unpacks it: its polylock.pc is relocatable (prefix=${pcfiledir}/../..),
# so pointing PKG_CONFIG_PATH at the unpacked lib/pkgconfig is all it takes.
mkdir -p "$work/c"
tar xzf "dist/polylock-c-$version-linux-$arch.tar.gz" -C "$work/c"
grep -qx 'prefix=${pcfiledir}/../..' "$work/c/lib/pkgconfig/polylock.pc" ||
  { echo "the tarball's polylock.pc is not relocatable:"; cat "$work/c/lib/pkgconfig/polylock.pc"; exit 1; }
env -i PATH="$clean_path" PKG_CONFIG_PATH="$work/c/lib/pkgconfig" bash -c '
  set -euo pipefail
  if command -v cargo >/dev/null; then echo "cargo is on the PATH"; exit 1; fi
  cc -std=c11 -Wall -Werror "$1" $(pkg-config --cflags --libs polylock) -o "$2/qs"
  # No LD_LIBRARY_PATH: the .pc file'"'"'s Libs carry an rpath to the unpacked lib/.
  "$2/qs" "$3"
  echo "C: built against the tarball and ran without LD_LIBRARY_PATH"
' check "$root/examples/c/quickstart.c" "$work" "$url"
}

check_cli() {
mkdir -p "$work/cli"
tar xzf "dist/polylock-cli-$version-linux-$arch.tar.gz" -C "$work/cli"
env -i PATH="$work/cli/polylock-cli-$version-linux-$arch/bin:$clean_path" bash -c '
  set -euo pipefail
  if command -v cargo >/dev/null; then echo "cargo is on the PATH"; exit 1; fi
  polylock --version
  polylock run --url "$1" package-check-cli -- true
  echo "CLI: ran from the tarball and held a lock"
' check "$url"
}

check_node() {
mkdir -p "$work/node-app"
node_dir=$(dirname "$(command -v node)")
env -i HOME="$work" PATH="$node_dir:$clean_path" NPM_CONFIG_UPDATE_NOTIFIER=false bash -c '
  set -euo pipefail
  if command -v cargo >/dev/null; then echo "cargo is on the PATH"; exit 1; fi
  cd "$1"
  npm init -y >/dev/null
  npm install --no-audit --no-fund --loglevel=error "$2"/polylock-*.tgz >/dev/null
  node -e "
    const polylock = require(\"polylock\");
    (async () => {
      const c = await polylock.connect(process.argv[1]);
      await c.lock(\"package-check-cjs\").using(async () => {});
      await c.close();
      console.log(\"npm (CommonJS): required and locked\");
    })();
  " "$3"
  node --input-type=module -e "
    import polylock from \"polylock\";
    const c = await polylock.connect(process.argv[1]);
    await c.lock(\"package-check-esm\").using(async () => {});
    await c.close();
    console.log(\"npm (ESM): imported and locked\");
  " "$3"
' check "$work/node-app" "$root/dist" "$url"
}

check_java() {
mkdir -p "$work/java/app" "$work/java/mod/app"
cat >"$work/java/app/Check.java" <<'JEOF'
public class Check {
    public static void main(String[] args) throws Exception {
        try (io.polylock.PolylockClient c = io.polylock.Polylock.connect(args[0])) {
            io.polylock.DistributedLock lock = c.getLock("package-check-java");
            lock.lock();
            try {
                System.out.println("JAR (" + args[1] + "): locked with token " + lock.getFencingToken());
            } finally {
                lock.unlock();
            }
        }
    }
}
JEOF
cp "$work/java/app/Check.java" "$work/java/mod/app/Check.java"
sed -i '1i package app;' "$work/java/mod/app/Check.java"
printf 'module check { requires io.polylock; }\n' >"$work/java/mod/module-info.java"
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
env -i HOME="$work" PATH="$java_home/bin:$clean_path" bash -c '
  set -euo pipefail
  if command -v cargo >/dev/null; then echo "cargo is on the PATH"; exit 1; fi
  jar=$1 work=$2 url=$3
  javac -d "$work/java/out" -cp "$jar" "$work/java/app/Check.java"
  java -cp "$jar:$work/java/out" Check "$url" "class path"
  javac -d "$work/java/modout" --module-path "$jar" "$work/java/mod/module-info.java" "$work/java/mod/app/Check.java"
  java --module-path "$jar:$work/java/modout" -m check/app.Check "$url" "module path"
' check "$root/dist/polylock-$version.jar" "$work" "$url"
}

for part in python c cli node java; do
  if want "$part"; then "build_$part"; fi
done
echo "== checks without cargo on the PATH"
for part in python c cli node java; do
  if want "$part"; then "check_$part"; fi
done
ls -l dist/
