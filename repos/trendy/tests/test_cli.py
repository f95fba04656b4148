"""trendy's own checks on the README's Quick start bench (run once per session by the generated
`readme_run` fixture; the shared contract, misuse listed in skeleton.toml included, is tested by
the generated test_skeleton.py): the results file's metrics, claims, roles and tuning."""

from __future__ import annotations


def test_readme_bench_writes_claims_roles_and_tuning(readme_run):
    """The real (tiny) bench of the Quick start, run without --results-dir, writes a full
    runs/quick/quick.json (no results/: test_skeleton.py checks that)."""
    assert readme_run.codes == [0] * len(readme_run.commands), readme_run.commands
    assert any(argv[1] == "bench" for argv in readme_run.commands)
    doc = readme_run.results()
    assert doc["paper"] == "trendy" and len(doc["metrics"]) >= 2
    assert all(isinstance(c["holds"], bool) for c in doc["claims"]) and doc["performance"]
    assert {"grid", "validation_nmse"} <= set(doc["tuning"])
    for c in doc["claims"]:  # structured parts and the three-way verdict on every claim
        assert c["test"] and c["verdict"] in ("holds", "contradicted", "inconclusive")
        assert c["holds"] == (c["verdict"] == "holds")
        assert c["verdict"] != "holds"  # one seed: a claim never holds on fewer than three
    roles = {c["id"]: c.get("role") for c in doc["claims"]}
    assert [k for k, r in roles.items() if r == "control"] == [
        "noise-control-untrained",
        "hopf-control-shuffled",
        "turing-control-shuffled",
    ]
