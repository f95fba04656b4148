"""report.py on fixture results: REPORT.md rows, README tables between markers, bad files named."""

from __future__ import annotations

import json

from conftest import good_results, write_project
from report import main


def test_report_rows_and_readme_tables(tree, capsys):
    assert main(["--root", str(tree)]) == 0
    report = (tree / "REPORT.md").read_text()
    assert "| M-good | `beats` | Ours < Base | 0.3 vs 1.0 | 0.5 vs 2.0 | yes | - | - |" in report
    assert "| M-good | `tiny` | gap < 0.1 | 0.05 | 0.5 | **no** | - | - |" in report
    assert "| quick | `speed` | solve | 1 | lib | 0.5 | s (lower is better) | 2 | peer |" in report
    assert "repos/good/results/figures/fig.png" in report
    readme = (tree / "README.md").read_text()
    assert "| M-good | 1/2 | 12.5 | - | - | `tiny` (quick) |" in readme
    assert "| M-later | [Paper later](https://x/later) | torch | not built yet |" in readme
    assert "1/2 claims hold" in capsys.readouterr().out


def test_report_is_idempotent_and_check_detects_staleness(tree):
    assert main(["--root", str(tree)]) == 0
    first = (tree / "README.md").read_text()
    assert main(["--root", str(tree)]) == 0
    assert (tree / "README.md").read_text() == first
    assert main(["--root", str(tree), "--check"]) == 0
    results = good_results("good")
    results["claims"][1]["holds"] = True
    (tree / "repos" / "good" / "results" / "quick.json").write_text(json.dumps(results))
    assert main(["--root", str(tree), "--check"]) == 1


def test_malformed_results_rejected_with_message(tree, capsys):
    bad = good_results("bad")
    del bad["claims"][0]["paper"]
    write_project(tree, "bad", bad)
    assert main(["--root", str(tree)]) == 1
    err = capsys.readouterr().err
    assert "repos/bad/results/quick.json: claim beats lacks 'paper'" in err
    assert "M-bad" not in (tree / "REPORT.md").read_text()
    assert "| M-good |" in (tree / "REPORT.md").read_text()


def test_missing_markers_fail(tree, capsys):
    (tree / "README.md").write_text("# no markers\n")
    assert main(["--root", str(tree)]) == 1
    assert "lacks the markers" in capsys.readouterr().err


def test_paper_preset_beside_quick_and_units(tree):
    paper = good_results("good")
    paper.update(mode="paper", wall_seconds=1800.0)
    paper["claims"][1].update(ours="0.08", holds=True)
    paper["claims"].append(
        {"id": "only-paper", "statement": "s", "paper": "p", "ours": "o", "holds": False}
    )
    paper["performance"] = [
        {
            "id": "rate",
            "what": "updates",
            "unit": "updates/s",
            "higher_is_better": True,
            "ours_value": 70.0,
            "peer": "IQL",
            "peer_value": 35.0,
        }
    ]
    (tree / "repos" / "good" / "results" / "paper.json").write_text(json.dumps(paper))
    (tree / "repos" / "good" / "results" / "figures" / "paper-curve.png").write_bytes(b"x")
    assert main(["--root", str(tree)]) == 0
    report = (tree / "REPORT.md").read_text()
    assert "| M-good | `tiny` | gap < 0.1 | 0.05 | 0.5 | **no** | 0.08 | yes |" in report
    assert "| M-good | `only-paper` | s | p | - | - | o | **no** |" in report
    assert "### M-good" in report
    assert (
        "| paper | `rate` | updates | 70 | IQL | 35 | updates/s (higher is better) | 2 | ours |"
        in report
    )
    assert "| M-good | paper |" in report and "[paper-curve](" in report
    readme = (tree / "README.md").read_text()
    assert (
        "| M-good | 1/2 | 12.5 | 2/3 | 1.8e+03 | `tiny` (quick), `only-paper` (paper) |" in readme
    )
    assert "quick and paper results" in readme
