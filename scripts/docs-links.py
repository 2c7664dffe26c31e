#!/usr/bin/env python3
"""Check the internal links of the built book and of README.md / CONTRIBUTING.md.

    python3 scripts/docs-links.py BOOK_HTML_DIR

Built HTML: every relative href/src resolves to a file of the book, and every #fragment names an
element id (or an <a name>) of the page it points to. mdBook has no link check of its own.
Markdown at the repository's root: every relative link names a file that exists, and a #fragment
on a Markdown file names one of its headings (GitHub's and mdBook's slugs). External links
(http:, https:, mailto:) are not fetched. Exit 1 and one line per broken link when any is broken.

    python3 scripts/docs-links.py --claims

The claims the code keeps true, checked against the code itself (also run by the first form):
every `POLYLOCK_*` environment variable that core/src, bindings-*/ or scripts/ read (and every
`polylock.*` Java system property), and every variable the command sets for the command it runs,
is named in docs/src/configuration.md; every exit code the command defines (core/src/cli/) is a
row of the exit-code table of docs/src/guides/cli.md; no page of the book is longer than 300 lines
(the generated cli.md and contract-table.md excepted), nor README.md.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
EXTERNAL = ("http:", "https:", "mailto:", "javascript:", "data:", "tel:")


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (attribute, value)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src"):
            v = a.get(key)
            if v is not None:
                self.links.append((key, v))


def parse(path: Path) -> Page:
    p = Page()
    p.feed(path.read_text(errors="replace"))
    return p


def check_html(book: Path) -> list[str]:
    pages = {p.resolve(): parse(p) for p in book.rglob("*.html")}
    broken = []
    checked = 0
    for path, page in pages.items():
        for attr, value in page.links:
            if not value or value.startswith(EXTERNAL) or value.startswith("//"):
                continue
            parts = urlsplit(value)
            if parts.scheme:
                continue
            checked += 1
            if not parts.path:
                target = path
            elif parts.path.startswith("/"):  # root-relative: the book's root (its 404 page)
                target = (book / unquote(parts.path).lstrip("/")).resolve()
            else:
                target = (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(book.resolve())}: {attr}={value}: no such file")
                continue
            frag = unquote(parts.fragment)
            if frag and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if frag not in ids:
                    broken.append(f"{path.relative_to(book.resolve())}: {attr}={value}: no id '{frag}'")
    print(f"links: {len(pages)} pages, {checked} internal links checked, {len(broken)} broken")
    return broken


def slug(heading: str) -> str:
    """GitHub's (and mdBook's) heading id: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(md: Path) -> set[str]:
    out, seen = set(), {}
    fence = False
    for line in md.read_text().splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if fence:
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def check_markdown(files: list[Path]) -> list[str]:
    broken = []
    checked = 0
    link = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
    for md in files:
        text = md.read_text()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for m in link.finditer(text):
            value = m.group(1) or m.group(2)
            if value.startswith(EXTERNAL):
                continue
            checked += 1
            parts = urlsplit(value)
            target = md if not parts.path else (md.parent / unquote(parts.path)).resolve()
            if not target.exists():
                broken.append(f"{md.relative_to(ROOT)}: ({value}): no such file")
                continue
            if parts.fragment and target.suffix == ".md" and parts.fragment not in headings(target):
                broken.append(f"{md.relative_to(ROOT)}: ({value}): no heading '{parts.fragment}'")
    print(f"links: {len(files)} Markdown files at the root, {checked} relative links checked, {len(broken)} broken")
    return broken


# ---- what the code says, and the pages that must say it too ---------------------------------

# Where a program reads its environment: (file suffixes, pattern whose group 1 is the name).
ENV_READS = [
    ((".rs",), r'env::var(?:_os)?\(\s*"(POLYLOCK_\w+)"'),
    ((".rs",), r'\benv\s*=\s*"(POLYLOCK_\w+)"'),  # clap: #[arg(env = "...")]
    ((".c", ".h"), r'getenv\(\s*"(POLYLOCK_\w+)"'),
    ((".py",), r'os\.environ(?:\.get)?\s*[\[(]\s*["\'](POLYLOCK_\w+)'),
    ((".py",), r'os\.getenv\(\s*["\'](POLYLOCK_\w+)'),
    ((".py",), r'["\'](POLYLOCK_\w+)["\']\s+(?:not\s+)?in\s+os\.environ'),
    ((".js", ".mjs", ".cjs"), r'process\.env(?:\.|\[\s*["\'])(POLYLOCK_\w+)'),
    ((".java",), r'System\.getenv\(\s*"(POLYLOCK_\w+)"'),
    ((".java",), r'(?:System\.getProperty|Boolean\.getBoolean|Integer\.getInteger|Long\.getLong)\(\s*"(polylock\.[\w.]+)"'),
    ((".sh",), r'\$\{?(POLYLOCK_[A-Z0-9_]+)'),
]
# Read, but never set by a user: one of polylock's own programs hands them to a child it starts.
INTERNAL_ENV = {
    "POLYLOCK_BASE": "scripts/operate-test.sh hands it to scripts/lib/operate-page.js",
    "POLYLOCK_TOKEN": "scripts/operate-test.sh hands it to scripts/lib/operate-page.js",
    "POLYLOCK_OUT": "scripts/operate-test.sh hands it to scripts/lib/operate-page.js",
    "POLYLOCK_BENCH_CHILD": "bindings-node/bench/bench.js marks the child process it starts",
}
SKIP_DIRS = {"node_modules", "target", ".git", "dist", "__pycache__"}


def code_files() -> list[Path]:
    roots = [ROOT / "core" / "src", ROOT / "scripts"] + sorted(ROOT.glob("bindings-*"))
    out = []
    for r in roots:
        for f in sorted(r.rglob("*")):
            if f.is_file() and not SKIP_DIRS & set(f.relative_to(ROOT).parts):
                out.append(f)
    return out


def env_reads() -> dict[str, str]:
    """Every variable (and Java system property) a program of the repository reads: name -> the
    first place it is read."""
    found: dict[str, str] = {}
    for f in code_files():
        rules = [pat for suffixes, pat in ENV_READS if f.name.endswith(suffixes)]
        if not rules:
            continue
        text = f.read_text(errors="replace")
        for pat in rules:
            for m in re.finditer(pat, text):
                line = text.count("\n", 0, m.start()) + 1
                found.setdefault(m.group(1), f"{f.relative_to(ROOT)}:{line}")
    return found


def cli_env() -> dict[str, str]:
    """The variables the command reads or sets for the command it runs: every "POLYLOCK_..."
    string of core/src/cli/."""
    found: dict[str, str] = {}
    for f in sorted((ROOT / "core" / "src" / "cli").glob("*.rs")):
        text = f.read_text()
        for m in re.finditer(r'"(POLYLOCK_[A-Z0-9_]+)"', text):
            found.setdefault(m.group(1), f"{f.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}")
    return found


def named_in(md: Path) -> set[str]:
    """The variable and property names a page names in code spans."""
    names: set[str] = set()
    for span in re.findall(r"`([^`\n]+)`", md.read_text()):
        names.update(re.findall(r"POLYLOCK_[A-Z0-9_]+|polylock(?:\.[a-z_]+)+", span))
    return names


def check_configuration() -> list[str]:
    page = ROOT / "docs" / "src" / "configuration.md"
    documented = named_in(page)
    wanted = {**env_reads(), **cli_env()}
    missing = [f"{page.relative_to(ROOT)}: `{name}` is not named (read at {where})"
               for name, where in sorted(wanted.items())
               if name not in documented and name not in INTERNAL_ENV]
    print(f"claims: {len(wanted)} variables and properties the code reads or sets, "
          f"{len(missing)} missing from configuration.md")
    return missing


def cli_exit_codes() -> dict[str, str]:
    """Every exit code of core/src/cli/: its EX_* constants, the literals it returns (`Ok(0)`,
    126 and 127 for a command that cannot run) and 128+N for a signal."""
    found: dict[str, str] = {}
    for f in sorted((ROOT / "core" / "src" / "cli").glob("*.rs")):
        for i, raw in enumerate(f.read_text().splitlines(), 1):
            line = re.sub(r"//.*", "", raw)
            where = f"{f.relative_to(ROOT)}:{i}"
            codes = re.findall(r"\bconst\s+EX_\w+\s*:\s*u8\s*=\s*(\d+)", line)
            codes += re.findall(r"\bOk\((\d+)\)", line)
            codes += re.findall(r"^\s*(\d+),?\s*$", line)
            if re.search(r"\bOk\(\s*128\s*\+|\b128u8\.wrapping_add", line):
                codes.append("128+N")
            for c in codes:
                found.setdefault(c, where)
    return found


def table_after(md: Path, heading: str) -> list[list[str]]:
    """The rows (cells) of the first table after the heading `heading`."""
    rows: list[list[str]] = []
    seen = False
    for line in md.read_text().splitlines():
        if re.match(r"^#{1,6}\s+" + re.escape(heading) + r"\s*$", line):
            seen = True
            continue
        if not seen:
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows or line.startswith("#"):
            break
    return rows[1:]  # without the header


def check_exit_codes() -> list[str]:
    page = ROOT / "docs" / "src" / "guides" / "cli.md"
    rows = table_after(page, "Exit codes")
    listed = {tok for row in rows for tok in re.findall(r"\d+(?:\+N)?", row[0])}
    codes = cli_exit_codes()
    missing = [f"{page.relative_to(ROOT)}: exit {c} is not a row of the table under 'Exit codes' "
               f"(defined at {where})" for c, where in sorted(codes.items()) if c not in listed]
    print(f"claims: {len(codes)} exit codes the command defines, {len(missing)} missing from the CLI guide's table")
    return missing


LONG_PAGES_ALLOWED = {"cli.md", "contract-table.md"}  # generated from the code


def check_lengths() -> list[str]:
    pages = [p for p in sorted((ROOT / "docs" / "src").rglob("*.md")) if p.name not in LONG_PAGES_ALLOWED]
    out = []
    for p in pages + [ROOT / "README.md"]:
        n = len(p.read_text().splitlines())
        if n > 300:
            out.append(f"{p.relative_to(ROOT)}: {n} lines (at most 300: split it, or move reference to its own page)")
    print(f"claims: {len(pages) + 1} pages, {len(out)} over 300 lines")
    return out


def check_claims() -> list[str]:
    return check_configuration() + check_exit_codes() + check_lengths()


def main() -> int:
    if sys.argv[1:] == ["--claims"]:
        problems = check_claims()
        for p in problems:
            print("untrue:", p)
        return 1 if problems else 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    broken = check_html(Path(sys.argv[1]))
    broken += check_markdown([ROOT / "README.md", ROOT / "CONTRIBUTING.md"])
    for b in broken:
        print("broken link:", b)
    problems = check_claims()
    for p in problems:
        print("untrue:", p)
    return 1 if broken or problems else 0


if __name__ == "__main__":
    sys.exit(main())
