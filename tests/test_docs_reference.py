"""The documentation: generated reference pages up to date, a short README, no broken relative links."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 200
MAX_LINE_CHARS = 160


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "tools" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen():
    return _load_generator()


@pytest.mark.parametrize("page", ["cli", "topics"])
def test_reference_page_matches_the_code(gen, page: str) -> None:
    path, render = {"cli": (gen.CLI_MD, gen.render_cli), "topics": (gen.TOPICS_MD, gen.render_topics)}[page]
    expected = render()
    assert path.is_file(), f"{path.relative_to(REPO)} is missing: run python tools/gen_reference.py"
    assert path.read_text(encoding="utf-8") == expected, (
        f"{path.relative_to(REPO)} is stale: run python tools/gen_reference.py"
    )


def test_reference_is_deterministic(gen, monkeypatch: pytest.MonkeyPatch) -> None:
    """The terminal width and the working directory do not change the generated text."""
    first = gen.render_cli()
    monkeypatch.setenv("COLUMNS", "37")
    monkeypatch.chdir(REPO / "docs")
    assert gen.render_cli() == first
    text = first + gen.render_topics()
    assert str(REPO) not in text
    assert str(Path.home()) not in text


def test_check_names_a_stale_file(
    gen, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stale, fresh = tmp_path / "topics.md", tmp_path / "cli.md"
    stale.write_text("old\n", encoding="utf-8")
    fresh.write_text("same\n", encoding="utf-8")
    monkeypatch.setattr(gen, "outputs", lambda: {stale: "new\n", fresh: "same\n"})
    assert gen.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "stale" in out and str(stale) in out and str(fresh) not in out
    assert stale.read_text(encoding="utf-8") == "old\n"  # --check writes nothing
    assert gen.main([]) == 0
    assert stale.read_text(encoding="utf-8") == "new\n"
    assert gen.main(["--check"]) == 0
    missing = tmp_path / "missing.md"
    assert gen.stale_files({missing: "x\n"}) == [missing]


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"
    long = [i + 1 for i, line in enumerate(lines) if len(line) > MAX_LINE_CHARS]
    assert not long, f"README.md lines longer than {MAX_LINE_CHARS} characters: {long}"


_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)


def _relative_links(path: Path) -> list[str]:
    text = _INLINE_CODE.sub("", _FENCE.sub("", path.read_text(encoding="utf-8")))
    targets = _LINK.findall(text) + _REF_DEF.findall(text)
    return [t for t in targets if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t) and not t.startswith("#")]


def _markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def test_the_link_check_finds_links(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "[a](docs/x.md#part) ![b](img.png) [web](https://example.com) [here](#top)\n"
        "`[not](code.md)`\n```\n[not](fenced.md)\n```\n[ref]: other.md\n",
        encoding="utf-8",
    )
    assert _relative_links(page) == ["docs/x.md#part", "img.png", "other.md"]


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in _relative_links(page):
        file_part = target.split("#", 1)[0]
        if file_part and not (page.parent / file_part).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: links to missing files: {broken}"
