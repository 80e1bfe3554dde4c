"""Cockpit: agent sessions side by side, each preseeded from the project's notes."""

__version__ = "0.1.0"
