"""Paired intervals as text, for the claims the bench writes."""

from __future__ import annotations

from typing import Any


def fmt_interval(d: dict[str, Any]) -> str:
    """'+3.2 [95% CI -1.0, +7.4]' (or without the interval when it is unknown)."""
    if d["lo"] is None:
        return f"{d['mean']:+.2f} (one seed, no interval)"
    return f"{d['mean']:+.2f} [95% CI {d['lo']:+.2f}, {d['hi']:+.2f}]"
