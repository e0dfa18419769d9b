"""Prompt-injection detection in tool output (pure, linear-time).

`detect_injection(text) -> list[Finding]` is the verdict the result inspector uses;
`scan_injection(text) -> InjectionScan` exposes the score and every signal (for tuning and reports).
"""

from .detect import THRESHOLD, InjectionScan, detect_injection, scan_injection

__all__ = ["THRESHOLD", "InjectionScan", "detect_injection", "scan_injection"]
