"""Fixture trees for the meta-repo tools: a tiny meta.toml, projects with known faults."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(TOOLS.parent / "ci"))

README = """# Demo
<!-- index:start -->
<!-- index:end -->
<!-- results:start -->
<!-- results:end -->
"""

PROJECT_README = "\n\n".join(
    f"## {s}\ntext"
    for s in ("Paper", "Claim", "Method", "Quick start", "Results", "Scaling up", "Deviations")
)


def good_results(slug: str) -> dict:
    return {
        "paper": slug,
        "mode": "quick",
        "created": "2026-12-02T00:00:00+00:00",
        "git_commit": "abc123",
        "environment": {"python": "3.11.7", "device": "cpu"},
        "wall_seconds": 12.5,
        "seeds": [0, 1, 2],
        "metrics": {
            "Ours": {"gap": {"mean": 0.5, "std": 0.1, "values": [0.4, 0.5, 0.6]}},
            "Base": {"gap": {"mean": 2.0, "std": 0.1, "values": [1.9, 2.0, 2.1]}},
        },
        "claims": [
            {
                "id": "beats",
                "statement": "Ours < Base",
                "paper": "0.3 vs 1.0",
                "ours": "0.5 vs 2.0",
                "holds": True,
            },
            {
                "id": "tiny",
                "statement": "gap < 0.1",
                "paper": "0.05",
                "ours": "0.5",
                "holds": False,
            },
        ],
        "performance": [
            {
                "id": "speed",
                "what": "solve",
                "ours_s": 1.0,
                "peer": "lib",
                "peer_s": 0.5,
                "ratio": 2.0,
            }
        ],
    }


def write_project(root: Path, slug: str, results: dict | None, n_tests: int = 8) -> Path:
    """A built project: stub modules, the generated skeleton files (tools/sync.py), results."""
    from sync import papers, write

    package = slug.replace("-", "_")
    repo = root / "repos" / slug
    (repo / "src" / package).mkdir(parents=True)
    for module in ("config.py", "train.py", "bench.py", "hooks.py"):
        (repo / "src" / package / module).write_text("")
    write(root, slug, papers(root)[slug])
    (repo / "pyproject.toml").write_text(
        f'[project]\nname = "{slug}"\ndependencies = ["numpy"]\n'
        f'[project.optional-dependencies]\ntest = ["pytest"]\n'
        f'[project.scripts]\n{slug} = "{package}.cli:main"\n'
        "[tool.pytest.ini_options]\ntimeout = 900\n"
    )
    (repo / "README.md").write_text(PROJECT_README)
    (repo / "tests").mkdir(exist_ok=True)
    (repo / "tests" / "test_x.py").write_text(
        "".join(f"def test_{i}():\n    pass\n" for i in range(n_tests))
    )
    (repo / "results" / "figures").mkdir(parents=True)
    (repo / "results" / "figures" / "fig.png").write_bytes(b"\x89PNG")
    if results is not None:
        (repo / "results" / "quick.json").write_text(json.dumps(results))
    return repo


@pytest.fixture
def tree(tmp_path):
    """meta.toml with three papers: 'good' conforms, 'bad' has faults, 'later' is not built."""
    entries = []
    for slug in ("good", "bad", "later"):
        entries.append(
            f'[papers.{slug}]\ntitle = "Paper {slug}"\nmethod = "M-{slug}"\npaper = "https://x/{slug}"\n'
            f'official_code = ""\nframework = "torch"\npath = "repos/{slug}"\npackage = "{slug}"\n'
            f'cli = "{slug}"\nclaim = "it works"\nverdict = "It works."\n'
            'gpu_smoke = ["bench", "--preset", "full", "--steps", "1"]\n'
        )
    (tmp_path / "meta.toml").write_text("\n".join(entries))
    (tmp_path / "README.md").write_text(README)
    write_project(tmp_path, "good", good_results("good"))
    return tmp_path
