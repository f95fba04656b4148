"""FLoRA: re-implementation of "FLoRA: Maintaining Structural Integrity in Parameter Spaces for Parameter Efficient Fine-tuning" (ICLR 2025)."""

__version__ = "0.1.0"
