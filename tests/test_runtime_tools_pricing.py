"""Workspace confinement, tool input checks, memory tools, pricing table, config precedence."""

import json
import os
from pathlib import Path

import pytest

from cockpit.events import Usage
from cockpit.runtime import load_config, load_pricing
from cockpit.runtime.config import ConfigError
from cockpit.runtime.tools import ToolRunner


class FakeEngine:
    ready = True

    def __init__(self):
        self.saved = []

    def search(self, query, top_k=5):
        from types import SimpleNamespace as NS
        return [NS(name="n1", description="d1", snippet="s1", priority=True, score=0.9, path=Path("n1.md"))]

    def save(self, name, description, body, priority=False):
        if name == "dup":
            raise FileExistsError("note 'dup' exists")
        self.saved.append((name, description, body, priority))
        return Path(f"/notes/{name}.md")


@pytest.fixture
def runner(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (ws / "sub" / "b.py").write_text("print('beta')\n")
    (tmp_path / "secret.txt").write_text("top secret")
    os.symlink(tmp_path / "secret.txt", ws / "link.txt")
    os.symlink(tmp_path, ws / "up")
    return ToolRunner(ws, FakeEngine())


@pytest.mark.parametrize("path", ["../secret.txt", "../../etc/passwd", "/etc/passwd", "link.txt", "up/secret.txt", "sub/../../secret.txt"])
async def test_escapes_are_refused(runner, path):
    out = await runner.run("read_file", {"path": path})
    assert out.is_error and "refused" in out.content and "top secret" not in out.content


async def test_read_list_search(runner):
    out = await runner.run("read_file", {"path": "a.txt", "offset": 2, "limit": 1})
    assert out.content == "beta\n" and not out.is_error
    out = await runner.run("list_files", {})
    assert set(out.content.splitlines()) == {"a.txt", "sub/b.py"}  # symlinks out are not listed
    out = await runner.run("search_files", {"query": "beta"})
    assert "a.txt:2: beta" in out.content and "sub/b.py:1:" in out.content and "secret" not in out.content
    out = await runner.run("search_files", {"query": "(", "regex": True})
    assert out.is_error


async def test_bad_inputs(runner):
    assert (await runner.run("read_file", "nope")).is_error
    assert (await runner.run("read_file", {"path": 3})).is_error
    assert (await runner.run("search_files", {})).is_error
    assert (await runner.run("rm_rf", {})).is_error


async def test_memory_tools(runner):
    out = await runner.run("memory_search", {"query": "x"})
    assert "★ n1 (score 0.900)" in out.content
    out = await runner.run("memory_save", {"name": "fact", "description": "d", "body": "b", "priority": True})
    assert not out.is_error and runner.engine.saved == [("fact", "d", "b", True)]
    out = await runner.run("memory_save", {"name": "dup", "description": "d", "body": "b"})
    assert out.is_error and "exists" in out.content
    no_engine = ToolRunner(runner.workspace.root, None)
    assert (await no_engine.run("memory_search", {"query": "x"})).is_error


def test_pricing_lookup_and_override(tmp_path, monkeypatch):
    t = load_pricing()
    assert t.source.startswith("https://") and t.date
    p = t.lookup("claude-haiku-4-5-20251001")
    assert p is not None and p.input == 1.0 and p.output == 5.0
    assert t.cost("claude-haiku-4-5", Usage(1_000_000, 1_000_000, 0, 0)) == pytest.approx(6.0)
    assert t.cost("some-local-model", Usage(10, 10)) is None
    f = tmp_path / "pricing.toml"
    f.write_text('[models.some-local-model]\ninput = 1.0\noutput = 2.0\n[models.claude-haiku-4-5]\ninput = 9\noutput = 9\n')
    monkeypatch.setenv("COCKPIT_PRICING", str(f))
    t2 = load_pricing()
    assert t2.cost("some-local-model", Usage(1_000_000, 0, 1_000_000, 0)) == pytest.approx(2.25)  # write = 1.25×
    assert t2.lookup("claude-haiku-4-5").input == 9 and t2.lookup("claude-opus-4-5") is not None


def test_config_precedence(tmp_path, monkeypatch):
    (Path(os.environ["COCKPIT_DATA_DIR"]) / "config.toml").write_text('model = "from-file"\nmax_turns = 7\ntop_k = 3\n')
    env = {"COCKPIT_MODEL": "from-env", "ANTHROPIC_API_KEY": "sk-x", "COCKPIT_TOP_K": "4"}
    cfg = load_config({"model": "from-flag", "top_k": None}, env=env)
    assert cfg.model == "from-flag" and cfg.top_k == 4 and cfg.max_turns == 7 and cfg.api_key == "sk-x"
    assert "sk-x" not in repr(cfg)
    assert load_config(env={}).model == "from-file"
    with pytest.raises(ConfigError):
        load_config(env={"COCKPIT_MAX_TURNS": "many"})


@pytest.mark.parametrize("env", [
    {"COCKPIT_MAX_TURNS": "0"}, {"COCKPIT_MAX_TOKENS": "0"}, {"COCKPIT_TOP_K": "-1"},
    {"COCKPIT_CONCURRENCY": "0"}, {"ANTHROPIC_BASE_URL": "not-a-url"}, {"ANTHROPIC_BASE_URL": "ftp://x"},
])
def test_environment_values_get_the_same_checks_as_flags(env):
    from cockpit.runtime.config import ConfigError, load_config

    with pytest.raises(ConfigError):
        load_config(env=env, config_file=Path("/nonexistent/config.toml"))


def test_config_file_values_are_checked(tmp_path):
    from cockpit.runtime.config import ConfigError, load_config

    cfg = tmp_path / "config.toml"
    cfg.write_text("top_k = -3\n")
    with pytest.raises(ConfigError, match="top_k"):
        load_config(env={}, config_file=cfg)
    cfg.write_text("top_k = 7\nbase_url = 'http://127.0.0.1:9'\n")
    config = load_config(env={}, config_file=cfg)
    assert config.top_k == 7 and config.base_url == "http://127.0.0.1:9"
