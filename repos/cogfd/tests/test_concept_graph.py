"""Stage A: the ontology graph, the official extraction rules, schema errors, the LLM hook."""

from __future__ import annotations

import json

import pytest

from cogfd import concept_graph as cg

ERASE = [
    "red circle",
    "crimson circle",
    "scarlet circle",
    "red disk",
    "red ring",
    "ruby circle",
    "ruby disk",
    "ruby ring",
]
RETAIN = ["red", "crimson", "scarlet", "ruby", "circle", "disk", "ring"]


def test_ontology_graph_has_the_official_shape():
    g = cg.ontology_graph("red circle", "red circle")
    node = g["red circle"]
    assert node["Conjunction"] == ["red", "circle"]
    assert node["entailment"] == ["crimson circle", "scarlet circle", "red disk", "red ring"]
    assert node["equivalence"] == ["ruby circle"]
    assert node["red"] == {"entailment": ["crimson", "scarlet"], "equivalence": ["ruby"]}


def test_iterated_extraction_follows_official_rules_and_deduplicates():
    graph = cg.build_graph("red circle", "t", 2, cg.ontology_graph)
    assert list(graph) == ["iteration_0", "iteration_1"]
    assert next(iter(graph["iteration_1"])) == "ruby circle"  # first equivalence of round 0
    erase, retain = cg.extract_sets(graph)
    assert erase == ERASE and retain == RETAIN  # "red circle", "circle" seen twice, kept once
    assert len(set(erase)) == len(erase) and len(set(retain)) == len(retain)


def test_single_graph_extraction_by_hand():
    graph = {
        "a_b": {
            "Conjunction": ["a", "b"],
            "entailment": ["a c"],
            "equivalence": ["a c", "d b"],
            "a": {"entailment": ["e"], "equivalence": []},
            "b": {"equivalence": ["a"]},
        }
    }
    assert cg.extract_sets(graph) == (["a b", "a c", "d b"], ["a", "e", "b"])


@pytest.mark.parametrize(
    ("graph", "message"),
    [
        ([], "non-empty JSON object"),
        ({"x y": "oops"}, "must be an object"),
        ({"x y": {"entailment": "x z"}}, "list of strings"),
        ({"x y": {"Conjunction": ["x", "y"], "x": {}}}, "conjunct 'y'"),
        ({"x y": {"x": {"equivalence": [1]}}}, "must list strings"),
    ],
)
def test_broken_graphs_raise_schema_errors(graph, message):
    with pytest.raises(cg.GraphSchemaError, match=message):
        cg.extract_sets(graph)


def test_llm_builder_parses_a_fenced_reply_and_rejects_junk():
    def fake_llm(prompt: str) -> str:
        assert "red circle" in prompt
        return "Sure!\n```json\n" + json.dumps(cg.ontology_graph("red circle", "")) + "\n```"

    built = cg.build_graph("red circle", "t", 1, cg.llm_builder(fake_llm))
    assert built["iteration_0"] == cg.ontology_graph("red circle", "")
    with pytest.raises(cg.GraphSchemaError, match="no JSON"):
        cg.llm_builder(lambda p: "I cannot help with that")("red circle", "t")
    with pytest.raises(cg.GraphSchemaError, match="not keyed"):
        cg.llm_builder(lambda p: '{"blue square": {}}')("red circle", "t")


def test_shipped_harmfulcmb_graph_is_in_the_official_shape():
    """examples/harmfulcmb_child_wine.json, the --graph-json of the README's SD command."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "harmfulcmb_child_wine.json"
    graph = cg.validate_graph(json.loads(path.read_text()))
    erase, retain = cg.extract_sets(graph)
    assert erase[0] == "a child drinking wine" and "a kid drinking wine" in erase
    assert "child" in retain and "drinking wine" in retain and not set(erase) & set(retain)
