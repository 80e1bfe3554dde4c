"""OpenCode's preseed plugin: the installer's round trip, and the real ``opencode run`` (from npm,
installed by ``.ci/run``) against the stand-in with the plugin in the project: the block reaches
the model as a part of its own before the prompt, and the answer comes from it."""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from seed_data import FACTS, QUESTION, write_seed
from standin import FactResponder, Reply, StandIn

from cockpit.cli import main
from cockpit.opencode_plugin import MARK, plugin_path


def _answer(monkeypatch, text="y\n"):
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def test_install_writes_the_plugin_and_uninstall_leaves_the_project_as_it_was(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("x\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    _answer(monkeypatch)
    assert main(["memory", "hook", "--install", "--agent", "opencode", "--project", "--notes", "docs/notes"]) == 0
    path = tmp_path / ".opencode" / "plugins" / "cockpit-memory.js"
    text = path.read_text()
    assert MARK in text and 'const COMMAND = ["cockpit", "memory", "hook", "--notes", "docs/notes"]' in text
    assert "cockpit installed" in capsys.readouterr().out
    node = shutil.which("node")
    if node:  # the agent's own runtime parses it (an ES module)
        mjs = tmp_path / "check.mjs"
        mjs.write_text(text)
        assert subprocess.run([node, "--check", str(mjs)], capture_output=True).returncode == 0
        mjs.unlink()
    _answer(monkeypatch)
    assert main(["memory", "hook", "--install", "--agent", "opencode", "--project", "--notes", "docs/notes"]) == 0
    assert "nothing to change" in capsys.readouterr().out
    _answer(monkeypatch)
    assert main(["memory", "hook", "--uninstall", "--agent", "opencode", "--project"]) == 0
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_plugin_file_that_is_not_ours_is_never_overwritten(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = plugin_path(False, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({})\n")
    _answer(monkeypatch)
    assert main(["memory", "hook", "--install", "--agent", "opencode", "--project"]) != 0
    assert "is not Cockpit's plugin" in capsys.readouterr().err
    assert path.read_text() == "export const Mine = async () => ({})\n"


def test_the_user_plugin_lives_in_opencodes_config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert plugin_path(True, tmp_path) == tmp_path / "cfg" / "opencode" / "plugins" / "cockpit-memory.js"


def _plugin_dependency_present(folder: Path) -> None:
    """OpenCode installs ``@opencode-ai/plugin`` from npm into each of its config folders unless
    their lock file already lists it, and loads plugins only once that install ended: a test is
    offline, and Cockpit's plugin imports nothing, so the folder is marked as installed."""
    (folder / "node_modules").mkdir(parents=True, exist_ok=True)
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}
    (folder / "package-lock.json").write_text(json.dumps(lock))


def test_real_opencode_gets_the_block_before_its_first_prompt(tmp_path, monkeypatch):
    opencode = shutil.which("opencode")
    if opencode is None:
        pytest.skip("OpenCode is not installed (npm install -g opencode-ai; .ci/run installs it)")
    notes, ws = write_seed(tmp_path)
    monkeypatch.chdir(ws)
    _answer(monkeypatch)
    assert main(["memory", "hook", "--install", "--agent", "opencode", "--project", "--notes", str(notes)]) == 0
    home = tempfile.mkdtemp(dir=tmp_path)
    for folder in (ws / ".opencode", Path(home) / ".config" / "opencode"):
        _plugin_dependency_present(folder)
    facts = FactResponder()

    def no_tools(body):  # OpenCode has not the stand-in's file tool: answer or give up, never loop
        turn = facts(body)
        return Reply("I could not find that in the notes.") if turn.tool_uses else turn

    # the hook in-process (no server): the notes' engine loads in the hook itself, given as long as
    # it needs on a loaded machine (the plugin's own 5 s is for a user's prompt, not for this test)
    with StandIn(no_tools) as api:
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_DATA_HOME": f"{home}/.local",
               "XDG_CACHE_HOME": f"{home}/.cache", "COCKPIT_NO_SERVER": "1", "HF_HUB_OFFLINE": "1",
               "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               "OPENCODE_CONFIG_CONTENT": json.dumps({
                   "provider": {"anthropic": {"options": {"baseURL": api.base_url + "/v1", "apiKey": "x"}}},
                   "model": "anthropic/claude-sonnet-4-5", "autoupdate": False, "share": "disabled"}),
               "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
               "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
               "PWD": str(ws), "COCKPIT_HOOK_TIMEOUT_MS": "120000"}  # OpenCode takes its project folder from $PWD, not from its cwd
        # warm the index once, so the plugin's 5 s hook budget is the hook's, not a cold index build
        subprocess.run([sys.executable, "-m", "cockpit", "memory", "index", "--notes", str(notes)], env=env,
                       capture_output=True, timeout=300, check=True)
        proc = subprocess.run([opencode, "run", QUESTION], cwd=ws, env=env, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)  # (it reads a piped stdin into the prompt)
        bodies = api.message_requests
    assert proc.returncode == 0, proc.stderr[-2000:]
    first = next(b for b in bodies if any(QUESTION in (p.get("text") or "") for p in b["messages"][0]["content"]))
    texts = [p.get("text", "") for p in first["messages"][0]["content"] if p.get("type") == "text"]
    block = next(i for i, t in enumerate(texts) if t.startswith("<project-notes>"))
    task = next(i for i, t in enumerate(texts) if QUESTION in t)
    assert block < task and "6443" in texts[block]
    for fact in FACTS:
        assert fact in proc.stdout, proc.stdout
    assert Path(ws / ".opencode" / "plugins" / "cockpit-memory.js").is_file()


def test_the_plugin_asks_again_until_the_session_got_its_block(tmp_path):
    """A cold start (the hook prints nothing while the server starts) does not lose the notes for
    the session: the next message asks again; once a block was given it stops asking. The plugin
    runs under node with a stand-in for Bun.spawn; the hook is a script counting its calls."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    from cockpit.opencode_plugin import plugin_text

    calls = tmp_path / "calls"
    hook = tmp_path / "hook.sh"
    block = json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                               "additionalContext": "<project-notes>port 6443</project-notes>"}})
    hook.write_text(f"#!/bin/sh\necho x >> {calls}\n[ $(wc -l < {calls}) -ge 2 ] && echo '{block}'\nexit 0\n")
    hook.chmod(0o755)
    plugin = tmp_path / "plugin.mjs"
    plugin.write_text(plugin_text(None, portable=True).replace('["cockpit", "memory", "hook"]', json.dumps([str(hook)])))
    driver = tmp_path / "drive.mjs"
    driver.write_text(f"""
import {{ execFileSync }} from "node:child_process"
globalThis.Bun = {{ spawn(cmd) {{
  const out = execFileSync(cmd[0], cmd.slice(1))
  return {{ stdout: new Blob([out]), kill() {{}} }}
}} }}
const {{ CockpitMemory }} = await import({json.dumps(str(plugin))})
const hooks = await CockpitMemory({{ directory: {json.dumps(str(tmp_path))} }})
const seen = []
const ids = []
for (const text of ["first", "second", "third"]) {{
  const output = {{ parts: [{{ id: "prt_23a0cd7700014jCG10Gm7X1HN0", type: "text", text }}] }}
  await hooks["chat.message"]({{ sessionID: "ses_1" }}, output)
  seen.push(output.parts.map((p) => p.text))
  ids.push(output.parts.map((p) => p.id))
}}
console.log(JSON.stringify([seen, ids]))
""")
    out = subprocess.run([node, str(driver)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    (first, second, third), ids = json.loads(out.stdout)
    assert first == ["first"]  # the hook had nothing yet (cold start)
    assert second == ["<project-notes>port 6443</project-notes>", "second"]  # asked again: the block
    assert third == ["third"]  # given once: not asked again
    assert calls.read_text().count("x") == 2
    # OpenCode keeps parts by id and reads them in id order: the block's own id, before the prompt's
    # (a prompt id ending in "0" once gave the block the prompt's id, and one of the two was lost)
    block_id, prompt_id = ids[1]
    assert block_id != prompt_id and sorted(ids[1]) == [block_id, prompt_id]
