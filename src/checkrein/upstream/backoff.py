"""How long a crashed or failed upstream waits before the next restart attempt."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before restart attempt ``n`` (1-based): ``initial_s * factor**(n-1)``, capped at ``max_s``."""

    initial_s: float = 0.1
    factor: float = 2.0
    max_s: float = 5.0

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        return float(min(self.max_s, self.initial_s * self.factor ** (failures - 1)))
