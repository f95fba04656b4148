"""The synthetic world (deterministic in its seed) and loaders for real-format QA files.

The world stands in for PopQA: entities with Zipf popularity, three relations, and aliases.
- The *pretraining* text states the facts of the popular (head) entities only, so the LM's
  parametric knowledge covers the head and misses the tail (PopQA's long-tail effect).
- The *retrieval corpus* holds one document per fact under the entity's canonical name, plus
  distractor documents that share surname tokens.
- Questions name the entity by an alias. The alias -> name table is in the pretraining text but in
  no document, so a rewritten query (canonical name + relation word) beats the raw question.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

SPECIAL = ["<pad>", "<unk>", "<eos>", "<sep>", "[SEARCH]", "[ANSWER]", "Q", "OBS", "|", "is"]
# (relation, question template, document template, relation word of the rewritten query)
RELATIONS = (
    ("born", "where was {a} born ?", "{n} was born in {v}", "born"),
    ("job", "what is the job of {a} ?", "{n} works as {v}", "works"),
    ("color", "which color does {a} like ?", "{n} likes the color {v}", "color"),
)


@dataclasses.dataclass(frozen=True)
class Question:
    """One question with its reference answers; `entity`/`relation` are -1 for loaded files."""

    text: str
    answers: tuple[str, ...]
    entity: int = -1
    relation: int = -1
    head: bool = False
    rewrite: str = ""
    """The canonical query (name + relation word) that finds the fact's document."""


@dataclasses.dataclass(frozen=True)
class World:
    names: tuple[str, ...]
    aliases: tuple[str, ...]
    popularity: np.ndarray
    head: np.ndarray
    facts: np.ndarray
    """facts[e, r] is the value word of relation r for entity e."""
    documents: tuple[str, ...]
    questions: tuple[Question, ...]
    train_idx: np.ndarray
    val_idx: np.ndarray
    """Held out from training, used only to pick tau (equal tuning of every method)."""
    test_idx: np.ndarray
    source: str = "synthetic"
    """"synthetic" (make_world) or the question file a world was read from (world_from_files):
    such a world has no pretraining text; the LM's own closed-book answers label what it knows."""

    @property
    def train(self) -> list[Question]:
        return [self.questions[i] for i in self.train_idx]

    @property
    def val(self) -> list[Question]:
        return [self.questions[i] for i in self.val_idx]

    @property
    def test(self) -> list[Question]:
        return [self.questions[i] for i in self.test_idx]


def _words(rng: np.random.Generator, n: int, syllables: int, taken: set[str]) -> list[str]:
    """`n` fresh pronounceable words of `syllables` syllables, none in `taken` (updated)."""
    cons, vows = list("bdfgklmnprstvz"), list("aeiou")
    out: list[str] = []
    while len(out) < n:
        w = "".join(rng.choice(cons) + rng.choice(vows) for _ in range(syllables))
        if w not in taken:
            taken.add(w)
            out.append(w)
    return out


def make_world(
    n_entities: int, n_values: int, n_distractors: int, head_frac: float, zipf_s: float, seed: int
) -> World:
    """Generate the world. Entity i has popularity (i+1)^-s; the top `head_frac` are the head."""
    if n_entities < 4 or n_values < 2:
        raise ValueError(f"need n_entities >= 4 and n_values >= 2, got {n_entities}, {n_values}")
    rng = np.random.default_rng(seed)
    taken = set(SPECIAL) | {w for r in RELATIONS for t in r[1:] for w in t.split()}
    n_first = n_sur = int(np.ceil(np.sqrt(2 * (n_entities + n_distractors)))) + 2
    first, sur = _words(rng, n_first, 2, taken), _words(rng, n_sur, 3, taken)
    combos = rng.permutation(n_first * n_sur)[: n_entities + n_distractors]
    full = [f"{first[c // n_sur]} {sur[c % n_sur]}" for c in combos]
    names, fake = full[:n_entities], full[n_entities:]
    aliases = _words(rng, n_entities, 2, taken)
    values = [_words(rng, n_values, 2, taken) for _ in RELATIONS]
    facts = np.array([[values[r][rng.integers(n_values)] for r in range(len(RELATIONS))]
                      for _ in range(n_entities)])  # fmt: skip
    popularity = (np.arange(n_entities) + 1.0) ** -zipf_s
    head = np.arange(n_entities) < round(head_frac * n_entities)
    docs = [RELATIONS[r][2].format(n=names[e], v=facts[e, r])
            for e in range(n_entities) for r in range(len(RELATIONS))]  # fmt: skip
    for i, n in enumerate(fake):
        r = i % len(RELATIONS)
        docs.append(RELATIONS[r][2].format(n=n, v=values[r][rng.integers(n_values)]))
    questions = [
        Question(
            text=RELATIONS[r][1].format(a=aliases[e]),
            answers=(str(facts[e, r]),),
            entity=e,
            relation=r,
            head=bool(head[e]),
            rewrite=f"{names[e]} {RELATIONS[r][3]}",
        )
        for e in range(n_entities)
        for r in range(len(RELATIONS))
    ]
    order = rng.permutation(len(questions))
    n_test, n_val = len(questions) // 4, len(questions) // 10
    return World(
        names=tuple(names),
        aliases=tuple(aliases),
        popularity=popularity,
        head=head,
        facts=facts,
        documents=tuple(docs),
        questions=tuple(questions),
        train_idx=np.sort(order[n_test + n_val :]),
        val_idx=np.sort(order[n_test : n_test + n_val]),
        test_idx=np.sort(order[:n_test]),
    )


def pretraining_text(world: World, max_reps: int, fmt: str = "qa") -> list[str]:
    """The LM's pretraining corpus: the alias table for every entity and the head's facts.

    A head fact is repeated by popularity (Zipf), between 2 and `max_reps` times; tail facts are
    never stated, so only retrieval can answer them. `fmt="qa"` states it as a closed-book line
    in the policy's own action format (`Q question <sep> [ANSWER] y`, every head question, test
    split included); `fmt="plain"` as a document sentence under the alias ("alias was born in
    v"), with no action token and no question text.
    """
    if fmt not in ("qa", "plain"):
        raise ValueError(f"pretraining format must be 'qa' or 'plain', got {fmt!r}")
    lines = [f"{a} is {n}" for a, n in zip(world.aliases, world.names, strict=True)] * 2
    last_head = world.popularity[world.head].min()
    for q in world.questions:
        if q.head:
            reps = int(min(max_reps, 1 + round(world.popularity[q.entity] / last_head)))
            if fmt == "qa":
                line = f"Q {q.text} <sep> [ANSWER] {q.answers[0]} <eos>"
            else:
                rel = RELATIONS[q.relation][2]
                line = rel.format(n=world.aliases[q.entity], v=q.answers[0]) + " <eos>"
            lines += [line] * reps
    return lines


def cloze_prompt(world: World, q: Question) -> str:
    """The plain pretraining sentence of q's fact without its value ("alias was born in")."""
    return RELATIONS[q.relation][2].format(n=world.aliases[q.entity], v="").strip()


def vocabulary(world: World) -> list[str]:
    """Every word of the world: special tokens first, then sorted words."""
    words = set()
    for text in (*world.documents, *world.names, *world.aliases):
        words.update(text.split())
    for q in world.questions:
        words.update(q.text.split())
        words.update(w for a in q.answers for w in a.split())
    return SPECIAL + sorted(words - set(SPECIAL))


def _answers_of(row: dict, where: str) -> tuple[str, ...]:
    for key in ("answers", "possible_answers", "answer"):
        if key in row:
            value = row[key]
            if isinstance(value, str) and key == "possible_answers":
                value = json.loads(value)  # PopQA stores the list as a JSON string
            value = [value] if isinstance(value, str) else list(value)
            if value:
                return tuple(str(v) for v in value)
    raise ValueError(
        f"{where}: missing answers; expected one of 'answers', 'possible_answers' (PopQA) "
        f"or 'answer' (HotpotQA) with at least one string"
    )


def load_questions_jsonl(path: str | Path) -> list[Question]:
    """Read PopQA- or HotpotQA-style JSONL: `question` plus `possible_answers`/`answer(s)`.
    PopQA's `subj` and `prop` give the rewrite (the query "subject property"; the question
    itself without them) and `s_pop` the popularity (`popularity_of`)."""
    return [q for q, _ in _read_questions(path)]


def _read_questions(path: str | Path) -> list[tuple[Question, float]]:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"question file {path} does not exist")
    out = []
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{i}"
        row = _json_row(line, where)
        if not isinstance(row.get("question"), str) or not row["question"].strip():
            raise ValueError(f"{where}: missing field 'question' (a non-empty string)")
        subj, prop = row.get("subj"), row.get("prop")
        rewrite = f"{subj} {prop}" if isinstance(subj, str) and isinstance(prop, str) else ""
        pop = row.get("s_pop", float("nan"))
        if not isinstance(pop, (int, float)) or isinstance(pop, bool):
            raise ValueError(f"{where}: 's_pop' must be a number, got {pop!r}")  # noqa: TRY004 (user input)
        q = Question(row["question"], _answers_of(row, where), rewrite=rewrite or row["question"])
        out.append((q, float(pop)))
    if not out:
        raise ValueError(f"question file {path} holds no questions")
    return out


def world_from_files(
    questions_path: str | Path, corpus_path: str | Path, head_frac: float, seed: int
) -> World:
    """A world from a PopQA-format question file and a JSONL corpus: the questions split 65 /
    10 / 25% train / validation / test by `seed` as in make_world; head = the `head_frac` most
    popular questions by `s_pop` (no head question when the file has no `s_pop`)."""
    rows = _read_questions(questions_path)
    docs = load_corpus_jsonl(corpus_path)
    pop = np.array([p for _, p in rows])
    known = ~np.isnan(pop)
    head = np.zeros(len(rows), bool)
    if known.any():
        head = known & (pop >= np.quantile(pop[known], 1 - head_frac))
    questions = tuple(
        dataclasses.replace(q, head=bool(h)) for (q, _), h in zip(rows, head, strict=True)
    )
    order = np.random.default_rng(seed).permutation(len(questions))
    n_test, n_val = len(questions) // 4, len(questions) // 10
    if min(n_test, n_val, len(questions) - n_test - n_val) < 1:
        raise ValueError(
            f"question file {questions_path}: need at least 10 questions, got {len(rows)}"
        )
    return World(
        names=(),
        aliases=(),
        popularity=np.nan_to_num(pop),
        head=head,
        facts=np.empty((0, len(RELATIONS)), dtype=str),
        documents=tuple(docs),
        questions=questions,
        train_idx=np.sort(order[n_test + n_val :]),
        val_idx=np.sort(order[n_test : n_test + n_val]),
        test_idx=np.sort(order[:n_test]),
        source=str(questions_path),
    )


def _json_row(line: str, where: str) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{where}: not valid JSON ({exc.msg}); expected one object per line"
        ) from None
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")  # noqa: TRY004 (user input)
    return row


def load_corpus_jsonl(path: str | Path) -> list[str]:
    """Read a retrieval corpus as JSONL with `text` (and optional `title`) per line."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"corpus file {path} does not exist")
    docs = []
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            row = _json_row(line, f"{path}:{i}")
            if not isinstance(row.get("text"), str):
                raise ValueError(f"{path}:{i}: missing field 'text' (a string)")
            docs.append(f"{row['title']}: {row['text']}" if row.get("title") else row["text"])
    if not docs:
        raise ValueError(f"corpus file {path} holds no documents")
    return docs
