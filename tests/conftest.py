"""Shared test setup: offline model loading, and per-user state kept out of the real home."""

import os

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory, monkeypatch):
    """Every test gets its own COCKPIT_DATA_DIR (index cache, sessions, config, UI state), and
    clients run in-process unless a test asks for the server (``COCKPIT_NO_SERVER`` unset)."""
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path_factory.mktemp("cockpit-data")))
    monkeypatch.setenv("COCKPIT_NO_SERVER", "1")
