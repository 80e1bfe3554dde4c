"""The model's tools: confinement, the text editor tool, the bash tool, memory tools, definitions."""

import asyncio
import os
from pathlib import Path

import pytest
from helpers import wait_gone

from cockpit.runtime.bash import BashSession, session_env
from cockpit.runtime.tools import ToolRunner, tool_definitions

EDIT = "str_replace_based_edit_tool"


class FakeEngine:
    ready = True

    def __init__(self):
        self.saved = []

    def wait_ready(self, timeout=None):
        return True

    def build_preseed(self, query, top_k=5):
        from types import SimpleNamespace as NS
        return NS(text="", hits=[], tokens=0)

    def search(self, query, top_k=5):
        from types import SimpleNamespace as NS
        return [NS(name="n1", description="d1", snippet="s1", priority=True, score=0.9, path=Path("n1.md"))]

    def get(self, name):
        if name != "n1":
            return None
        return {"name": "n1", "description": "d1", "body": "The whole body.", "priority": True, "path": "n1.md",
                "status": "superseded"}

    def save(self, name, description, body, priority=False):
        if name == "dup":
            raise FileExistsError("note 'dup' exists")
        self.saved.append((name, description, body, priority))
        return Path(f"/notes/{name}.md")


@pytest.fixture
async def runner(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (ws / "sub" / "b.py").write_text("print('beta')\n")
    (tmp_path / "secret.txt").write_text("top secret")
    os.symlink(tmp_path / "secret.txt", ws / "link.txt")
    os.symlink(tmp_path, ws / "up")
    r = ToolRunner(ws, FakeEngine(), env=session_env(dict(os.environ)), bash_timeout=5)
    yield r
    await r.close()


def view(path, **kw):
    return {"command": "view", "path": path, **kw}


ESCAPES = ["../secret.txt", "../../etc/passwd", "/etc/passwd", "link.txt", "up/secret.txt", "sub/../../secret.txt", "~/x"]


@pytest.mark.parametrize("path", ESCAPES)
async def test_reads_outside_the_tree_are_refused(runner, path):
    out = await runner.run(EDIT, view(path))
    assert out.is_error and "refused" in out.content and "top secret" not in out.content


@pytest.mark.parametrize("path", ESCAPES + ["up/new.txt", ".git/config"])
@pytest.mark.parametrize("command", ["create", "str_replace", "insert"])
async def test_edits_outside_the_tree_are_refused(runner, tmp_path, path, command):
    data = {"command": command, "path": path, "file_text": "x", "old_str": "top", "new_str": "bottom",
            "insert_line": 0, "insert_text": "x"}
    out = await runner.run(EDIT, data)
    assert out.is_error and "refused" in out.content
    assert (tmp_path / "secret.txt").read_text() == "top secret"
    assert not (tmp_path / "new.txt").exists()


async def test_view_file_range_and_folder(runner):
    out = await runner.run(EDIT, view("a.txt"))
    assert out.content.splitlines() == ["     1\talpha", "     2\tbeta", "     3\tgamma", "     4\t"]
    out = await runner.run(EDIT, view("a.txt", view_range=[2, 3]))
    assert out.content == "     2\tbeta\n     3\tgamma"
    out = await runner.run(EDIT, view(str(runner.workspace.root / "a.txt"), view_range=[3, -1]))
    assert out.content.startswith("     3\tgamma") and not out.is_error  # absolute inside the tree is fine
    out = await runner.run(EDIT, view("."))
    assert "a.txt" in out.content and "sub/" in out.content and "sub/b.py" in out.content
    assert "secret" not in out.content
    assert (await runner.run(EDIT, view("a.txt", view_range=[9, 10]))).is_error


async def test_create_str_replace_insert(runner):
    root = runner.workspace.root
    out = await runner.run(EDIT, {"command": "create", "path": "new/dir/c.py", "file_text": "x = 1\ny = 2\n"})
    assert not out.is_error and (root / "new/dir/c.py").read_text() == "x = 1\ny = 2\n"
    out = await runner.run(EDIT, {"command": "str_replace", "path": "new/dir/c.py", "old_str": "y = 2", "new_str": "y = 3"})
    assert not out.is_error and (root / "new/dir/c.py").read_text() == "x = 1\ny = 3\n"
    out = await runner.run(EDIT, {"command": "insert", "path": "new/dir/c.py", "insert_line": 0, "insert_text": "# top\n"})
    assert not out.is_error and (root / "new/dir/c.py").read_text() == "# top\nx = 1\ny = 3\n"


async def test_str_replace_refuses_missing_and_non_unique(runner):
    root = runner.workspace.root
    (root / "d.txt").write_text("same\nsame\nother\n")
    out = await runner.run(EDIT, {"command": "str_replace", "path": "d.txt", "old_str": "same", "new_str": "x"})
    assert out.is_error and "Multiple occurrences" in out.content and "[1, 2]" in out.content
    out = await runner.run(EDIT, {"command": "str_replace", "path": "d.txt", "old_str": "absent", "new_str": "x"})
    assert out.is_error and "did not appear verbatim" in out.content
    assert (root / "d.txt").read_text() == "same\nsame\nother\n"


async def test_crlf_files_keep_their_line_ends(runner):
    root = runner.workspace.root
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    out = await runner.run(EDIT, {"command": "str_replace", "path": "w.txt", "old_str": "one\ntwo", "new_str": "1\n2"})
    assert not out.is_error and (root / "w.txt").read_bytes() == b"1\r\n2\r\n"


async def test_bad_files_are_tool_errors(runner):
    root = runner.workspace.root
    (root / "bin.dat").write_bytes(b"\x00\x01\x02")
    (root / "latin.txt").write_bytes("café".encode("latin-1"))
    os.mkfifo(root / "pipe")
    assert "binary" in (await runner.run(EDIT, view("bin.dat"))).content
    out = await runner.run(EDIT, {"command": "str_replace", "path": "latin.txt", "old_str": "caf", "new_str": "x"})
    assert out.is_error and "not UTF-8" in out.content
    out = await asyncio.wait_for(runner.run(EDIT, view("pipe")), 5)  # a FIFO must not hang the session
    assert out.is_error and "not a regular file" in out.content
    assert (await runner.run(EDIT, view("missing.txt"))).is_error
    big = root / "big.txt"
    with open(big, "wb") as fh:
        fh.truncate(11 * 1024 * 1024)
    out = await runner.run(EDIT, view("big.txt"))
    assert out.is_error and "cap" in out.content


async def test_a_symlink_loop_or_an_overlong_name_is_a_tool_error_not_the_sessions_end(runner):
    root = runner.workspace.root
    os.symlink("loopb", root / "loopa")
    os.symlink("loopa", root / "loopb")
    for cmd in (view("loopa"), {"command": "create", "path": "loopa/x.txt", "file_text": "x"}):
        out = await runner.run(EDIT, cmd)
        assert out.is_error and "cannot be resolved" in out.content, out.content
    listing = await runner.run(EDIT, view("."))
    assert not listing.is_error and "a.txt" in listing.content  # the loop is left out, the rest listed
    out = await runner.run(EDIT, {"command": "create", "path": "x" * 300 + ".txt", "file_text": "x"})
    assert out.is_error and "longer than 255 bytes" in out.content


async def test_a_device_file_in_the_tree_is_refused_before_it_is_read(runner):
    """/dev/zero's twin inside the working tree: reading it would never end (an OOM kill at
    20 GB, once). Refused as not a regular file, as a FIFO is, before it is opened."""
    import stat

    dev = runner.workspace.root / "zero"
    try:
        os.mknod(dev, 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # the device /dev/zero is
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    for cmd in (view("zero"), {"command": "str_replace", "path": "zero", "old_str": "a", "new_str": "b"},
                {"command": "insert", "path": "zero", "insert_line": 0, "insert_text": "x"}):
        out = await asyncio.wait_for(runner.run(EDIT, cmd), 5)
        assert out.is_error and "not a regular file" in out.content, out.content


async def test_edits_that_would_do_nothing_or_go_wrong_are_refused_before_any_write(runner):
    from cockpit.runtime import editor

    root = runner.workspace.root
    before = (root / "a.txt").read_text()
    cases = [
        ({"command": "str_replace", "path": "a.txt", "old_str": "beta", "new_str": "beta"}, "are the same"),
        ({"command": "create", "path": "a.txt/inner.txt", "file_text": "x"}, "a.txt is a file, not a folder"),
        ({"command": "create", "path": "newdir/", "file_text": "x"}, "names a folder"),
        ({"command": "create", "path": "s.txt", "file_text": "bad \udcff"}, "not valid Unicode"),
        ({"command": "str_replace", "path": "a.txt", "old_str": "beta", "new_str": "x" * (editor.MAX_FILE_BYTES + 1)},
         "cap"),
        ({"command": "insert", "path": "a.txt", "insert_line": 1, "insert_text": "x" * (editor.MAX_FILE_BYTES + 1)},
         "cap"),
    ]
    for data, message in cases:
        out = await runner.run(EDIT, data)
        assert out.is_error and message in out.content, (data["command"], data["path"], out.content[:200])
    assert (root / "a.txt").read_text() == before
    assert not (root / "newdir").exists() and not (root / "s.txt").exists()


async def test_bad_inputs_are_tool_errors(runner):
    assert (await runner.run(EDIT, "nope")).is_error
    assert (await runner.run(EDIT, {"command": "view"})).is_error
    assert (await runner.run(EDIT, {"command": "undo_edit", "path": "a.txt"})).is_error
    assert (await runner.run("bash", {})).is_error
    assert (await runner.run("rm_rf", {})).is_error
    assert (await runner.run("memory_search", {})).is_error


async def test_memory_tools(runner):
    out = await runner.run("memory_search", {"query": "x"})
    assert "★ n1 (score 0.900)" in out.content
    out = await runner.run("memory_save", {"name": "fact", "description": "d", "body": "b", "priority": True})
    assert not out.is_error and runner.engine.saved == [("fact", "d", "b", True)]
    out = await runner.run("memory_save", {"name": "dup", "description": "d", "body": "b"})
    assert out.is_error and "exists" in out.content
    no_engine = ToolRunner(runner.workspace.root, None)
    assert (await no_engine.run("memory_search", {"query": "x"})).is_error


def test_definitions_are_anthropic_client_tools_or_portable_schemas():
    tools = tool_definitions("anthropic")
    assert tools[0] == {"type": "bash_20250124", "name": "bash"}
    assert tools[1]["type"] == "text_editor_20250728" and tools[1]["name"] == EDIT
    assert [t["name"] for t in tools[2:]] == ["memory_search", "memory_get", "memory_save"]
    assert tools[-1]["cache_control"] == {"type": "ephemeral"}
    portable = tool_definitions("portable")
    assert [t["name"] for t in portable] == ["bash", EDIT, "memory_search", "memory_get", "memory_save"]
    assert all("input_schema" in t and "type" not in t for t in portable)
    with pytest.raises(ValueError):
        tool_definitions("other")


# -- bash -------------------------------------------------------------------------------------
async def test_bash_state_persists_and_restart_resets(runner):
    out = await runner.run("bash", {"command": "mkdir -p deep && cd deep && export FOO=bar && pwd"})
    assert out.content.strip().endswith("/ws/deep")
    out = await runner.run("bash", {"command": "echo $FOO; pwd"})
    assert out.content.split() == ["bar", str(runner.workspace.root / "deep")]
    assert (await runner.run("bash", {"restart": True})).content == "bash tool has been restarted."
    out = await runner.run("bash", {"command": "echo ${FOO:-unset}; pwd"})
    assert out.content.split() == ["unset", str(runner.workspace.root)]


async def test_bash_cd_out_of_the_tree_is_reset_as_claude_code_does(runner, tmp_path):
    """A cd that leaves the working tree does not persist: the next command (which an allow rule
    may let through, with a relative redirect) runs in the tree again, and the model is told."""
    root = runner.workspace.root
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "sub").mkdir(exist_ok=True)
    (root / "link-out").symlink_to(outside)
    out = await runner.run("bash", {"command": f"cd {outside} && pwd"})
    assert out.content.splitlines() == [str(outside), f"Shell cwd was reset to {root}"]
    assert (await runner.run("bash", {"command": "pwd"})).content.strip() == str(root)
    out = await runner.run("bash", {"command": "cd link-out"})  # inside by name, outside in fact
    assert out.content.strip() == f"Shell cwd was reset to {root}"
    out = await runner.run("bash", {"command": "cd sub && pwd"})  # within the tree: kept, no note
    assert out.content.strip() == str(root / "sub")
    assert (await runner.run("bash", {"command": "pwd"})).content.strip() == str(root / "sub")


async def test_bash_exit_codes_stdin_and_syntax_errors(runner):
    out = await runner.run("bash", {"command": "echo oops >&2; exit_code() { return 3; }; exit_code"})
    assert "oops" in out.content and "[exit code 3]" in out.content and not out.is_error
    out = await runner.run("bash", {"command": "cat; echo after-cat"})  # stdin is /dev/null
    assert out.content.strip() == "after-cat"
    out = await runner.run("bash", {"command": "echo 'unterminated"})
    assert "unexpected EOF" in out.content
    assert (await runner.run("bash", {"command": "echo still-alive"})).content.strip() == "still-alive"


async def test_bash_output_is_capped_head_and_tail(runner):
    out = await runner.run("bash", {"command": "seq 1 300000"})
    assert out.content.startswith("1\n2\n3\n") and "300000" in out.content
    assert "bytes of output elided" in out.content and len(out.content) < 40_000


async def test_bash_timeout_kills_and_restarts(tmp_path):
    b = BashSession(tmp_path, session_env(dict(os.environ)), timeout=1)
    try:
        r = await b.run("echo started; sleep 30")
        assert r.timed_out and "started" in r.output and "timed out" in r.for_model()
        r = await b.run("echo fresh")
        assert r.output.strip() == "fresh" and not r.timed_out
    finally:
        await b.close()


async def test_bash_close_kills_the_process_group(tmp_path):
    b = BashSession(tmp_path, session_env(dict(os.environ)), timeout=30)
    r = await b.run("sleep 300 & echo $!")
    child = int(r.output.strip())
    os.kill(child, 0)  # running
    await b.close()
    await wait_gone(child, "the background child, after the session's close")


async def test_bash_commands_that_close_or_redirect_output_do_not_hang_the_shell(tmp_path):
    b = BashSession(tmp_path, session_env(dict(os.environ)), timeout=30)
    try:
        for cmd in ("exec >/dev/null", "exec 1>&- 2>&-", "exec 198>&-",
                    "printf() { :; }; echo defined"):
            r = await b.run(cmd)
            assert not r.timed_out and not r.shell_exited, (cmd, r)
            after = await b.run("echo visible; echo err >&2")
            assert after.output == "visible\nerr\n" and after.exit_code == 0, (cmd, after)
    finally:
        await b.close()


async def test_bash_shell_exit_with_a_background_job_ends_the_job_not_the_wait(tmp_path):
    b = BashSession(tmp_path, session_env(dict(os.environ)), timeout=30)
    try:
        child = int((await b.run("sleep 300 & echo $!")).output.strip())
        r = await b.run("echo bye; exit 3")
        assert r.shell_exited and not r.timed_out and r.exit_code == 3 and r.output.startswith("bye")
        await wait_gone(child, "the background job of a shell that exited")
        r = await b.run("set -e; false")
        assert r.shell_exited and not r.timed_out and r.exit_code == 1
        assert (await b.run("echo again")).output == "again\n"
    finally:
        await b.close()


async def test_bash_cancel_kills_a_running_command(tmp_path):
    b = BashSession(tmp_path, session_env(dict(os.environ)), timeout=60)
    marker = tmp_path / "pid"
    task = asyncio.create_task(b.run(f"echo $$ > {marker}; sleep 300"))
    while not marker.exists() or not marker.read_text().strip():
        await asyncio.sleep(0.02)
    shell = int(marker.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_gone(shell, "the shell, after cancellation")
    await b.close()


async def test_the_api_key_is_not_in_the_shell_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret-key")
    monkeypatch.setenv("SOME_TOKEN_COPY", "prefix-sk-ant-very-secret-key")
    env = session_env(dict(os.environ), secrets_to_strip=("sk-ant-very-secret-key",))
    b = BashSession(tmp_path, env, timeout=10)
    try:
        r = await b.run("env")
        assert "sk-ant-very-secret-key" not in r.output and "ANTHROPIC_API_KEY" not in r.output
        assert "PATH=" in r.output
    finally:
        await b.close()


async def test_a_file_name_that_is_not_utf8_is_listed_with_escapes(runner):
    root = runner.workspace.root
    with open(os.path.join(os.fsencode(root), b"caf\xe9.txt"), "wb") as fh:
        fh.write(b"latin-1 name")
    out = await runner.run(EDIT, view("."))
    assert not out.is_error and "caf\\xe9.txt" in out.content
    out.content.encode("utf-8")  # no lone surrogate: it can go to the API and into the transcript


@pytest.mark.parametrize("poison", ["enable -n printf", "builtin() { :; }", "printf() { :; }",
                                    "shopt -s expand_aliases; alias case=echo", "pwd() { echo /; }"])
async def test_a_command_that_shadows_the_shells_builtins_does_not_break_the_next_one(runner, poison):
    """These hung every later command for the full timeout (the tool's end-of-output line uses
    printf, builtin, case and pwd) or made each one a syntax error until a restart."""
    first = await asyncio.wait_for(runner.run("bash", {"command": poison}), 10)
    assert not first.is_error, first.content  # not even that command waits for its timeout
    out = await asyncio.wait_for(runner.run("bash", {"command": "echo still here"}), 10)
    assert not out.is_error and "still here" in out.content


async def test_a_rule_allowed_command_runs_in_a_new_shell_that_nothing_planted_reaches(tmp_path):
    """Functions, aliases, traps, hash entries and disabled builtins set by earlier commands — even
    ones that shadow `builtin` and `unset` — never run with a guarded (rule-allowed) command; the
    folder carries over; a changed environment stops it (the session asks)."""
    (tmp_path / "sub").mkdir()
    shell = BashSession(tmp_path, session_env(dict(os.environ)), timeout=10)
    try:
        await shell.run("cd sub; python3() { echo HIJACKED; }; ls() { echo HIJACKED; }; shopt -s expand_aliases; "
                        "alias git='echo HIJACKED'; hash -p /bin/echo cat; enable -n compgen; "
                        "builtin() { echo HIJACKED; }; unset() { echo HIJACKED; }")
        r = await shell.run("python3 -c 'print(40 + 2)'; pwd; git --version >/dev/null && echo git-ok", guarded=True)
        assert "HIJACKED" not in r.output
        assert r.output.split()[:2] == ["42", str(tmp_path / "sub")] and "git-ok" in r.output
        await shell.run("trap 'echo TRAPPED' DEBUG")
        r = await shell.run("python3 -c 'print(40 + 2)'", guarded=True)  # runs without it, or asks
        assert "TRAPPED" not in r.output and (r.state_changed or r.output.strip() == "42")
        await shell.run("export PYTEST_ADDOPTS='-p evil'")
        r = await shell.run("python3 -c 'print(1)'", guarded=True)
        assert r.state_changed and r.output == ""
        r = await shell.run("python3 -c 'print(1)'")  # the user allowed it: runs in the changed shell
        assert "1" in r.output.split()
    finally:
        await shell.close()


def test_credentials_in_the_environment_never_reach_a_session_unless_named():
    base = {"GITHUB_TOKEN": "g", "AWS_SECRET_ACCESS_KEY": "a", "NPM_TOKEN": "n", "DB_PASSWORD": "p",
            "HF_TOKEN": "h", "OPENAI_API_KEY": "o", "PATH": "/usr/bin", "HOME": "/home/u", "TOKENIZERS_PARALLELISM": "x",
            "GIT_ASKPASS": "y", "LANG": "C.UTF-8"}
    env = session_env(base)
    assert not {"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "DB_PASSWORD", "HF_TOKEN", "OPENAI_API_KEY"} & set(env)
    assert {"PATH", "HOME", "TOKENIZERS_PARALLELISM", "LANG"} <= set(env)
    assert session_env(base, keep=("NPM_TOKEN",))["NPM_TOKEN"] == "n"  # [sandbox] pass_env


@pytest.mark.parametrize("name, value", [
    ("PGPASSWORD", "p"), ("MYSQL_PWD", "p"), ("DATABASE_URL", "postgres://app:hunter2@db:5432/app"),
    ("REDIS_URL", "redis://:hunter2@cache:6379/0"), ("PIP_INDEX_URL", "https://u:pw@pypi.example/simple"),
    ("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=https;AccountKey=k"),
    ("SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/x"), ("SENTRY_DSN", "https://k@sentry.io/1"),
    ("GH_PAT", "ghp_x"), ("CI_JOB_JWT", "eyJ"), ("MY_APP_PASSWORD_FILE", "p"), ("DBPASSWD", "p"),
    ("CLIENTSECRETS", "s"), ("VAULTTOKEN", "t"), ("GITHUB_TOKEN", "g"), ("DB_PASSWORD", "p"),
    # the red team's fourth round
    ("RAILS_MASTER_KEY", "k"), ("DB_PASS", "p"), ("OPENROUTER_KEY", "k"), ("SSH_PASSPHRASE", "p"),
    ("LITELLM_MASTER_KEY", "k"), ("ANTHROPIC_KEY", "k"), ("CLAUDE_KEY", "k"), ("DEEPSEEK_KEY", "k"), ("APP_KEY", "k"),
    ("ENCRYPTION_KEY", "k"), ("SIGNING_KEY", "k"), ("DEPLOY_KEY", "k"), ("SSH_KEY", "k"), ("ID_RSA", "k"),
    ("REDIS_PASS", "p"), ("SMTP_PASS", "p"), ("GPG_PASSPHRASE", "p"), ("ADMIN_USER_PASS", "p"), ("LICENSE_KEY", "k"),
    # the fix's re-test
    ("SSHPASS", "p"), ("DB_PW", "p"), ("LDAP_BIND_PW", "p"), ("DOCKER_AUTH_CONFIG", '{"auths": {}}'),
    ("AUTHORIZATION", "Bearer x"), ("COOKIE", "session=x"), ("SSH_KEY_B64", "c3No"), ("HMAC_KEY_BASE64", "x"),
    ("PGPASS", "p"), ("KEYSTOREPASS", "p"), ("BASIC_AUTH_CREDS", "u:p"), ("OTP_SEED", "s"), ("AZURE_STORAGE_SAS", "s"),
    ("DB_URL", "postgresql://db/x?user=app&password=q"), ("DB_CONN", "Server=h;User Id=u;Password=m;"),
    ("SEARCH_URL", "https://api.example/?api_key=abc"),
])
def test_credential_variables_the_old_name_list_missed_never_reach_a_session(name, value):
    env = session_env({name: value, "PATH": "/usr/bin"})
    assert name not in env
    assert session_env({name: value}, keep=(name,))[name] == value  # [sandbox] pass_env still passes it


@pytest.mark.parametrize("name, value", [
    ("PWD", "/home/u/p"), ("OLDPWD", "/home/u"), ("TOKENIZERS_PARALLELISM", "false"), ("XKB_KEYMAP", "us"),
    ("VIM_KEYMAP", "x"), ("PATH", "/usr/bin"), ("HOME", "/home/u"), ("LANG", "C.UTF-8"),
    ("http_proxy", "http://proxy:3128"), ("PYTHONPATH", "src"), ("PATHEXT", "x"), ("SSH_AUTH_SOCK", "/tmp/a"),
    ("KEYTIMEOUT", "1"), ("PASSENGER_ENV", "x"), ("COMPASS_HOME", "/c"), ("KEYMAP", "us"), ("COMPASS", "x"),
    ("BYPASS", "1"), ("PYTHONHASHSEED", "0"), ("PIP_OPTS", "--password-store=basic"),
])
def test_harmless_variables_still_reach_a_session(name, value):
    assert session_env({name: value})[name] == value


@pytest.mark.parametrize("path, kept", [
    (".:/usr/bin", "/usr/bin"), ("/usr/bin::/bin", "/usr/bin:/bin"), ("bin:/usr/bin:", "/usr/bin"),
    ("/usr/local/bin:./node_modules/.bin:/usr/bin", "/usr/local/bin:/usr/bin"), ("~/bin:/bin", "/bin"),
    (".", "/usr/local/bin:/usr/bin:/bin"), ("", "/usr/local/bin:/usr/bin:/bin"),
])
def test_session_path_keeps_only_absolute_folders(path, kept):
    assert session_env({"PATH": path})["PATH"] == kept
    assert session_env({}, extra={"PATH": path})["PATH"] == kept  # a PATH Cockpit adds too
    assert "PATH" not in session_env({})


async def test_a_program_planted_in_the_current_folder_never_runs_by_its_name(tmp_path):
    planted = tmp_path / "ls"
    planted.write_text("#!/bin/sh\necho PLANTED\n")
    planted.chmod(0o755)
    b = BashSession(tmp_path, session_env({**os.environ, "PATH": ".:" + os.environ.get("PATH", "/usr/bin:/bin")}),
                    timeout=30)
    try:
        r = await b.run("ls")
        assert "PLANTED" not in r.output and "ls" in r.output
    finally:
        await b.close()


def test_round_three_credentials_never_reach_a_session():
    env = session_env({"NPM_CONFIG__AUTH": "x", "KUBECONFIG_DATA": "y", "PATH": "/usr/bin", "GIT_AUTHOR_NAME": "n"})
    assert "NPM_CONFIG__AUTH" not in env and "KUBECONFIG_DATA" not in env and env["GIT_AUTHOR_NAME"] == "n"


async def test_memory_get_gives_the_whole_note_or_says_how_to_find_names(runner):
    out = await runner.run("memory_get", {"name": "n1"})
    assert not out.is_error and out.content == "★ n1 [superseded]: d1\n\nThe whole body."
    missing = await runner.run("memory_get", {"name": "nope"})
    assert missing.is_error and "memory_search finds names" in missing.content
    bad = await runner.run("memory_get", {})
    assert bad.is_error and "missing required field" in bad.content
