"""tools/sync.py writes the generated skeleton files and finds drift; check reports it."""

from __future__ import annotations

from check import main as check_main
from sync import GENERATED, authors_cff, drift, header, main, papers


def test_conforming_tree_is_in_step(tree, capsys):
    assert main(["--root", str(tree), "--check"]) == 0
    assert "1/1 in step" in capsys.readouterr().out


def test_every_generated_file_names_its_template(tree):
    repo = tree / "repos" / "good"
    for rel in [r for r in GENERATED if header(r)]:
        path = repo / rel.replace("__package__", "good")
        first = path.read_text().splitlines()[0]
        assert first.startswith("# generated from tools/template/") and "edit there" in first
        assert "__package__" not in path.read_text() and "__cli__" not in path.read_text()


def test_hand_edited_copy_is_drift_and_fails_check(tree, capsys):
    cli = tree / "repos" / "good" / "src" / "good" / "cli.py"
    cli.write_text(cli.read_text().replace("exits 2", "exits 3"))
    assert main(["--root", str(tree), "--check"]) == 1
    assert "src/good/cli.py: differs from tools/template" in capsys.readouterr().out
    assert check_main(["--root", str(tree)]) == 1
    assert "good: repos/good/src/good/cli.py: differs" in capsys.readouterr().out


def test_missing_copy_is_reported_and_sync_restores_it(tree, capsys):
    repo = tree / "repos" / "good"
    (repo / "tests" / "test_skeleton.py").unlink()
    assert drift(tree, "good", papers(tree)["good"]) == [
        "repos/good/tests/test_skeleton.py: missing (python3 tools/sync.py --paper good)"
    ]
    assert main(["--root", str(tree), "--paper", "good"]) == 0
    assert "wrote repos/good/tests/test_skeleton.py" in capsys.readouterr().out
    assert drift(tree, "good", papers(tree)["good"]) == []


def test_unknown_paper_is_an_error(tree, capsys):
    assert main(["--root", str(tree), "--paper", "nope"]) == 2
    assert "no [papers.nope]" in capsys.readouterr().err


def test_citation_names_the_paper_and_its_authors(tree):
    meta = (tree / "meta.toml").read_text()
    meta = meta.replace(
        'title = "Paper good"', 'title = "Paper good"\nauthors = ["Ada B. Lovelace"]', 1
    )
    (tree / "meta.toml").write_text(meta)
    assert main(["--root", str(tree), "--paper", "good"]) == 0
    cff = (tree / "repos" / "good" / "CITATION.cff").read_text()
    assert 'title: "Paper good"' in cff and 'url: "https://x/good"' in cff
    assert 'family-names: "Lovelace"\n      given-names: "Ada B."' in cff
    assert authors_cff([]) == '    - name: "unknown"'
    assert (tree / "repos" / "good" / "LICENSE").read_text().startswith("MIT License")
