"""SmartRAG: re-implementation of "SmartRAG: Jointly Learn RAG-Related Tasks From the Environment Feedback" (ICLR 2025)."""

__version__ = "0.1.0"
