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
