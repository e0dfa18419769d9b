"""Package attributes loaded on first use (PEP 562 ``__getattr__``), so importing a package does
not import every module behind its public names."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: dict[str, Any], public: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name in ``table`` is imported from the
    module it maps to on first access and cached in ``namespace``; other names raise
    ``AttributeError``; ``dir()`` lists ``public``."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__
