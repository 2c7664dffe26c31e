#!/usr/bin/env bash
# Prints a PATH that holds only what a bare machine has: the toolchains a new machine comes with
# (Rust by rustup, Python, Node and npm, a JDK with Maven, gcc and make, git), the commands of
# Debian's required and important packages, and the commands that `scripts/setup.sh PARTS`
# installs. A stage run under it fails on a command that no install step provides, even on a
# machine where an earlier run or a hand left that command installed (.ci/run's bare-machine
# check: the lint stage once used protoc before anything installed it).
#
#   PATH=$(bash scripts/lib/bare-path.sh build) cargo clippy ...
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir="${CARGO_TARGET_DIR:-$root/target}/bare-path/bin"
rm -rf "$dir"
mkdir -p "$dir"

link() { # link COMMAND [PATH]: COMMAND under $dir, pointing at PATH (default: where PATH finds it)
  local to=${2:-}
  [ -n "$to" ] || to=$(command -v "$1" 2>/dev/null) || return 0
  [ -e "$dir/$1" ] || ln -s "$to" "$dir/$1"
}

# The base system: every command of a required or important Debian package.
while read -r file; do
  case "$file" in /bin/* | /usr/bin/* | /sbin/* | /usr/sbin/*) [ -x "$file" ] && [ ! -d "$file" ] && link "$(basename "$file")" "$file" ;; esac
done < <(dpkg-query -W -f='${Priority} ${Package}\n' | awk '$1 == "required" || $1 == "important" {print $2}' |
  xargs dpkg-query -L 2>/dev/null)

# The toolchains of a new machine (by name, wherever they live: rustup's proxies, pyenv, /usr/bin).
for c in cargo rustc rustup rustfmt rustdoc cargo-fmt cargo-clippy clippy-driver \
  node npm npx java javac jar mvn git gcc cc g++ c++ cpp ld as ar ranlib nm objcopy make cmake perl; do
  link "$c"
done
# Python by its real executable (a pyenv shim needs pyenv's own folders on the PATH).
py=$(python3 -c 'import sys; print(sys.executable)')
link python3 "$py"
link python "$py"

# What the install step provides.
for c in $(bash "$root/scripts/setup.sh" --provides "$@"); do link "$c"; done
echo "$dir"
