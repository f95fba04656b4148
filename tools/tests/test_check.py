"""check.py on fixture trees with known faults."""

from __future__ import annotations

import json

from check import main
from conftest import good_results, write_project


def test_conforming_paper_passes_and_unbuilt_is_listed(tree, capsys):
    assert main(["--root", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "later: not built yet" in out and "bad: not built yet" in out
    assert "1/1 built paper projects conform" in out


def test_strict_fails_on_unbuilt(tree):
    assert main(["--root", str(tree), "--strict"]) == 1


def test_each_known_fault_is_reported(tree, capsys):
    results = good_results("bad")
    results["claims"][0]["holds"] = "maybe"
    repo = write_project(tree, "bad", results, n_tests=3)
    (repo / "README.md").write_text("## Paper\n## Method\n## Claim\n")
    (repo / "src" / "bad" / "bench.py").unlink()
    assert main(["--root", str(tree)]) == 1
    out = capsys.readouterr().out
    for expected in (
        "bad: 3 test functions",
        "bad: README.md lacks a '## Quick start' section",
        "bad: src/bad/bench.py is missing",
        "'holds' must be true or false",
    ):
        assert expected in out, expected
    assert "good:" not in out.replace("good: not", "")


def test_missing_results_and_sections_out_of_order(tree, capsys):
    repo = write_project(tree, "bad", None)
    sections = ["Claim", "Paper", "Method", "Quick start", "Results", "Scaling up", "Deviations"]
    (repo / "README.md").write_text("\n".join(f"## {s}" for s in sections))
    assert main(["--root", str(tree), "--paper", "bad"]) == 1
    out = capsys.readouterr().out
    assert "bad: no results/quick.json" in out and "out of order" in out


def test_meta_toml_faults(tree, capsys):
    meta = (tree / "meta.toml").read_text().replace('claim = "it works"\n', "", 1)
    (tree / "meta.toml").write_text(meta)
    (tree / "repos" / "stray").mkdir()
    assert main(["--root", str(tree)]) == 1
    out = capsys.readouterr().out
    assert "good: meta.toml lacks 'claim'" in out
    assert "repos/stray: folder not registered in meta.toml" in out


def test_wrong_console_script(tree, capsys):
    repo = tree / "repos" / "good"
    text = (repo / "pyproject.toml").read_text().replace("good.cli:main", "good.main:run")
    (repo / "pyproject.toml").write_text(text)
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "console script 'good'" in capsys.readouterr().out
    json.loads((repo / "results" / "quick.json").read_text())


def test_pytest_timeout_must_allow_a_loaded_machine(tree, capsys):
    repo = tree / "repos" / "good"
    text = (repo / "pyproject.toml").read_text().replace("timeout = 900", "timeout = 300")
    (repo / "pyproject.toml").write_text(text)
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "timeout is 300" in capsys.readouterr().out


def test_no_deps_must_be_exact_pins(tree, capsys):
    meta = (tree / "meta.toml").read_text()
    (tree / "meta.toml").write_text(
        meta.replace(
            'claim = "it works"\n', 'claim = "it works"\nno_deps = ["datawheel==1.0"]\n', 1
        )
    )
    assert main(["--root", str(tree), "--paper", "good"]) == 0
    (tree / "meta.toml").write_text(
        meta.replace('claim = "it works"\n', 'claim = "it works"\nno_deps = ["datawheel>=1"]\n', 1)
    )
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "'no_deps' must be a list of exact pins" in capsys.readouterr().out


def test_gpu_smoke_must_be_cli_arguments(tree, capsys):
    from sync import main as sync

    meta = (tree / "meta.toml").read_text()
    old = 'gpu_smoke = ["bench", "--preset", "full", "--steps", "1"]\n'
    smoke = 'gpu_smoke = ["bench", "--preset", "full", "--seeds", "0"]\n'
    (tree / "meta.toml").write_text(meta.replace(old, smoke, 1))
    assert main(["--root", str(tree), "--paper", "good"]) == 1  # the rendered test is stale
    assert "tests/test_skeleton.py: differs" in capsys.readouterr().out
    assert sync(["--root", str(tree), "--paper", "good"]) == 0
    assert main(["--root", str(tree), "--paper", "good"]) == 0
    assert "--seeds 0" in (tree / "repos/good/tests/test_skeleton.py").read_text()
    (tree / "meta.toml").write_text(
        meta.replace(old, 'gpu_smoke = ["bench", "--device", "cuda"]\n', 1)
    )
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "must not set --device" in capsys.readouterr().out
    (tree / "meta.toml").write_text(meta.replace(old, "", 1))
    assert main(["--root", str(tree), "--paper", "good"]) == 1
    assert "good: meta.toml lacks 'gpu_smoke'" in capsys.readouterr().out


def test_meta_verdict_line_is_required_and_short(tree, capsys):
    meta = (tree / "meta.toml").read_text()
    (tree / "meta.toml").write_text(meta.replace('verdict = "It works."\n', "", 1))
    assert main(["--root", str(tree)]) == 1
    assert "good: meta.toml lacks 'verdict'" in capsys.readouterr().out
    (tree / "meta.toml").write_text(meta.replace("It works.", "x" * 121, 1))
    assert main(["--root", str(tree)]) == 1
    assert "'verdict' is 121 characters" in capsys.readouterr().out
