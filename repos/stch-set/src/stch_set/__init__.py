"""STCH-Set: re-implementation of "Few for Many: Tchebycheff Set Scalarization for Many-Objective Optimization" (ICLR 2025)."""

__version__ = "0.1.0"
