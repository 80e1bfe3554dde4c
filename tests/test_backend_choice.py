"""Choosing the session backend: config, flags, and a clear line when the claude-code extra is missing.

These run with or without the extra: its absence is simulated."""

import pytest

from cockpit.cli import main
from cockpit.runtime import ConfigError, RuntimeConfig, SessionManager, claude_code, load_config
from cockpit.runtime.spawn import SpawnSpec


@pytest.fixture
def no_extra(monkeypatch):
    monkeypatch.setattr(claude_code, "available", lambda: False)


async def test_backends_property_follows_the_extra(monkeypatch):
    mgr = SessionManager(None, RuntimeConfig())
    monkeypatch.setattr(claude_code, "available", lambda: True)
    assert mgr.backends[:2] == ("cockpit", "claude-code")
    monkeypatch.setattr(claude_code, "available", lambda: False)
    assert mgr.backends[:1] == ("cockpit",) and "claude-code" not in mgr.backends
    await mgr.aclose()


async def test_spawn_without_the_extra_says_how_to_install(no_extra, tmp_path):
    mgr = SessionManager(None, RuntimeConfig(api_key="k"))
    with pytest.raises(ValueError, match=r"pip install -e '\.\[claude-code\]'"):
        await mgr.spawn(SpawnSpec("t", workspace=tmp_path, backend="claude-code"))
    with pytest.raises(ValueError, match="unknown session backend 'nope'"):
        await mgr.spawn(SpawnSpec("t", workspace=tmp_path, backend="nope"))
    assert mgr.sessions == []
    await mgr.aclose()


def test_cockpit_run_without_the_extra_is_one_line_exit_2(no_extra, monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = main(["run", "t", "--backend", "claude-code", "--workspace", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("cockpit: error: the claude-code backend needs") and "pip install" in err


def test_the_app_flag_without_the_extra_is_one_line_exit_2(no_extra, capsys, tmp_path):
    code = main(["--backend", "claude-code", "--workspace", str(tmp_path), "--notes", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "pip install" in err


def test_backend_from_env_too(no_extra, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COCKPIT_BACKEND", "claude-code")
    code = main(["run", "t", "--workspace", str(tmp_path)])
    assert code == 2 and "claude-code backend needs" in capsys.readouterr().err


def test_config_backend_and_claude_setting_sources(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text('backend = "claude-code"\nclaude_setting_sources = ["project"]\n')
    c = load_config({}, env={}, config_file=f)
    assert c.backend == "claude-code" and c.claude_setting_sources == ("project",)
    c = load_config({}, env={"COCKPIT_CLAUDE_SETTING_SOURCES": "user, local"}, config_file=f)
    assert c.claude_setting_sources == ("user", "local")
    assert load_config({}, env={"COCKPIT_CLAUDE_SETTING_SOURCES": "none"}).claude_setting_sources == ()
    assert load_config({}, env={}).claude_setting_sources is None  # all, as Claude Code does
    with pytest.raises(ConfigError, match="unknown Claude Code setting source 'team'"):
        load_config({}, env={"COCKPIT_CLAUDE_SETTING_SOURCES": "team"})
    f.write_text('claude_setting_sources = "projects"\n')
    with pytest.raises(ConfigError, match="config.toml"):
        load_config({}, env={}, config_file=f)
    with pytest.raises(ConfigError, match="unknown session backend 'claude'"):
        load_config({"backend": "claude"}, env={})


def test_bad_setting_sources_flag_is_a_usage_error(capsys, tmp_path):
    code = main(["run", "t", "--claude-setting-sources", "everything", "--workspace", str(tmp_path)])
    assert code == 2 and "setting source 'everything'" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--no-server"], ["--host", "box"]])
@pytest.mark.parametrize("backend, line", [("nope", "unknown session backend 'nope'"),
                                           ("acp:nope", "unknown ACP agent 'nope'")])
def test_an_unknown_run_backend_is_one_line_exit_2(extra, backend, line, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    code = main(["run", "hi", "--backend", backend, "--workspace", str(tmp_path), *extra])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"cockpit: error: {line}")


@pytest.mark.parametrize("missing", ["socat", "bwrap"])
def test_claude_codes_sandbox_without_what_it_needs_is_said_unconfined_not_sandboxed(missing, monkeypatch):
    """Claude Code's own sandbox needs bubblewrap and socat on Linux; without one it runs every
    command unsandboxed (a warning on its stderr only), while the pane said "sandboxed"."""
    import shutil

    from cockpit.runtime import RuntimeConfig
    from cockpit.runtime.manager import sandbox_for

    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda exe, *a, **k: None if exe == missing else which(exe, *a, **k))
    box, note = sandbox_for(RuntimeConfig(), None, "claude-code")
    package = {"bwrap": "bubblewrap"}.get(missing, missing)
    assert box == "" and note.startswith("unconfined: Claude Code's own sandbox needs") and package in note, note
