"""Every README's commands paste-run on a fresh machine: no paths of one machine in them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READMES = sorted([ROOT / "README.md", *ROOT.glob("repos/*/README.md")])
# an absolute path of one machine: /tmp/..., /opt/..., /home/..., /work/..., C:\...
MACHINE_PATH = re.compile(
    r"(?<![\w.:/~-])(/(?:tmp|opt|home|root|work|mnt|srv|Users|data|scratch)/[\w.-]+|[A-Z]:\\\\\w)"
)


def code_blocks(text: str) -> list[str]:
    """Fenced code blocks and inline code spans: what a reader copies."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, re.DOTALL)
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return blocks + re.findall(r"`([^`\n]+)`", prose)


def machine_paths(text: str) -> list[str]:
    return [m.group(0) for block in code_blocks(text) for m in MACHINE_PATH.finditer(block)]


def test_the_detector_finds_what_it_should():
    bad = "```bash\nUV_FIND_LINKS=/opt/wheels uv pip install -c /tmp/c.txt .\n```\nsee `/home/me/x`"
    assert machine_paths(bad) == ["/opt/wheels", "/tmp/c.txt", "/home/me"]
    good = "```bash\npython -m venv .venv && .venv/bin/pip install -e '.[test]'\ncd repos/x\n```"
    assert machine_paths(good) == []
    assert machine_paths("`https://example.com/opt/x` and `--out runs/tmp/x`") == []


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_machine_paths_in_commands(readme):
    assert machine_paths(readme.read_text()) == []


@pytest.mark.parametrize("readme", READMES, ids=lambda p: str(p.relative_to(ROOT)))
def test_uv_venv_is_not_followed_by_venv_pip(readme):
    # `uv venv` makes an environment without pip, so `.venv/bin/pip` fails right after it
    for block in code_blocks(readme.read_text()):
        if re.search(r"\buv venv\b", block):
            assert ".venv/bin/pip " not in block, block


def quick_start_commands(text: str) -> list[str]:
    """Shell lines of the fenced blocks in a README's Quick start section."""
    section = text.split("## Quick start", 1)[-1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:bash|sh|console)?\n(.*?)```", section, re.DOTALL)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip()]


def needs_uv(commands: list[str]) -> bool:
    """True when the first environment step is uv's (uv is an option, never a requirement)."""
    for line in commands:
        if line.startswith("#"):
            continue
        if re.match(r"(python3? -m venv|pip install|\./run|cd )", line):
            return False
        if re.match(r"(uv |uvx )", line):
            return True
    return False


def test_the_uv_detector():
    assert needs_uv(["uv venv .venv", "uv pip install -e ."])
    assert not needs_uv(["# make it", "python3 -m venv .venv && . .venv/bin/activate", "uv pip x"])


@pytest.mark.parametrize(
    "readme", [r for r in READMES if r.parent != ROOT], ids=lambda p: p.parent.name
)
def test_quick_start_works_with_plain_pip(readme):
    """A newcomer's first commands need Python and pip only (issue: eight began with uv venv)."""
    commands = quick_start_commands(readme.read_text())
    assert commands, "the Quick start has no command block"
    assert not needs_uv(commands), commands[:3]
