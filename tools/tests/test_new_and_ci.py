"""tools/new.py renders the template; ci/changed_papers.py maps paths to papers."""

from __future__ import annotations

import tomllib

import pytest
from changed_papers import built_papers, touched
from conftest import TOOLS
from new import create


def test_new_renders_every_placeholder(tree):
    target = create(tree, "later")
    files = [p for p in target.rglob("*") if p.is_file()]
    assert (target / "src" / "later" / "cli.py").exists()
    for path in files:
        text = path.read_text(errors="replace")
        for marker in ("__slug__", "__package__", "__cli__", "__method__", "__title__"):
            assert marker not in text and marker not in str(path), (path, marker)
    project = tomllib.loads((target / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"later": "later.cli:main"}


def test_new_refuses_unknown_or_existing(tree):
    with pytest.raises(SystemExit, match="no \\[papers.nope\\]"):
        create(tree, "nope")
    with pytest.raises(SystemExit, match="not empty"):
        create(tree, "good")


def test_changed_papers_mapping(tree):
    create(tree, "later")
    papers = built_papers(tree)
    assert sorted(papers) == ["good", "later"]
    assert touched(["repos/good/src/good/x.py"], papers) == ["good"]
    assert touched(["README.md", "repos/goodness/x"], papers) == []
    assert touched(["tools/report.py"], papers) == ["good", "later"]
    assert touched(["meta.toml"], papers) == ["good", "later"]


def test_workflow_has_a_gpu_job_running_smoke_and_paper_presets():
    text = (TOOLS.parent / "ci" / "github-workflow.yml").read_text()
    gpu = text.split("\n  gpu:\n", 1)[1]
    assert "self-hosted" in gpu and "gpu]" in gpu
    assert "./run -s gpu-smoke" in gpu and "./run -s reproduce-paper" in gpu
    assert 'REPRO_GPU: "1"' in gpu
