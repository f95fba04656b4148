"""REGENT: re-implementation of "REGENT: A Retrieval-Augmented Generalist Agent That Can Act In-Context in New Environments" (ICLR 2025)."""

__version__ = "0.1.0"
