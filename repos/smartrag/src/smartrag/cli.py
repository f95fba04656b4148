"""Command line: `smartrag {train,eval,bench,data} [--preset quick|paper|full] [--FIELD VALUE ...]`.

Thin on purpose: flags become a Config (every field is a flag), then the library is called.
Misuse (unknown command, bad preset, bad value) prints one line to stderr and exits 2.
"""

from __future__ import annotations

import json
import sys

import tyro

from .config import PRESETS, Config, validate

COMMANDS = {
    "train": "train the method with one seed and write metrics to --out",
    "eval": "print the metrics of a finished run in --out",
    "bench": "run every method over --seeds and write results/<preset>.json",
    "data": "validate --questions/--corpus JSONL files and score raw-question retrieval on them",
}
USAGE = (
    "usage: smartrag {train,eval,bench,data} [--preset quick|paper|full] [--FIELD VALUE ...]\n\n"
    + "\n".join(f"  {name:6s} {text}" for name, text in COMMANDS.items())
    + "\n\n`smartrag COMMAND --help` lists every flag with its meaning and preset default."
)


def parse(command: str, argv: list[str]) -> Config:
    """Split off --preset, then let tyro turn the remaining flags into a Config."""
    preset, rest, i = "quick", [], 0
    while i < len(argv):
        if argv[i] == "--preset":
            if i + 1 >= len(argv):
                raise ValueError("--preset needs a value: quick, paper or full")
            preset, i = argv[i + 1], i + 2
            continue
        if argv[i].startswith("--preset="):
            preset = argv[i].split("=", 1)[1]
        else:
            rest.append(argv[i])
        i += 1
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {preset!r}")
    cfg = tyro.cli(
        Config,
        default=PRESETS[preset],
        args=rest,
        prog=f"smartrag {command}",
        description=f"{COMMANDS[command]}. --preset quick|paper|full picks the defaults (now: {preset}).",
    )
    return validate(cfg)


def score_data(cfg: Config) -> dict[str, float]:
    """Load both files up front (one-line errors), then the answer hit rate of the raw questions'
    top-k documents: the always-retrieve, no-rewrite floor on the user's data."""
    from .data import load_corpus_jsonl, load_questions_jsonl
    from .retrieval import make_retriever, observe
    from .rollout import contains_answer

    if not cfg.questions or not cfg.corpus:
        raise ValueError("data needs --questions FILE and --corpus FILE (JSONL)")
    questions, docs = load_questions_jsonl(cfg.questions), load_corpus_jsonl(cfg.corpus)
    retriever = make_retriever(cfg.retriever, docs, cfg.device, cfg.encoder)
    texts, _ = observe(retriever, [q.text for q in questions], cfg.top_k)
    hits = [contains_answer(t, q.answers) for t, q in zip(texts, questions, strict=True)]
    return {
        "questions": len(questions),
        "documents": len(docs),
        f"raw_query_hit_rate@{cfg.top_k}": 100.0 * sum(hits) / len(hits),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(
            f"error: unknown command {command!r}; expected one of {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    try:
        cfg = parse(command, rest)
        if command == "train":
            from .train import train_and_evaluate

            result = train_and_evaluate(cfg, cfg.out)
        elif command == "eval":
            from .train import evaluate

            result = evaluate(cfg.out)
        elif command == "data":
            result = score_data(cfg)
        else:
            from .bench import run_bench

            result = {c["id"]: c["holds"] for c in run_bench(cfg)["claims"]}
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
