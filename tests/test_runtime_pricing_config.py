"""Pricing table and config precedence."""

import os
from pathlib import Path

import pytest

from cockpit.events import Usage
from cockpit.runtime import load_config, load_pricing
from cockpit.runtime.config import ConfigError


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


def test_permission_settings_from_the_config_file(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[permissions]\nallow = ["Bash(pytest *)", "Edit"]\ndeny = ["Bash(rm *)"]\ndefaultMode = "acceptEdits"\n')
    config = load_config(env={}, config_file=cfg)
    assert config.allow == ("Bash(pytest *)", "Edit") and config.deny == ("Bash(rm *)",)
    assert config.permission_mode == "acceptEdits"
    cfg.write_text('[permissions]\nallow = ["Frobnicate(x)"]\n')
    with pytest.raises(ConfigError, match="unknown tool"):
        load_config(env={}, config_file=cfg)
    with pytest.raises(ConfigError, match="permission mode"):
        load_config({"permission_mode": "yolo"}, env={}, config_file=tmp_path / "none.toml")
    with pytest.raises(ConfigError, match="tools"):
        load_config(env={"COCKPIT_TOOLS": "fancy"}, config_file=tmp_path / "none.toml")


@pytest.mark.parametrize("text, message", [
    ('modle = "x"\n', "unknown key 'modle' (did you mean 'model'?)"),
    ('[permissions]\nalow = ["Edit"]\n', "unknown key 'alow' in [permissions] (did you mean 'allow'?)"),
    ('[runtime]\nmax_turn = 3\n', "unknown key 'max_turn' in [runtime] (did you mean 'max_turns'?)"),
])
def test_a_typo_in_the_config_file_is_an_error_naming_it(tmp_path, text, message):
    cfg = tmp_path / "config.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(env={}, config_file=cfg)
    assert message in str(err.value)


def test_known_tables_pass(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('model = "m"\n[keymap]\nspawn = "ctrl+n"\n[preseed]\nselector = "embedded"\n'
                   '[permissions]\nallow = ["Edit"]\n[runtime]\nmax_turns = 3\n')
    config = load_config(env={}, config_file=cfg)
    assert config.model == "m" and config.max_turns == 3 and config.allow == ("Edit",)


@pytest.mark.parametrize("text, message", [
    ('model = ""\n', "model must be a model id"),
    ("bash_timeout = nan\n", "bash_timeout must be a number of seconds"),
    ("timeout = inf\n", "timeout must be a number of seconds"),
    ("top_k = 1e99\n", "'top_k' must be a whole number"),
    ("max_turns = 2.5\n", "'max_turns' must be a whole number"),
    # TOML values of another type are mistakes, never coerced
    ('model = ["a", "b"]\n', "'model' must be a string, got \\['a', 'b'\\]"),
    ("max_tokens = true\n", "'max_tokens' must be a whole number, got True"),
    ("base_url = 8080\n", "'base_url' must be a string"),
    ('bash_timeout = "30"\n', "'bash_timeout' must be a number"),
    ("pricing = 3\n", "'pricing' must be a path string"),
    ("runtime = 5\n", "runtime must be a table"),
    ("keymap = 5\n", "keymap must be a table"),
])
def test_config_values_no_flag_would_accept_are_errors(tmp_path, text, message):
    cfg = tmp_path / "config.toml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(env={}, config_file=cfg)


def test_a_config_file_that_is_a_folder_is_an_error_not_ignored(tmp_path):
    (tmp_path / "config.toml").mkdir()
    with pytest.raises(ConfigError, match="is a folder"):
        load_config(env={}, config_file=tmp_path / "config.toml")


@pytest.mark.parametrize("keymap, message", [
    ({"spawn": ""}, "gives no key"),
    ({"spwan": "ctrl+n"}, "has no binding 'spwan'"),
    ({"spawn": "q"}, "gives 'q' to .*spawn.* on the main screen"),
    ({"diff.merge": "x"}, "gives 'x' to diff.discard and diff.merge on the diff screen"),
    ({"spawn": "?"}, "gives 'question_mark' to keys and spawn"),  # ? is the keys panel's (as Textual names it)
    ({"spawn": "f1"}, "gives 'f1' to keys and spawn"),
    ({"spawn": "ctrl+p"}, "gives 'ctrl\\+p' to spawn, but it opens the command palette"),
])
def test_a_keymap_that_would_lose_or_shadow_a_binding_is_refused(keymap, message):
    from cockpit.tui.keymap import check_keymap

    with pytest.raises(ValueError, match=message):
        check_keymap(keymap)
    check_keymap({"spawn": "ctrl+n", "quit": "ctrl+q", "detach": "ctrl+q"})  # fine: q's pair keeps sharing


def test_a_bad_keymap_stops_the_app_with_one_line(tmp_path, monkeypatch, capsys):
    from cockpit.cli import main

    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path))
    (tmp_path / "config.toml").write_text('[keymap]\nspawn = "q"\n')
    assert main(["--no-server", "--workspace", str(tmp_path)]) == 2
    assert "gives 'q' to" in capsys.readouterr().err


def test_an_unquoted_dotted_keymap_id_that_clashes_is_refused(tmp_path, monkeypatch, capsys):
    from cockpit.cli import main

    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path))
    (tmp_path / "config.toml").write_text('[keymap]\ndiff.merge = "k"\n')  # k is diff.keep's
    assert main(["--no-server", "--workspace", str(tmp_path)]) == 2
    assert "gives 'k' to diff.keep and diff.merge on the diff screen" in capsys.readouterr().err
