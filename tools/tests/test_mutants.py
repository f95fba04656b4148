"""tools/mutants.py on a tiny pure-Python project: a killed mutant, a survivor, a bad `find`."""

from __future__ import annotations

import sys

import pytest
from mutants import MutantsError, load_mutants, main

CODE = "def add(a, b):\n    return a + b\n\n\ndef sign(x):\n    return 1 if x >= 0 else -1\n"
TESTS = "from toy import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
KILLED = """[[mutant]]
file = "src/toy/__init__.py"
find = "return a + b"
replace = "return a - b"
why = "subtracts"
select = "add"
"""
SURVIVOR = """[[mutant]]
file = "src/toy/__init__.py"
find = "x >= 0"
replace = "x > 0"
why = "sign(0) becomes -1; no test looks at zero"
"""


@pytest.fixture
def toy(tmp_path):
    (tmp_path / "meta.toml").write_text('[papers.toy]\npath = "repos/toy"\npackage = "toy"\n')
    repo = tmp_path / "repos" / "toy"
    (repo / "src" / "toy").mkdir(parents=True)
    (repo / "src" / "toy" / "__init__.py").write_text(CODE)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_toy.py").write_text(TESTS)
    return tmp_path


def run(root, capsys, *extra):
    code = main(["toy", "--root", str(root), "--python", sys.executable, *extra])
    return code, capsys.readouterr()


def test_killed_mutant_passes(toy, capsys):
    (toy / "repos/toy/tests/mutants.toml").write_text(KILLED)
    code, out = run(toy, capsys)
    assert code == 0, out
    assert "mutant 1: killed" in out.out and "1/1 mutants killed" in out.out
    # the project itself is untouched
    assert (toy / "repos/toy/src/toy/__init__.py").read_text() == CODE


def test_surviving_mutant_fails(toy, capsys):
    (toy / "repos/toy/tests/mutants.toml").write_text(KILLED + "\n" + SURVIVOR)
    code, out = run(toy, capsys)
    assert code == 1
    assert "mutant 1: killed" in out.out and "mutant 2: SURVIVED" in out.out
    assert "1/2 mutants killed" in out.out
    code, out = run(toy, capsys, "--only", "1")
    assert code == 0


def test_find_that_does_not_match_is_a_clear_error(toy, capsys):
    (toy / "repos/toy/tests/mutants.toml").write_text(KILLED.replace("a + b", "a * b"))
    code, out = run(toy, capsys)
    assert code == 1
    assert "mutant 1: cannot apply" in out.out and "occurs 0 times" in out.out


def test_unmutated_selection_must_pass(toy, capsys):
    (toy / "repos/toy/tests/test_toy.py").write_text(TESTS.replace("== 5", "== 6"))
    (toy / "repos/toy/tests/mutants.toml").write_text(KILLED)
    code, out = run(toy, capsys)
    assert code == 1 and "unmutated -k '(add)': fail" in out.out


def test_unusable_files(toy, capsys, tmp_path):
    code, out = run(toy, capsys)
    assert code == 2 and "mutants.toml: no such file" in out.err
    bad = tmp_path / "m.toml"
    bad.write_text('[[mutant]]\nfile = "x.py"\nfind = "a"\nreplace = "b"\n')
    with pytest.raises(MutantsError, match="lacks why"):
        load_mutants(bad)
    assert main(["nope", "--root", str(toy)]) == 2
