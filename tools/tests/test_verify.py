"""verify.py: a re-run agrees with the committed file up to timings and the stated tolerance."""

from __future__ import annotations

import copy
import json

from conftest import good_results
from verify import main, verify


def test_identical_rerun_and_timings_agree():
    old = good_results("p")
    new = copy.deepcopy(old)
    new["wall_seconds"] = 99.0
    new["created"] = "later"
    new["performance"][0]["ours_s"] = 5.0
    new["metrics"]["Ours"]["solve_seconds"] = 1.0
    old["metrics"]["Ours"]["solve_seconds"] = 2.0
    assert verify(old, new) == []


def test_metric_difference_is_named():
    old = good_results("p")
    new = copy.deepcopy(old)
    new["metrics"]["Ours"]["gap"]["values"][1] = 0.51
    assert verify(old, new) == ["metrics.Ours.gap.values[1]: committed 0.5, re-run 0.51"]


def test_claims_seeds_and_missing_metrics_are_compared():
    old = good_results("p")
    new = copy.deepcopy(old)
    new["claims"][1]["holds"] = True
    new["seeds"] = [0, 1]
    del new["metrics"]["Base"]
    diffs = "\n".join(verify(old, new))
    assert "claim tiny: verdict committed 'not held', re-run 'holds'" in diffs
    assert "seeds: committed [0, 1, 2], re-run [0, 1]" in diffs
    assert "metrics.Base: missing in the re-run" in diffs


def test_tolerance_of_the_committed_file_is_used():
    old = good_results("p")
    new = copy.deepcopy(old)
    new["metrics"]["Ours"]["gap"]["mean"] = 0.5005
    assert verify(old, new)
    old["tolerance"] = {"rtol": 1e-2, "why": "threaded reductions"}
    assert verify(old, new) == []
    new["metrics"]["Base"]["gap"]["mean"] = 3.0
    old["tolerance"]["exclude"] = ["Base"]
    assert verify(old, new) == []


def test_cli_exit_codes(tmp_path, capsys):
    old, new = tmp_path / "a.json", tmp_path / "b.json"
    doc = good_results("p")
    old.write_text(json.dumps(doc))
    new.write_text(json.dumps(doc))
    assert main([str(old), str(new)]) == 0
    doc["metrics"]["Ours"]["gap"]["std"] = 0.2
    new.write_text(json.dumps(doc))
    assert main([str(old), str(new)]) == 1
    assert "metrics.Ours.gap.std: committed 0.1, re-run 0.2" in capsys.readouterr().out
    new.write_text("{")
    assert main([str(old), str(new)]) == 2
