#!/usr/bin/env bash
# Build the installable artifacts into dist/ and check each where no Rust toolchain is on the PATH:
#   dist/polylock-<ver>-cp39-abi3-<platform>.whl   one abi3 wheel (Python 3.9+), with the `polylock`
#                                                   console command; maturin build --release
#   dist/polylock-c-<ver>-linux-<arch>.tar.gz       include/, lib/ (libpolylock.so, .a), lib/pkgconfig
# The checks: a fresh venv installs the wheel, locks on Redis and runs `polylock --version`; a C
# program builds against the unpacked tarball through pkg-config and locks. (The npm package and
# the JAR are not built here yet.) Needs the Redis of scripts/servers.sh for the checks.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
py=${PYTHON:-python3}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
url=${POLYLOCK_REDIS_URL:-redis://127.0.0.1:6379}
mkdir -p dist
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== Python: one abi3 wheel"
"$py" -m pip install --quiet --disable-pip-version-check "maturin>=1.9,<2"
rm -f dist/polylock-*.whl
"$py" -m maturin build --release --strip --quiet -m bindings-python/Cargo.toml -o dist
wheel=$(ls dist/polylock-"$version"-*abi3*.whl)
echo "built $wheel"

echo "== C: headers, libraries and pkg-config file"
arch=$(uname -m)
stage="$work/polylock-c-$version-linux-$arch"
make --no-print-directory -s install PREFIX=/usr/local DESTDIR="$stage" >/dev/null
strip --strip-debug "$stage/usr/local/lib/libpolylock.a" "$stage/usr/local/lib/libpolylock.so"
(cd "$stage/usr/local" && tar czf "$root/dist/polylock-c-$version-linux-$arch.tar.gz" include lib)
echo "built dist/polylock-c-$version-linux-$arch.tar.gz"

echo "== checks without cargo on the PATH"
clean_path=/usr/local/bin:/usr/bin:/bin
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

mkdir -p "$work/c"
tar xzf "dist/polylock-c-$version-linux-$arch.tar.gz" -C "$work/c"
sed -i "s|^prefix=.*|prefix=$work/c|; s|^libdir=.*|libdir=$work/c/lib|; s|^includedir=.*|includedir=$work/c/include|" \
  "$work/c/lib/pkgconfig/polylock.pc"
env -i PATH="$clean_path" PKG_CONFIG_PATH="$work/c/lib/pkgconfig" bash -c '
  set -euo pipefail
  if command -v cargo >/dev/null; then echo "cargo is on the PATH"; exit 1; fi
  cc -std=c11 -Wall -Werror "$1" $(pkg-config --cflags --libs polylock) -o "$2/qs"
  LD_LIBRARY_PATH="$(pkg-config --variable=libdir polylock)" "$2/qs" "$3"
  echo "C: built against the tarball and locked"
' check "$root/examples/c/quickstart.c" "$work" "$url"
ls -l dist/
