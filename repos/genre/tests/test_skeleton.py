# generated from tools/template/tests/test_skeleton.py by tools/sync.py; edit there, then run python3 tools/sync.py
"""The contract every project's command line keeps (tools/template; issue: one skeleton).

Work is replaced by a recorder, so these tests check what happens before any work starts: misuse
is one line on stderr and exit 2, bounds name their field, devices and output paths are checked
first, corrupt files are named, results are readable files, claims' verdicts follow their numbers.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import shlex
import sys
import tomllib
from pathlib import Path

import pytest

from genre import cli, commands, hooks, results, runtime
from genre.config import PRESETS, Config, validate

PACKAGE = Path(cli.__file__).resolve().parent
# meta.toml's gpu_smoke for this paper (the full preset at tiny size), rendered by tools/sync.py
GPU_SMOKE = shlex.split(
    "bench --preset full --seeds 0 --max-rows 1000 --n-negatives 5 --n-val-negatives 5 --n-timing 2 --rf-trees 5 --top-k 20 --n-layers 1 --n-heads 2 --d-model 8 --d-ff 8 --epochs 2 --batch-size 64 --eval-every 1 --dice-negatives 1 --vae-epochs 2 --sweep-temperatures 10 --sweep-lams 5 --sweep-retrain-lams 2 --n-boot 50 --threads 1 --quiet",
)
# what the project's own tests tell the contract (README shrink flags, misuse cases): data only
SETTINGS = tomllib.loads((Path(__file__).resolve().parent / "skeleton.toml").read_text())
README_SETTINGS = SETTINGS.get("readme", {})
MISUSE = [(case["argv"], case["message"]) for case in SETTINGS.get("misuse", [])]


@pytest.fixture
def started(monkeypatch, tmp_path):
    """Replace every command's work with a recorder; run from an empty folder."""
    calls: list[str] = []
    for name, cmd in list(hooks.COMMANDS.items()):

        def record(arg, _name=name):
            calls.append(_name)
            return {"ran": _name}

        monkeypatch.setitem(hooks.COMMANDS, name, dataclasses.replace(cmd, run=record))
    monkeypatch.chdir(tmp_path)
    return calls


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


CONFIG_COMMANDS = [n for n, c in hooks.COMMANDS.items() if not c.raw]
WRITERS = [(n, f) for n, c in hooks.COMMANDS.items() for f in c.writes]
READERS = [n for n, c in hooks.COMMANDS.items() if c.reads]


def test_usage_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in hooks.COMMANDS)
    assert cli.main([]) == 2


@pytest.mark.parametrize("command", list(hooks.COMMANDS))
def test_every_command_has_help(command, capsys):
    assert cli.main([command, "--help"]) == 0
    assert capsys.readouterr().out.strip()


def test_unknown_command_and_preset(started, capsys):
    assert cli.main(["fly"]) == 2
    assert "unknown command 'fly'" in one_line_error(capsys)
    assert cli.main([CONFIG_COMMANDS[0], "--preset", "huge"]) == 2
    assert "--preset must be one of" in one_line_error(capsys)
    assert cli.main([CONFIG_COMMANDS[0], "--no-such-flag", "1"]) == 2
    one_line_error(capsys)
    assert started == []


def violating(value, c):
    """A value that breaks constraint c (type kept: int fields get ints)."""
    if isinstance(c, runtime.MinLen):
        return ()
    if isinstance(value, tuple):  # an elementwise bound; an empty default gets one bad entry
        return (violating(value[0] if value else 0, c),)
    if value is None:  # an optional field: break the bound with a number
        value = 0
    step = 1 if isinstance(value, int) and not isinstance(value, bool) else 0.5
    if isinstance(c, runtime.Interval):
        c = (
            runtime.Ge(c.ge)
            if c.ge is not None
            else runtime.Gt(c.gt)
            if c.gt is not None
            else runtime.Le(c.le)
            if c.le is not None
            else runtime.Lt(c.lt)
        )
    if isinstance(c, runtime.Ge):
        return type(value)(c.ge - step)
    if isinstance(c, runtime.Gt):
        return type(value)(c.gt)
    if isinstance(c, runtime.Le):
        return type(value)(c.le + step)
    return type(value)(c.lt)


BOUNDS = [(f, c) for f, cs in runtime.bounds_of(Config).items() for c in cs]


def test_project_declares_its_bounds():
    """Bounds stand beside the paper's own fields, not only the shared ones (seed, seeds)."""
    assert {f for f, _ in BOUNDS} - {"seed", "seeds"}


@pytest.mark.parametrize(("field", "constraint"), BOUNDS, ids=[f"{f}-{c}" for f, c in BOUNDS])
def test_validate_names_the_field_of_a_broken_bound(field, constraint):
    for preset in PRESETS.values():
        bad = violating(getattr(preset, field), constraint)
        with pytest.raises(ValueError, match=rf"^{field} "):
            validate(dataclasses.replace(preset, **{field: bad}))


def test_a_broken_bound_on_the_command_line_is_one_line(started, capsys):
    field, c = next((f, c) for f, c in BOUNDS if f not in ("seed", "seeds"))
    bad = violating(getattr(PRESETS["quick"], field), c)
    flag = "--" + field.replace("_", "-")
    values = [str(v) for v in bad] if isinstance(bad, tuple) else [str(bad)]
    assert cli.main([CONFIG_COMMANDS[0], flag, *values]) == 2
    assert field in one_line_error(capsys)
    assert started == []


def cuda_present() -> bool:
    try:
        return runtime.resolve_device("auto") != "cpu"
    except (ValueError, RuntimeError):
        return False


@pytest.mark.skipif(cuda_present(), reason="this machine has CUDA")
def test_cuda_without_a_device_is_one_line(started, capsys):
    assert cli.main([CONFIG_COMMANDS[0], "--device", "cuda"]) == 2
    assert "--device cuda" in one_line_error(capsys)
    assert cli.main([CONFIG_COMMANDS[0], "--device", "tpu"]) == 2
    one_line_error(capsys)
    assert started == []
    assert runtime.resolve_device("auto") == "cpu"


@pytest.mark.parametrize(("command", "field"), WRITERS)
def test_unwritable_output_fails_before_work(command, field, started, tmp_path, capsys):
    a_file = tmp_path / "README.md"
    a_file.write_text("not a folder")
    flag = "--" + field.replace("_", "-")
    for bad in (a_file, a_file / "run"):
        assert cli.main([command, flag, str(bad)]) == 2
        assert str(bad) in one_line_error(capsys)
    assert started == []


@pytest.mark.parametrize("command", READERS)
def test_reading_a_missing_run_is_one_line(command, started, tmp_path, capsys):
    assert cli.main([command, "--out", str(tmp_path / "nowhere")]) == 2
    assert "no such run folder" in one_line_error(capsys)
    assert started == []


@pytest.mark.parametrize("command", READERS)
def test_corrupt_run_files_are_named(command, tmp_path, monkeypatch, capsys):
    """The real eval on a run folder whose files are garbage: one line that names a file there."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.json", "metrics.json", "model.safetensors", "checkpoint.safetensors"):
        (run / name).write_text("{garbage")
    monkeypatch.chdir(tmp_path)
    assert cli.main([command, "--out", str(run)]) == 2
    assert str(run) in one_line_error(capsys)


def test_bench_never_writes_committed_results_by_default():
    for name, preset in PRESETS.items():
        where = runtime.results_dir_of(preset)
        assert where.parts[:1] != ("results",), f"preset {name} writes {where}"


def test_checks_pass_then_work_starts(started, tmp_path, capsys):
    assert cli.main([CONFIG_COMMANDS[0], "--out", str(tmp_path / "new" / "run")]) == 0
    assert started == [CONFIG_COMMANDS[0]]
    assert not (tmp_path / "new").exists()  # checks create nothing


def test_threads_hold_the_math_libraries(started, monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    for var in runtime.THREAD_VARIABLES:
        monkeypatch.setenv(var, "2")  # restored after the test
    threadpool_limits(limits=2)
    cli.prepare(CONFIG_COMMANDS[0], ["--threads", "1"])
    assert all(os.environ[var] == "1" for var in runtime.THREAD_VARIABLES)
    assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    torch = sys.modules.get("torch")
    assert torch is None or torch.get_num_threads() == 1


def test_results_files_are_readable_whatever_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        results.atomic_write_json(tmp_path / "r.json", {"a": 1})
        path = results.write_results(tmp_path / "res", "quick", {"b": 2}, {"f.png": b"\x89PNG"})
    finally:
        os.umask(old)
    for p in (tmp_path / "r.json", path, tmp_path / "res" / "figures" / "f.png"):
        assert p.stat().st_mode & 0o777 == 0o644, p
    assert results.read_json(path) == {"b": 2}
    assert not [p for p in (tmp_path / "res").iterdir() if p.name.startswith(".")]


def test_corrupt_json_error_names_the_file(tmp_path):
    bad = tmp_path / "metrics.json"
    bad.write_text("{oops")
    with pytest.raises(ValueError, match=str(bad)):
        results.read_json(bad, "metrics file")
    with pytest.raises(ValueError, match="no such"):
        results.read_json(tmp_path / "none.json")
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="holds a list, expected a dict"):
        results.read_json(bad, "metrics file")
    assert results.read_json(bad, kind=None) == [1, 2]


def test_checkpoints_round_trip_and_a_corrupt_one_is_named(tmp_path):
    pytest.importorskip("safetensors")
    import numpy as np

    good = tmp_path / "good.safetensors"
    results.save_safetensors(good, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, "numpy")
    assert good.stat().st_mode & 0o777 == 0o644
    assert results.load_safetensors(good, "numpy")["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert results.load_safetensors(good)["w"].shape[0] == 2  # torch where installed, else numpy
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"\x00\x01not a checkpoint")
    with pytest.raises(ValueError, match="corrupt checkpoint"):
        results.load_safetensors(bad)


@pytest.mark.parametrize(
    ("interval", "n", "expected"),
    [
        ((0.5, 2.0), 3, "holds"),
        ((-1.0, 2.0), 3, "inconclusive"),
        ((-3.0, -0.5), 3, "contradicted"),
        ((0.5, 2.0), 2, "inconclusive"),  # a holds needs >= 3 paired units
        ((None, None), 1, "inconclusive"),
    ],
)
def test_verdict_follows_the_interval(interval, n, expected):
    p = results.part("a - b", 1.0, interval, 0.0, ">", n)
    c = results.claim("x", "a beats b", "paper", "ours", test=[p])
    assert c["verdict"] == expected and c["holds"] == (expected == "holds")
    assert ("seeds_needed" in c) == (expected == "inconclusive")
    flipped = results.part("a - b", 1.0, interval, 0.0, "<", n)
    if expected == "holds":
        assert results.verdict([flipped]) == "contradicted"


def test_a_failed_precondition_leaves_its_claim_unread():
    wide = results.part("a - b", 1.0, (-1.0, 3.0), 0.0, ">", 3)
    later = results.claim("later", "a beats b", "p", "o", test=[wide], precondition="pre")
    for pre_interval, pre_verdict in (
        ((-2.0, -1.0), "contradicted"),
        ((-1.0, 1.0), "inconclusive"),
    ):
        pre_part = results.part("learns", 0.0, pre_interval, 0.0, ">", 3)
        pre = results.claim("pre", "it learns", "p", "o", test=[pre_part])
        gated = results.gate([later, pre])[0]  # the precondition may come after its claim
        assert gated["verdict"] == "inconclusive" and gated["holds"] is False
        assert gated["verdict_of_numbers"] == "inconclusive" and "seeds_needed" not in gated
        assert gated["not_read"] == f"precondition pre is {pre_verdict}"
    sure = results.part("a - b", 1.0, (0.5, 2.0), 0.0, ">", 3)
    good = results.claim("later", "a beats b", "p", "o", test=[sure], precondition="pre")
    assert results.gate([good, pre])[0]["verdict_of_numbers"] == "holds"
    held = results.claim("pre", "it learns", "p", "o", test=[sure])
    assert results.gate([later, held])[0] == later  # read as measured
    with pytest.raises(ValueError, match="not a claim here"):
        results.gate([later])
    doc = results.results_document("p", "quick", [0], {"a": {}, "b": {}}, [later, pre], 1.0, "cpu")
    assert doc["claims"][0]["verdict"] == "inconclusive"


def test_paired_interval_and_seeds_needed():
    d = results.paired_interval([3.0, 4.0, 5.0], [1.0, 1.0, 1.0])
    assert d["n"] == 3 and d["mean"] == pytest.approx(3.0)
    assert d["lo"] == pytest.approx(3.0 - 4.303 * 1.0 / 3**0.5, rel=1e-3)
    p = results.part("x", 0.5, (-1.5, 2.5), 0.0, ">", 4)
    assert results.seeds_needed(p) == 4 * 16  # half width 2 over a gap of 0.5
    nan = results.part("x", float("nan"), (float("nan"), float("nan")), 0.0, ">", 3)
    assert results.part_verdict(nan) == "inconclusive"  # a NaN metric decides nothing
    c = results.claim("c", "s", "p", "o", test=[nan])
    assert c["verdict"] == "inconclusive" and c["seeds_needed"] == results.SEEDS_NEEDED_CAP + 1


def test_git_commit_is_read_once_and_marks_uncommitted_source(monkeypatch):
    answers = {
        ("rev-parse", "--short", "HEAD"): "abc1234",
        ("status", "--porcelain", "--", "."): " M x.py",
    }
    calls = []
    monkeypatch.setattr(results, "_git", lambda *a: calls.append(a) or answers[a])
    monkeypatch.setattr(results, "_COMMIT_AT_START", [])
    assert results.git_commit() == "abc1234" + results.DIRTY
    answers[("rev-parse", "--short", "HEAD")] = "fff0000"  # a commit made during the run
    assert results.git_commit() == "abc1234" + results.DIRTY and len(calls) == 2
    monkeypatch.setattr(results, "_COMMIT_AT_START", [])
    answers[("status", "--porcelain", "--", ".")] = ""
    assert results.git_commit() == "fff0000"


def test_progress_prints_stages_without_a_terminal(capsys):
    assert list(runtime.progress(range(20), "loop")) == list(range(20))
    err = capsys.readouterr().err
    assert "loop: 20/20" in err and "left" in err
    loss = iter(range(100, 0, -1))
    assert list(runtime.progress(range(4), "fit", postfix=lambda: f"loss {next(loss)}")) == [
        0,
        1,
        2,
        3,
    ]
    last = capsys.readouterr().err.splitlines()[-1]
    assert "fit: 4/4" in last and last.endswith("loss 97")
    assert list(runtime.progress(range(3), "quiet", quiet=True)) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def package_import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (any depth in the file), from the source."""
    names = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    }
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                PACKAGE.name + "."
            ):
                found.add(node.module.split(".")[1])
        graph[path.stem] = (found & names) - {path.stem, "__init__"}
    return graph


def test_no_import_circles():
    graph = package_import_graph()
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                pytest.fail("import circle: " + " -> ".join([*trail, node, nxt]))
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])


def test_partial_and_merge_are_checked(started, tmp_path, capsys):
    """A bench that does not split by seed refuses --partial-out; a merge reads only partial
    files of this paper and preset, each seed once."""
    if not getattr(hooks, "SPLITS_BY_SEED", False):
        assert cli.main(["bench", "--partial-out", str(tmp_path / "p.json")]) == 2
        assert "does not split by seed" in one_line_error(capsys)
        return
    paper = PRESETS["quick"]
    a = results.write_partial(tmp_path / "a.json", "x", paper.name, {0: {"m": 1}}, 1.0, "cpu")
    assert a["partial"] and a["per_seed"] == {"0": {"m": 1}}
    results.write_partial(tmp_path / "b.json", "x", paper.name, {0: {"m": 2}}, 1.0, "cpu")
    with pytest.raises(ValueError, match="seed 0 is also in"):
        results.read_partials([str(tmp_path / "a.json"), str(tmp_path / "b.json")], "x", "quick")
    with pytest.raises(ValueError, match="expected 'y'"):
        results.read_partials([str(tmp_path / "a.json")], "y", "quick")
    results.atomic_write_json(tmp_path / "full.json", {"paper": "x"})
    with pytest.raises(ValueError, match="not a partial results file"):
        results.read_partials([str(tmp_path / "full.json")], "x", "quick")


@pytest.mark.skipif(not GPU_SMOKE, reason="meta.toml has no gpu_smoke for this paper")
def test_gpu_smoke_command_runs_on_cpu(tmp_path, monkeypatch):
    """The command `./run -s gpu-smoke` runs on CUDA, here on the CPU: the full preset's code
    path end to end at tiny size, so it cannot rot between GPU runs."""
    monkeypatch.chdir(tmp_path)
    out, res = tmp_path / "run", tmp_path / "results"
    argv = [*GPU_SMOKE, "--device", "cpu", "--results-dir", str(res)]
    if "--out" not in GPU_SMOKE:
        argv += ["--out", str(out)]
    assert cli.main(argv) == 0
    written = sorted(res.glob("*.json"))
    assert len(written) == 1, written
    doc = results.read_json(written[0])
    assert doc["claims"] and doc["environment"]["device"] == "cpu"


def test_raw_command_parser_misuse_is_a_value_error():
    parser = commands.OneLineParser(prog="genre x")
    parser.add_argument("--n", type=int)
    with pytest.raises(ValueError, match="genre x: argument --n"):
        parser.parse_args(["--n", "many"])


def test_a_saved_run_config_round_trips_and_bad_ones_are_named(tmp_path):
    import json

    path = tmp_path / "config.json"
    cfg = PRESETS["quick"]
    path.write_text(json.dumps(dataclasses.asdict(cfg)))
    assert results.read_config(path, Config, validate) == cfg
    path.write_text(json.dumps({**dataclasses.asdict(cfg), "bogus": 1}))
    with pytest.raises(ValueError, match="unknown configuration fields"):
        results.read_config(path, Config, validate)
    path.write_text(json.dumps({**dataclasses.asdict(cfg), "seeds": []}))
    with pytest.raises(ValueError, match=rf"{path}: seeds "):
        results.read_config(path, Config, validate)


def test_skeleton_settings_name_the_projects_misuse_and_readme_shrink():
    assert MISUSE, "tests/skeleton.toml lists no [[misuse]] case"
    assert all(argv and message for argv, message in MISUSE)
    assert README_SETTINGS.get("shrink"), "tests/skeleton.toml has no [readme.shrink]"
    unknown = set(README_SETTINGS) - {"slow", "figures", "shrink", "command_flags"}
    assert not unknown, f"tests/skeleton.toml [readme]: unknown keys {sorted(unknown)}"


@pytest.mark.parametrize(("argv", "message"), MISUSE)
def test_project_misuse_is_one_line_and_writes_nothing(
    argv, message, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert cli.main(argv) == 2
    assert message in one_line_error(capsys)
    assert not list(tmp_path.iterdir())


@(pytest.mark.slow if README_SETTINGS.get("slow") else lambda test: test)
def test_readme_quick_start_commands_run(readme_run):
    """Every `genre ...` line of the README's Quick start, shrunk, exits 0 (conftest.py)."""
    assert readme_run.commands, "the README's Quick start names no command"
    assert readme_run.codes == [0] * len(readme_run.commands), list(
        zip(readme_run.commands, readme_run.codes, strict=True)
    )
    assert not (readme_run.folder / "results").exists()  # committed results only on request
    assert any(argv[1] == "bench" for argv in readme_run.commands), "no bench in the Quick start"
    assert_results_document(readme_run.results(), "quick")
    figures = readme_run.folder / "runs" / "quick" / "figures"
    for name in README_SETTINGS.get("figures", []):
        assert (figures / name).exists(), name


RESULTS_KEYS = ("paper", "mode", "created", "git_commit", "environment", "wall_seconds", "seeds")


def assert_results_document(doc: dict, mode: str) -> None:
    """The meta-repo schema every bench writes (../shared/CONVENTIONS.md), checked once here for
    every project, so a project's own bench tests check only what is its own."""
    missing = [key for key in (*RESULTS_KEYS, "metrics", "claims") if key not in doc]
    assert not missing, f"results document lacks {missing}"
    assert doc["paper"] == "genre" and doc["mode"] == mode and doc["seeds"]
    assert isinstance(doc["metrics"], dict) and len(doc["metrics"]) >= 2, "fewer than 2 methods"
    assert doc["claims"], "a bench without claims"
    for c in doc["claims"]:
        assert all(c.get(key) for key in ("id", "statement", "paper", "ours")), c
        assert c["verdict"] in ("holds", "contradicted", "inconclusive"), c["id"]
        assert c["holds"] is (c["verdict"] == "holds"), c["id"]
        assert c["test"], f"{c['id']}: a claim without its test"
        for p in c["test"]:
            assert p["direction"] in ("<", ">") and p["n"] >= 0, (c["id"], p)


def test_results_document_check_can_fail():
    """The schema check above refuses what a broken bench would write."""
    p = results.part("a - b", 1.0, (0.5, 2.0), 0.0, ">", 3)
    good = results.results_document(
        "genre",
        "quick",
        [0],
        {"a": {}, "b": {}},
        [results.claim("x", "s", "p", "o", test=[p])],
        1.0,
        "cpu",
    )
    assert_results_document(good, "quick")
    broken = [
        {k: v for k, v in good.items() if k != "wall_seconds"},
        {**good, "mode": "paper"},
        {**good, "metrics": {"a": {}}},
        {**good, "claims": []},
        {**good, "claims": [{**good["claims"][0], "holds": True, "verdict": "inconclusive"}]},
        {**good, "claims": [{**good["claims"][0], "test": []}]},
    ]
    for doc in broken:
        with pytest.raises(AssertionError):
            assert_results_document(doc, "quick")
