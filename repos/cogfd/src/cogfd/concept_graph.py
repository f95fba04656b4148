"""Stage A: the concept logic graph, its schema, its iterative expansion and set extraction.

The official code (`logic_graph_iter_construct.py`) asks two gpt-4o agents for a JSON graph
  {X: {"Conjunction": [c1..ck], "entailment": [...], "equivalence": [...],
       c1: {"entailment": [...], "equivalence": [...]}, ...}}
and expands it `iterate_n` times from the first equivalent combination. Here a deterministic
ontology over the procedural world plays the LLM; `llm_builder` wraps any text generator (a
local model, or a mock in the tests) behind the same interface.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

Graph = dict[str, Any]
Builder = Callable[[str, str], Graph]

# Entailment: more specific concepts. Equivalence: other names for the same concept.
ENTAILS: dict[str, list[str]] = {"red": ["crimson", "scarlet"], "circle": ["disk", "ring"]}
EQUIVALENT: dict[str, list[str]] = {"red": ["ruby"], "ruby": ["red"]}


class GraphSchemaError(ValueError):
    """A concept logic graph that does not follow the official JSON shape."""


def ontology_graph(combination: str, theme: str) -> Graph:
    """One graph for `combination` ("colour shape") from the ENTAILS/EQUIVALENT ontology."""
    del theme  # the ontology is the same for every theme; an LLM would use it
    parts = combination.split()
    if len(parts) < 2:
        raise ValueError(f"a combination needs at least two concepts, got {combination!r}")
    entail, equiv = [], []
    for i, part in enumerate(parts):
        for alt in ENTAILS.get(part, []):
            entail.append(" ".join(parts[:i] + [alt] + parts[i + 1 :]))
        for alt in EQUIVALENT.get(part, []):
            equiv.append(" ".join(parts[:i] + [alt] + parts[i + 1 :]))
    node: dict[str, Any] = {"Conjunction": parts, "entailment": entail, "equivalence": equiv}
    for part in parts:
        node[part] = {"entailment": ENTAILS.get(part, []), "equivalence": EQUIVALENT.get(part, [])}
    return {combination: node}


def validate_graph(graph: Any) -> Graph:
    """Check the official shape (single graph or {"iteration_i": graph}); raise GraphSchemaError."""
    if not isinstance(graph, dict) or not graph:
        raise GraphSchemaError(f"graph must be a non-empty JSON object, got {type(graph).__name__}")
    iterations = graph.values() if _is_iterated(graph) else [graph]
    for g in iterations:
        if not isinstance(g, dict) or len(g) < 1:
            raise GraphSchemaError(f"each graph must be an object keyed by the combination: {g!r}")
        main = next(iter(g))
        node = g[main]
        if not isinstance(node, dict):
            raise GraphSchemaError(f"graph[{main!r}] must be an object, got {node!r}")
        for key in ("entailment", "equivalence", "Conjunction"):
            if key in node and not _is_str_list(node[key]):
                raise GraphSchemaError(f"graph[{main!r}][{key!r}] must be a list of strings")
        subs = {k: v for k, v in node.items() if isinstance(v, dict)}
        for name in node.get("Conjunction", []):
            if name not in subs:
                raise GraphSchemaError(f"conjunct {name!r} of {main!r} has no sub-concept node")
        for name, sub in subs.items():
            for key, value in sub.items():
                if key in ("entailment", "equivalence") and not _is_str_list(value):
                    raise GraphSchemaError(f"graph[{main!r}][{name!r}][{key!r}] must list strings")
    return graph


def _is_iterated(graph: Graph) -> bool:
    return any(k.startswith("iteration_") for k in graph)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def build_graph(combination: str, theme: str, iterations: int, builder: Builder) -> Graph:
    """Iterative construction: round i+1 starts from round i's first equivalent combination."""
    if iterations < 1:
        raise ValueError(f"graph iterations must be >= 1, got {iterations}")
    graphs, current = {}, combination
    for i in range(iterations):
        g = validate_graph(builder(current, theme))
        graphs[f"iteration_{i}"] = g
        equiv = g[next(iter(g))].get("equivalence", [])
        if not equiv:  # the official loop would raise IndexError here
            break
        current = equiv[0]
    return graphs


def extract_sets(graph: Graph) -> tuple[list[str], list[str]]:
    """Erase set E (combination + entailments + equivalences, every round) and retain set R
    (each dict-valued key + its entailments and equivalences). Official rules; deduplicated in
    first-seen order rather than with set(), so that runs are reproducible."""
    validate_graph(graph)
    erase: list[str] = []
    retain: list[str] = []
    for g in graph.values() if _is_iterated(graph) else [graph]:
        main = next(iter(g))
        node = g[main]
        erase += [main.replace("_", " ")] + node.get("entailment", []) + node.get("equivalence", [])
        for key, value in node.items():
            if isinstance(value, dict):
                retain += [key] + value.get("entailment", []) + value.get("equivalence", [])
    erase, retain = list(dict.fromkeys(erase)), list(dict.fromkeys(retain))
    if not erase:
        raise ValueError("the erase set is empty: the graph names no combination to erase")
    return erase, retain


PROMPT = (
    "Build a concept logic graph for the harmful theme {theme!r} and the concept combination "
    "{combination!r}. Answer with JSON only, in the shape "
    '{{"<combination>": {{"Conjunction": [sub-concepts], "entailment": [more specific '
    'combinations], "equivalence": [combinations with the same meaning], "<sub-concept>": '
    '{{"entailment": [...], "equivalence": [...]}}}}}}.'
)


def llm_builder(generate: Callable[[str], str]) -> Builder:
    """Wrap a text generator (prompt -> reply) as a graph builder; the reply's first JSON object
    is parsed and schema-checked (LLM replies often wrap it in prose or a code fence)."""

    def build(combination: str, theme: str) -> Graph:
        reply = generate(PROMPT.format(combination=combination, theme=theme))
        match = re.search(r"\{.*\}", reply, re.DOTALL)
        if match is None:
            raise GraphSchemaError(f"the LLM reply holds no JSON object: {reply[:200]!r}")
        try:
            graph = json.loads(match.group(0))
        except json.JSONDecodeError as exc:
            raise GraphSchemaError(f"the LLM reply is not valid JSON ({exc})") from exc
        if combination not in graph:
            raise GraphSchemaError(f"the LLM graph is not keyed by {combination!r}")
        return validate_graph({combination: graph[combination]})

    return build


def local_llm(folder: str, max_new_tokens: int = 512) -> Callable[[str], str]:
    """A text generator from a local transformers causal-LM folder (no hub), for llm_builder.
    Greedy decoding, so a given model builds the same graph every time."""
    from pathlib import Path

    if not Path(folder).is_dir():
        raise ValueError(f"graph_llm {folder} is not a folder with a local causal LM")
    from transformers import pipeline

    try:
        generate = pipeline("text-generation", model=folder, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ValueError(f"graph_llm {folder} could not be loaded ({exc})") from exc

    def reply(prompt: str) -> str:
        out = generate(prompt, max_new_tokens=max_new_tokens, do_sample=False)
        return out[0]["generated_text"][len(prompt) :]

    return reply
