#!/usr/bin/env bash
# The book (docs/, mdBook) and every code block of README.md and the book, checked:
#   reference  docs/src/cli.md is what `polylock help-markdown` prints from the clap definition
#   book       mdbook build (a pinned mdBook, installed into a cache folder; a warm run skips it)
#   links      every internal link and anchor of the built HTML, and of README.md/CONTRIBUTING.md
#   browser    the built book in a headless Chromium (Debian's, installed if missing, driven by
#              playwright-core): the home page renders, search finds results, every chapter and
#              internal link loads; screenshots in $CARGO_TARGET_DIR/docs-check/
#   examples   every code block run against the local servers (scripts/docs-examples.py)
#
#   scripts/docs.sh [reference] [book] [links] [browser] [examples]   (all by default)
#   scripts/docs.sh --fix-reference      rewrite docs/src/cli.md from the command
# Needs the release build of scripts/build.sh (the wheel installed, the Node addon, the JAR) and,
# for the examples, the servers of scripts/servers.sh and dist/ of scripts/package.sh (the
# install lines of docs/src/install.md). Tools go to $POLYLOCK_TOOLS (default ~/.cache/polylock/tools).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
tools="${POLYLOCK_TOOLS:-$HOME/.cache/polylock/tools}"
out="$target/docs-check"
mdbook_version=0.5.4
playwright_version=1.65.1
export POLYLOCK_TOOLS="$tools"
mkdir -p "$tools" "$out"

fix=0
steps=()
for a in "$@"; do
  case "$a" in
    --fix-reference) fix=1 ;;
    reference | book | links | browser | examples) steps+=("$a") ;;
    *) echo "unknown argument '$a'" >&2; exit 64 ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || steps=(reference book links browser examples)
want() { [[ " ${steps[*]} " == *" $1 "* ]]; }

times=()
status=0
t0=$SECONDS
took() { times+=("$(printf 'docs: %-34s %4ds  %s' "$1" $((SECONDS - t0)) "$2")"); t0=$SECONDS; }

# -- tools (each skipped when the cache already has it) --
mdbook="$tools/bin/mdbook"
if want book && ! "$mdbook" --version 2>/dev/null | grep -q "v$mdbook_version\$"; then
  echo "== installing mdBook $mdbook_version into $tools"
  CARGO_TARGET_DIR="$tools/mdbook-target" cargo install mdbook --version "$mdbook_version" --locked \
    --no-default-features --features search --root "$tools" --quiet || { echo "mdBook did not install"; exit 1; }
  rm -rf "$tools/mdbook-target"
fi
node_tools="$tools/node"
node_stamp="$node_tools/.installed-playwright-core-$playwright_version-ioredis-5-redlock-5.0.0-beta.2"
if { want browser || want examples; } && [ ! -f "$node_stamp" ]; then
  echo "== installing playwright-core $playwright_version, ioredis and node-redlock into $node_tools"
  mkdir -p "$node_tools"
  (cd "$node_tools" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "playwright-core@$playwright_version" "ioredis@5" \
      "redlock@5.0.0-beta.2" >/dev/null) && touch "$node_stamp" || { echo "npm install failed"; exit 1; }
fi
if want browser; then bash scripts/setup.sh browser || { echo "chromium did not install"; exit 1; }; fi
if want reference || want examples; then bash scripts/setup.sh build || exit 1; fi
# python-redis-lock: the redis-py migration guide; psycopg: the fencing chapter's SQL guard.
if want examples && ! python3 -c 'import redis_lock, psycopg' 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check "python-redis-lock==4.0.1" redis "psycopg[binary]"
fi
took "tools" "(mdBook $mdbook_version, playwright-core $playwright_version, chromium, python-redis-lock, psycopg)"

# -- the command's reference --
if want reference || want examples; then
  # The CLI and the C library for the examples: scripts/build.sh's release part, nothing to
  # compile after scripts/build.sh and scripts/package.sh.
  bash scripts/build.sh release >/dev/null || { echo "cargo build failed"; exit 1; }
fi
if want reference; then
  if [ "$fix" = 1 ]; then
    "$target/release/polylock" help-markdown >docs/src/cli.md
    echo "rewrote docs/src/cli.md"
  elif "$target/release/polylock" help-markdown | diff -u docs/src/cli.md - >"$out/cli-reference.diff"; then
    took "reference" "docs/src/cli.md is what polylock help-markdown prints"
  else
    cat "$out/cli-reference.diff"
    echo "docs/src/cli.md differs from the command's help: run scripts/docs.sh --fix-reference"
    status=1
    took "reference" "DRIFT"
  fi
fi

# -- the book --
book="$target/book"
if want book; then
  rm -rf "$book"
  if "$mdbook" build docs -d "$book" 2>&1 | tee "$out/mdbook.log" | grep -E 'ERROR|WARN' ; then
    echo "mdbook build reported errors or warnings (above)"
    status=1
  fi
  [ -f "$book/index.html" ] || { echo "mdbook build produced no index.html"; status=1; }
  took "book" "$("$mdbook" --version) -> $book"
fi
if want links; then
  python3 scripts/docs-links.py "$book" || status=1
  took "links" ""
fi
if want browser; then
  PLAYWRIGHT_CORE="$node_tools/node_modules/playwright-core" node scripts/lib/docs-browser.js "$book" "$out" || status=1
  took "browser" "(screenshots in $out)"
fi

# -- every code block --
if want examples; then
  bash scripts/servers.sh start >/dev/null || { echo "the servers did not start"; exit 1; }
  python3 scripts/docs-examples.py || status=1
  took "examples" ""
fi

echo
printf '%s\n' "${times[@]}"
exit $status
