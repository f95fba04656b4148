"""LEQ: re-implementation of "Model-based Offline Reinforcement Learning with Lower Expectile Q-Learning" (ICLR 2025)."""

__version__ = "0.1.0"
