"""Deterministic offline weather for the `sandbox` server: the same city always gets the same
answer, so scenarios can assert on it. No network, no clock."""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["KNOWN_CITIES", "UnknownCity", "current_weather", "forecast", "normalize_city"]

# city -> (typical temperature in C, humidity %, typical conditions)
KNOWN_CITIES: dict[str, tuple[int, int, str]] = {
    "shanghai": (17, 72, "partly cloudy"),
    "beijing": (9, 38, "clear"),
    "london": (11, 80, "light rain"),
    "paris": (12, 74, "overcast"),
    "new york": (10, 61, "windy"),
    "tokyo": (16, 63, "clear"),
    "san francisco": (15, 77, "fog"),
    "sydney": (22, 65, "sunny"),
    "berlin": (8, 76, "overcast"),
    "singapore": (29, 84, "thunderstorms"),
}
_CONDITIONS = ("sunny", "clear", "partly cloudy", "overcast", "light rain", "showers", "windy", "fog")
_ALIASES = {"nyc": "new york", "sf": "san francisco", "shanghai shi": "shanghai"}


class UnknownCity(ValueError):
    """A city outside the offline table; the message lists the known ones."""


def normalize_city(city: str) -> str:
    """``"Shanghai, China"`` -> ``"shanghai"``; raises `UnknownCity`."""
    key = " ".join(city.split(",")[0].split()).casefold()
    key = _ALIASES.get(key, key)
    if key not in KNOWN_CITIES:
        known = ", ".join(c.title() for c in KNOWN_CITIES)
        raise UnknownCity(f"no weather data for {city.strip()[:60]!r}; known cities: {known}")
    return key


def _jitter(key: str, day: int, salt: str, span: int) -> int:
    h = hashlib.sha256(f"{key}|{day}|{salt}".encode()).digest()
    return h[0] % (2 * span + 1) - span


def current_weather(city: str) -> dict[str, Any]:
    """Current conditions for ``city``. Pure."""
    key = normalize_city(city)
    temp, humidity, conditions = KNOWN_CITIES[key]
    return {
        "city": key.title(),
        "temperature_c": temp,
        "humidity_pct": humidity,
        "conditions": conditions,
        "wind_kph": 8 + abs(_jitter(key, 0, "wind", 10)),
        "source": "checkrein offline weather (deterministic sample data)",
    }


def forecast(city: str, days: int) -> dict[str, Any]:
    """A ``days``-day forecast (1..7) for ``city``. Pure."""
    key = normalize_city(city)
    temp, _, conditions = KNOWN_CITIES[key]
    out = []
    for day in range(1, days + 1):
        mid = temp + _jitter(key, day, "t", 3)
        cond = conditions if _jitter(key, day, "c", 1) == 0 else _CONDITIONS[(day + len(key)) % len(_CONDITIONS)]
        out.append({
            "day": day,
            "high_c": mid + 4,
            "low_c": mid - 4,
            "conditions": cond,
            "precipitation_pct": 10 * (abs(_jitter(key, day, "p", 4)) + (3 if "rain" in cond or "shower" in cond else 0)),
        })
    return {"city": key.title(), "days": out, "source": "checkrein offline weather (deterministic sample data)"}
