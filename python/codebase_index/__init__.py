"""codebase-index: local, offline-first code search for AI coding agents."""

__version__ = "0.1.0"
