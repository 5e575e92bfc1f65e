"""The documentation: every tutorial page runs top to bottom, and the API site builds with warnings as errors.

A page's ```python blocks run in order in one namespace (like a reader pasting them into one session).
A ```text block right after a python block is that block's printed output, and must match exactly.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted((DOCS / "tutorials").glob("*.md"))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[tuple[str, str, int]]:
    """(language, source, line number) of every fenced block of a page."""
    text = page.read_text()
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def test_pages_exist():
    assert len(PAGES) >= 4, PAGES


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_runs_and_prints_what_it_shows(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # pictures a page writes land here
    found = blocks(page)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    ran = 0
    for i, (lang, source, line) in enumerate(found):
        if lang != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(source, f"{page.name}:{line}", "exec"), namespace)
        ran += 1
        if i + 1 < len(found) and found[i + 1][0] == "text":
            shown = found[i + 1][1]
            assert out.getvalue() == shown, f"{page.name}:{line}: printed output differs from the page"
    assert ran > 0


def test_site_builds_without_warnings(tmp_path):
    """The API reference and the tutorials build with Sphinx, every warning an error (needs the `docs` extra)."""
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                             "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "html" / "api.html").exists()
