"""Argument analyzers: paths, urls, shell, sql, secrets. Pure functions over strings."""

from .api import Analyzer, Resolver, ScanContext, SecretSpan

__all__ = ["Analyzer", "Resolver", "ScanContext", "SecretSpan"]
