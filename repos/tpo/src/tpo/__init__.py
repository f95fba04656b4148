"""TPO: re-implementation of "TPO: Aligning Large Language Models with Multi-branch & Multi-step Preference Trees" (ICLR 2025)."""

__version__ = "0.1.0"
