"""The synthetic world's properties and the real-format loaders (files written by the tests)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from smartrag.data import load_corpus_jsonl, load_questions_jsonl, make_world, pretraining_text


@pytest.fixture(scope="module")
def world():
    return make_world(40, 5, 10, 0.3, 1.0, seed=3)


def test_world_is_deterministic_in_seed(world):
    again = make_world(40, 5, 10, 0.3, 1.0, seed=3)
    assert again.documents == world.documents and again.questions == world.questions
    assert make_world(40, 5, 10, 0.3, 1.0, seed=4).documents != world.documents


def test_pretraining_states_head_facts_and_aliases_only(world):
    text = "\n".join(pretraining_text(world, 8))
    for q in world.questions:
        assert (q.text in text) == q.head
    assert all(a in text for a in world.aliases)
    # aliases never appear in the retrieval corpus
    assert not any(a in d.split() for a in world.aliases for d in world.documents)


def test_head_facts_repeat_by_popularity(world):
    lines = pretraining_text(world, 8)
    first, last_head = world.questions[0], [q for q in world.questions if q.head][-1]
    count = lambda q: sum(line.startswith(f"Q {q.text} ") for line in lines)
    assert count(first) > count(last_head) >= 2


def test_split_is_disjoint_and_covers_all(world):
    train, val, test = set(world.train_idx), set(world.val_idx), set(world.test_idx)
    assert not train & test and not train & val and not val & test and val
    assert len(train) + len(val) + len(test) == len(world.questions)
    assert np.all(world.popularity[:-1] >= world.popularity[1:])


def test_popqa_and_hotpotqa_loaders(tmp_path):
    pop = tmp_path / "popqa.jsonl"
    pop.write_text(
        json.dumps({"question": "What is X's job?", "possible_answers": '["poet", "writer"]'})
        + "\n"
    )
    hot = tmp_path / "hotpot.jsonl"
    hot.write_text(json.dumps({"question": "Who?", "answer": "Ada"}) + "\n\n")
    assert load_questions_jsonl(pop)[0].answers == ("poet", "writer")
    assert load_questions_jsonl(hot)[0].answers == ("Ada",)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"title": "Ada", "text": "Ada was a poet."}) + "\n")
    assert load_corpus_jsonl(corpus) == ["Ada: Ada was a poet."]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"answer": "x"}, "missing field 'question'"),
        ({"question": "q?"}, "missing answers"),
        ({"question": "q?", "answers": []}, "missing answers"),
    ],
)
def test_question_file_with_missing_fields_is_a_clear_error(tmp_path, row, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=message):
        load_questions_jsonl(path)


def test_missing_or_empty_question_file(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_questions_jsonl(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ValueError, match="holds no questions"):
        load_questions_jsonl(tmp_path / "empty.jsonl")


def test_plain_pretraining_has_no_action_format_and_no_question(world):
    lines = pretraining_text(world, 8, "plain")
    text = "\n".join(lines)
    assert "[ANSWER]" not in text and "[SEARCH]" not in text and "<sep>" not in text
    assert not any(q.text in text for q in world.questions)
    head_q = next(q for q in world.questions if q.head)
    assert any(world.aliases[head_q.entity] in ln and head_q.answers[0] in ln for ln in lines)
    with pytest.raises(ValueError, match="'qa' or 'plain', got 'md'"):
        pretraining_text(world, 8, "md")


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json\n", "bad.jsonl:1: not valid JSON"), ("[1, 2]\n", "expected a JSON object")],
)
def test_malformed_json_lines_name_the_file(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    for loader in (load_questions_jsonl, load_corpus_jsonl):
        with pytest.raises(ValueError, match=message):
            loader(path)


def test_corpus_file_errors(tmp_path):
    with pytest.raises(ValueError, match="corpus file .* does not exist"):
        load_corpus_jsonl(tmp_path / "nope.jsonl")
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="holds no documents"):
        load_corpus_jsonl(tmp_path / "e.jsonl")
    (tmp_path / "t.jsonl").write_text(json.dumps({"title": "x"}) + "\n")
    with pytest.raises(ValueError, match="missing field 'text'"):
        load_corpus_jsonl(tmp_path / "t.jsonl")
