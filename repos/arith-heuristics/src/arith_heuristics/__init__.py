"""Bag of Heuristics: re-implementation of "Arithmetic Without Algorithms: Language Models Solve Math with a Bag of Heuristics" (ICLR 2025)."""

__version__ = "0.1.0"
