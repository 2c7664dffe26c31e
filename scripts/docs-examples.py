#!/usr/bin/env python3
"""Run every code block of README.md and the book (docs/src/**/*.md) against the local servers.

    python3 scripts/docs-examples.py [--only rust,python,...] [--list] [FILE...]

Each fenced block is run by its language:
  rust        a program compiled by rustc against the rlibs of the workspace's release build
              (polylock and tokio, as rustdoc compiles doctests: nothing else is compiled);
              a block without `fn main` runs inside `#[tokio::main] async fn main()`; lines
              starting with `# ` are mdBook's hidden lines: compiled, not shown
  python      python3 (the polylock wheel that scripts/build.sh installed)
  js / node   node, as an ES module in a folder whose node_modules has polylock
              (bindings-node, built by scripts/build.sh) and, for the migration guides,
              node-redlock and ioredis (installed by scripts/docs.sh into $POLYLOCK_TOOLS);
              `require` works too
  java        `java File.java` (source-file mode) against the JAR that scripts/build.sh built,
              plus the Java suite's test class path (Redisson, Curator, ShedLock) when the block
              imports them; a block without a class runs inside `main`
  c           cc against include/ and $CARGO_TARGET_DIR/release/libpolylock; a block without
              `main` runs inside `int main(void)`
  sh / bash   bash -euo pipefail in a scratch folder where dist/ is the repository's dist/ (and
              polylock/ the repository, as a clone next to an application), the
              release `polylock` command is first on the PATH; a block that runs pip runs in a
              venv of the run's own (its installs go there); a `./name.sh` the block runs and that does not exist
              is made as a stub that prints its name
`text` blocks are listings (output, URL forms) and are not counted. A block that is deliberately
not runnable says so, and is counted: an info string with `ignore` or `no_run` (```rust,ignore),
or the line before the fence `<!-- not run: why -->`. Any other language is an error until it is
marked. Ends with "docs examples: N ran, N passed, N failed, N marked not runnable"; exit 1 when a
block failed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
VERSION = re.search(r'^version = "(.*)"', (ROOT / "Cargo.toml").read_text(), re.M).group(1)

LANGS = {
    "rust": "rust",
    "python": "python",
    "py": "python",
    "js": "node",
    "javascript": "node",
    "node": "node",
    "mjs": "node",
    "java": "java",
    "c": "c",
    "sh": "shell",
    "bash": "shell",
    "shell": "shell",
}
LISTINGS = {"text", "txt", "output"}
SKIP_WORDS = {"ignore", "no_run", "norun"}
MARKER = re.compile(r"^\s*<!--\s*not run:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^`\s]*)\s*$")
TIMEOUT = int(os.environ.get("POLYLOCK_DOCS_TIMEOUT", "180"))


@dataclass
class Block:
    path: Path
    line: int
    lang: str  # one of LANGS' values, or "" for an unknown language
    info: str
    code: str
    skip: str | None = None  # why it is not run
    result: str = ""  # passed / failed / skipped
    output: str = ""
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3)
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        words = [w for w in re.split(r"[,\s]+", info) if w]
        lang_word = words[0].lower() if words else ""
        if lang_word in LISTINGS:
            continue
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(prev)
        skip = None
        if marker:
            skip = marker.group(1) or "marked"
        elif SKIP_WORDS & set(w.lower() for w in words[1:]):
            skip = f"{info}"
        out.append(Block(path, start + 1, LANGS.get(lang_word, ""), info, "\n".join(body) + "\n", skip))
    return out


def sources(args_files: list[str]) -> list[Path]:
    if args_files:
        return [Path(f).resolve() for f in args_files]
    return [ROOT / "README.md"] + sorted((ROOT / "docs" / "src").rglob("*.md"))


def run(cmd, cwd=None, env=None, timeout=TIMEOUT, input_text=None) -> tuple[int, str]:
    """Run `cmd` in a process group of its own, its output into a file (a process an example left
    in the background cannot hold the runner up); whatever of the group is left when it ends, or
    when it runs out of time, is stopped."""
    with tempfile.TemporaryFile(mode="w+") as out:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if input_text else subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            if input_text:
                p.communicate(input_text, timeout=timeout)
            code = p.wait(timeout=timeout)
            note = ""
        except subprocess.TimeoutExpired:
            code, note = 124, f"\n(timed out after {timeout} s)"
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        p.wait()
        out.seek(0)
        return code, out.read() + note


def server_env() -> dict:
    env = dict(os.environ)
    code, out = run(["bash", str(ROOT / "scripts/servers.sh"), "env"], timeout=60)
    if code == 0:
        for m in re.finditer(r"^export (\w+)=(.*)$", out, re.M):
            env[m.group(1)] = m.group(2).strip("'\"")
    return env


# ---- Rust ----------------------------------------------------------------------------------

def rust_program(code: str) -> str:
    lines = []
    for ln in code.splitlines():
        if ln.startswith("# ") or ln == "#":
            lines.append(ln[2:])
        else:
            lines.append(ln)
    src = "\n".join(lines) + "\n"
    if re.search(r"\bfn main\s*\(", src):
        return src
    return ("#[tokio::main]\nasync fn main() -> Result<(), Box<dyn std::error::Error>> {\n"
            + src + "    Ok(())\n}\n")


def workspace_rlibs(env: dict) -> tuple[dict[str, str], str]:
    """The rlibs of polylock and tokio from the workspace's release build (scripts/build.sh's
    release part: it made them, so cargo only reports them), as rustdoc's doctests use them: an
    example compiles only itself, in seconds, and never a second copy of polylock. (Another
    selection of targets, e.g. the Python extension too, selects other features: cargo would
    compile again.)"""
    code, out = run(["bash", "scripts/build.sh", "release"], cwd=ROOT,
                    env=dict(env, POLYLOCK_BUILD_JSON="1"), timeout=3600)
    rlibs: dict[str, str] = {}
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        m = json.loads(line)
        if m.get("reason") != "compiler-artifact" or "lib" not in m["target"]["kind"]:
            continue
        name = m["target"]["name"]
        if name in ("polylock", "tokio") and (name != "polylock" or "/core#" in m["package_id"]):
            rlibs.update({name: f for f in m["filenames"] if f.endswith(".rlib")})
    return rlibs, ("" if code == 0 and len(rlibs) == 2 else out[-4000:])


def run_rust(blocks: list[Block], env: dict) -> None:
    if not blocks:
        return
    work = TARGET / "docs-examples" / "rust"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t = time.monotonic()
    rlibs, err = workspace_rlibs(dict(env, CARGO_TARGET_DIR=str(TARGET)))
    for k, b in enumerate(blocks):
        if err:
            b.result, b.output = "failed", "the workspace's release build did not give polylock's rlib:\n" + err
            continue
        src = work / f"ex{k:03d}.rs"
        src.write_text(f"// {b.where}\n#![allow(unused)]\n" + rust_program(b.code))
        exe = work / f"ex{k:03d}"
        c, o = run(["rustc", "--edition", "2021", "--crate-type", "bin", str(src), "-o", str(exe),
                    "-L", f"dependency={TARGET / 'release' / 'deps'}",
                    "--extern", f"polylock={rlibs['polylock']}", "--extern", f"tokio={rlibs['tokio']}"],
                   cwd=work, env=env, timeout=600)
        if c != 0:
            b.result, b.output = "failed", o
            continue
        t1 = time.monotonic()
        c, o = run([str(exe)], cwd=tempfile.mkdtemp(prefix="docs-rs-"), env=env)
        b.seconds = time.monotonic() - t1
        b.result, b.output = ("passed" if c == 0 else "failed"), o
    print(f"(rust: {len(blocks)} programs compiled against the workspace's polylock and run in "
          f"{time.monotonic() - t:.0f}s)")


# ---- Python, Node, Java, C, shell ----------------------------------------------------------

def run_python(b: Block, env: dict, work: Path) -> tuple[int, str]:
    f = work / "example.py"
    f.write_text(b.code)
    return run([sys.executable, str(f)], cwd=work, env=env)


def node_modules(work: Path) -> None:
    nm = work / "node_modules"
    nm.mkdir(exist_ok=True)
    links = {"polylock": ROOT / "bindings-node"}
    tools = Path(os.environ.get("POLYLOCK_TOOLS") or Path.home() / ".cache/polylock/tools") / "node" / "node_modules"
    for dep in ("redlock", "ioredis"):
        if (tools / dep).exists():
            links[dep] = tools / dep
    for name, dest in links.items():
        if not (nm / name).exists():
            (nm / name).symlink_to(dest)


def run_node(b: Block, env: dict, work: Path) -> tuple[int, str]:
    node_modules(work)
    f = work / "example.mjs"
    f.write_text("import { createRequire as __cr } from 'node:module';\n"
                 "const require = __cr(import.meta.url);\n" + b.code)
    return run(["node", str(f)], cwd=work, env=env)


_JAVA_TEST_CP: str | None = None


def java_test_classpath(env: dict) -> str:
    """The Java suite's test class path (Redisson, Curator, ShedLock, the JDBC drivers)."""
    global _JAVA_TEST_CP
    if _JAVA_TEST_CP is not None:
        return _JAVA_TEST_CP
    pom = ROOT / "bindings-java" / "pom.xml"
    key = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    out = TARGET / "docs-examples" / f"java-test-cp-{key}.txt"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        code, text = run(["mvn", "-B", "-q", "-Dstyle.color=never", "-f", str(pom),
                          "dependency:build-classpath", "-Dmdep.includeScope=test",
                          f"-Dmdep.outputFile={out}"], env=env, timeout=900)
        if code != 0:
            raise RuntimeError("mvn dependency:build-classpath failed:\n" + text)
    _JAVA_TEST_CP = out.read_text().strip()
    return _JAVA_TEST_CP


def java_program(code: str) -> str:
    if re.search(r"^\s*(public\s+)?(final\s+)?(class|record|interface)\s", code, re.M):
        return code
    imports = [ln for ln in code.splitlines() if ln.startswith("import ")]
    body = [ln for ln in code.splitlines() if not ln.startswith("import ")]
    return ("\n".join(imports) + "\n\npublic class Example {\n"
            "    public static void main(String[] args) throws Exception {\n"
            + "\n".join("        " + ln for ln in body) + "\n    }\n}\n")


def run_java(b: Block, env: dict, work: Path) -> tuple[int, str]:
    jar = ROOT / "dist" / f"polylock-{VERSION}.jar"
    if not jar.exists():
        jar = ROOT / "bindings-java" / "target" / f"polylock-{VERSION}.jar"
    cp = [str(jar)]
    if re.search(r"\b(org\.redisson|org\.apache\.curator|net\.javacrumbs\.shedlock)", b.code):
        cp.append(java_test_classpath(env))
    f = work / "Example.java"
    f.write_text(java_program(b.code))
    return run(["java", "-cp", os.pathsep.join(cp), str(f)], cwd=work, env=env)


def c_program(code: str) -> str:
    if re.search(r"\bmain\s*\(", code):
        return code
    includes = [ln for ln in code.splitlines() if ln.startswith("#include")]
    body = [ln for ln in code.splitlines() if not ln.startswith("#include")]
    return ("\n".join(includes) + "\n\nint main(void) {\n" + "\n".join(body) + "\n    return 0;\n}\n")


def run_c(b: Block, env: dict, work: Path) -> tuple[int, str]:
    f = work / "example.c"
    f.write_text(c_program(b.code))
    lib = TARGET / "release"
    code, out = run(["cc", "-std=c11", "-Wall", "-Werror=implicit-function-declaration",
                     "-Werror=incompatible-pointer-types", "-Werror=int-conversion",
                     f"-I{ROOT / 'include'}", str(f), f"-L{lib}", "-lpolylock", "-o",
                     str(work / "example")], cwd=work, env=env)
    if code != 0:
        return code, out
    return run([str(work / "example")], cwd=work, env=dict(env, LD_LIBRARY_PATH=str(lib)))


_VENV: Path | None = None


def shell_venv() -> Path:
    global _VENV
    if _VENV is None:
        _VENV = Path(tempfile.mkdtemp(prefix="docs-venv-"))
        subprocess.run([sys.executable, "-m", "venv", str(_VENV)], check=True)
    return _VENV


def run_shell(b: Block, env: dict, work: Path) -> tuple[int, str]:
    for name in ("dist", "examples", "include", "core", "bindings-node", "bindings-python"):
        if (ROOT / name).exists():
            (work / name).symlink_to(ROOT / name)
    (work / "polylock").symlink_to(ROOT)  # a clone next to the folder: ../polylock from a sub-folder
    for stub in set(re.findall(r"(?<![\w/.])\./([\w.-]+\.sh)\b", b.code)):
        p = work / stub
        if not p.exists():
            p.write_text(f"#!/bin/sh\necho '{stub} ran' \"$@\"\n")
            p.chmod(0o755)
    shell_env = dict(env, PATH=os.pathsep.join([str(TARGET / "release"), env.get("PATH", "")]))
    if re.search(r"\bpip\b", b.code):  # a venv of the run's own (made once) takes its installs
        venv = shell_venv()
        shell_env.update(PATH=os.pathsep.join([str(TARGET / "release"), str(venv / "bin"), env.get("PATH", "")]),
                         VIRTUAL_ENV=str(venv))
    f = work / "example.sh"
    f.write_text("set -euo pipefail\n" + b.code)
    # A block that installs packages gets 10 minutes; any other the usual limit (a `polylock lock`
    # that failed leaves its `until` loop waiting for output that never comes).
    return run(["bash", str(f)], cwd=work, env=shell_env,
               timeout=max(TIMEOUT, 600) if re.search(r"\b(pip|npm|mvn|cargo)\b", b.code) else TIMEOUT)


RUNNERS = {"python": run_python, "node": run_node, "java": run_java, "c": run_c, "shell": run_shell}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--only", default="", help="comma-separated languages (rust,python,node,java,c,shell)")
    ap.add_argument("--list", action="store_true", help="list the blocks and what would run them")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the output of passing blocks too")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    blocks = [b for p in sources(a.files) for b in blocks_of(p)]
    if only:
        blocks = [b for b in blocks if b.lang in only or (not b.lang and "unknown" in only)]
    if a.list:
        for b in blocks:
            print(f"{b.where:40} {b.lang or '?':7} {('not run: ' + b.skip) if b.skip else ''}")
        return 0
    started = time.monotonic()
    env = server_env()
    for b in blocks:
        if b.skip:
            b.result = "skipped"
        elif not b.lang:
            b.result = "failed"
            b.output = (f"unknown language '{b.info}': run it, make it a `text` listing, or mark it "
                        "(<!-- not run: why --> before the fence)")
    todo = [b for b in blocks if not b.result]
    run_rust([b for b in todo if b.lang == "rust"], env)
    for b in todo:
        if b.lang == "rust":
            continue
        work = Path(tempfile.mkdtemp(prefix=f"docs-{b.lang}-"))
        t = time.monotonic()
        try:
            code, out = RUNNERS[b.lang](b, env, work)
        except Exception as e:  # a runner's own set-up failed: the block fails with it
            code, out = 1, f"{type(e).__name__}: {e}"
        b.seconds = time.monotonic() - t
        b.result, b.output = ("passed" if code == 0 else "failed"), out
        shutil.rmtree(work, ignore_errors=True)
    for b in blocks:
        tag = {"passed": "ok  ", "failed": "FAIL", "skipped": "skip"}[b.result]
        extra = f"not run: {b.skip}" if b.skip else f"{b.seconds:.1f}s"
        print(f"{tag} {b.where:44} {b.lang or b.info:7} {extra}")
        if b.result == "failed" or (a.verbose and b.output.strip()):
            print("     | " + "\n     | ".join(b.output.rstrip().splitlines()[-60:]))
    ran = [b for b in blocks if b.result in ("passed", "failed")]
    failed = [b for b in ran if b.result == "failed"]
    skipped = [b for b in blocks if b.result == "skipped"]
    print(f"(took {time.monotonic() - started:.0f}s)")
    print(f"docs examples: {len(ran)} ran, {len(ran) - len(failed)} passed, {len(failed)} failed, "
          f"{len(skipped)} marked not runnable")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
