"""report.py on fixture results: REPORT.md rows, README tables between markers, bad files named."""

from __future__ import annotations

import json

from conftest import good_results, write_project
from report import main


def test_report_rows_and_readme_tables(tree, capsys):
    assert main(["--root", str(tree)]) == 0
    report = (tree / "REPORT.md").read_text()
    assert "## M-good (`good`)" in report
    assert "**quick**: 1 hold, 1 not held (old form); **paper**: -." in report
    assert "| `beats` | 0.3 vs 1.0 | holds: 0.5 vs 2.0 | - | - |" in report
    assert "| `tiny` | 0.05 | **not held**: 0.5 | - | - |" in report
    assert "| quick | `speed` | solve | 1 | lib | 0.5 | s (lower is better) | 2 | peer |" in report
    assert "![M-good](repos/good/results/figures/fig.png)" in report
    assert "| [M-good](#m-good-good) | 1 hold, 1 not held (old form) | - |" in report
    readme = (tree / "README.md").read_text()
    assert "| M-good | 1 hold, 1 not held (old form) | 12.5 | - | - | It works. |" in readme
    assert "`./run -s reproduce` (quick) 0 min over 1 papers" in readme
    assert "| M-later | [Paper later](https://x/later) | torch | not built yet |" in readme
    assert "quick: 1 papers, 1 holds, 1 not held" in capsys.readouterr().out


def test_structured_claims_show_verdict_interval_and_seeds(tree):
    results = good_results("good")
    results["claims"][1].update(
        holds=False,
        verdict="inconclusive",
        seeds_needed=7,
        test=[
            {
                "what": "gap",
                "estimate": 1.0,
                "interval": [-0.5, 2.5],
                "level": 0.95,
                "method": "paired t",
                "threshold": 0.0,
                "direction": ">",
                "n": 3,
                "unit": "pts",
            }
        ],
    )
    (tree / "repos" / "good" / "results" / "quick.json").write_text(json.dumps(results))
    meta = (tree / "meta.toml").read_text()
    meta = meta.replace('verdict = "It works."', 'verdict = "Mixed."', 1)
    (tree / "meta.toml").write_text(meta)
    assert main(["--root", str(tree)]) == 0
    report = (tree / "REPORT.md").read_text()
    assert "| `tiny` | 0.05 | **inconclusive**: +1 [-0.5, +2.5] pts > 0 (n=3) | - | 7 |" in report
    assert (
        "1 hold, 1 inconclusive" in report and "Mixed. ([README](repos/good/README.md))" in report
    )
    assert (
        "| M-good | 1 hold, 1 inconclusive | 12.5 | - | - | Mixed. |"
        in (tree / "README.md").read_text()
    )


def test_negative_controls_are_counted_apart(tree):
    results = good_results("good")
    results["claims"][1]["role"] = "control"  # holds: False, as a control must
    results["claims"].append({**results["claims"][0], "id": "bad-control", "role": "control"})
    (tree / "repos" / "good" / "results" / "quick.json").write_text(json.dumps(results))
    assert main(["--root", str(tree)]) == 0
    report = (tree / "REPORT.md").read_text()
    assert "1 hold, 1 controls not holding, 1 controls **holding**" in report
    assert "| `bad-control` |" in report and "control **holds**" in report
    results["claims"][1]["role"] = "baseline"
    (tree / "repos" / "good" / "results" / "quick.json").write_text(json.dumps(results))
    assert main(["--root", str(tree)]) == 1


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
    assert "## M-good (`good`)" in (tree / "REPORT.md").read_text()


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
    assert "| `tiny` | 0.05 | **not held**: 0.5 | holds: 0.08 | - |" in report
    assert "| `only-paper` | p | - | **not held**: o | - |" in report
    assert (
        "| paper | `rate` | updates | 70 | IQL | 35 | updates/s (higher is better) | 2 | ours |"
        in report
    )
    assert "![M-good](repos/good/results/figures/paper-curve.png)" in report
    assert "paper 1.8e+03 s on [0, 1, 2] seeds" in report
    readme = (tree / "README.md").read_text()
    assert (
        "| M-good | 1 hold, 1 not held (old form) | 12.5 | 2 hold, 1 not held (old form) | 1.8e+03 |"
        in readme
    )
    assert "`./run -s reproduce-paper` 30 min over 1 papers" in readme
    assert "quick and paper results" in readme
