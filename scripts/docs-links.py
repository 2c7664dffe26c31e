#!/usr/bin/env python3
"""Check the internal links of the built book and of README.md / CONTRIBUTING.md.

    python3 scripts/docs-links.py BOOK_HTML_DIR

Built HTML: every relative href/src resolves to a file of the book, and every #fragment names an
element id (or an <a name>) of the page it points to. mdBook has no link check of its own.
Markdown at the repository's root: every relative link names a file that exists, and a #fragment
on a Markdown file names one of its headings (GitHub's and mdBook's slugs). External links
(http:, https:, mailto:) are not fetched. Exit 1 and one line per broken link when any is broken.
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


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    broken = check_html(Path(sys.argv[1]))
    broken += check_markdown([ROOT / "README.md", ROOT / "CONTRIBUTING.md"])
    for b in broken:
        print("broken link:", b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
