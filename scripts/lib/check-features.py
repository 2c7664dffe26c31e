#!/usr/bin/env python3
"""Check that every binding sees its dependencies with the features `cargo build --workspace` gives
them, so that maturin, napi's build, Maven and `cargo build -p polylock-c` reuse the workspace's
compiled crates instead of compiling tokio, redis and polylock again (see workspace-hack/Cargo.toml).

Reads `cargo tree` only (no build). Exit 1, naming each package whose features drift, when a
binding's view differs from the workspace's; add that package to workspace-hack/Cargo.toml.
"""
import re
import subprocess
import sys

MEMBERS = ["polylock-c", "polylock-python", "polylock-node", "polylock-java"]
LINE = re.compile(r"(\S+) (v\S+)(?: \((?!proc-macro)[^)]*\))?(?: \(proc-macro\))? \[(.*)\]")


def features(selection):
    out = subprocess.run(
        ["cargo", "tree", *selection, "-e", "normal,build", "-f", "{p} [{f}]", "--prefix", "none"],
        check=True, capture_output=True, text=True).stdout
    seen = {}
    for line in out.splitlines():
        m = LINE.match(line.replace(" (*)", "").strip())
        if m:
            seen.setdefault((m.group(1), m.group(2)), set()).add(m.group(3))
    return seen


def main():
    workspace = features(["--workspace"])
    drift = []
    for member in MEMBERS:
        for pkg, variants in features(["-p", member]).items():
            extra = variants - workspace.get(pkg, set())
            if extra:
                drift.append(f"{member}: {pkg[0]} {pkg[1]} [{', '.join(sorted(extra))}] "
                             f"(workspace: {sorted(workspace.get(pkg, set()))})")
    for d in drift:
        print("features drift:", d)
    print(f"features: {len(MEMBERS)} bindings checked against the workspace, {len(drift)} drifting")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
