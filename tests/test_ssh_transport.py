"""The SSH transport without ssh: ``[hosts.NAME]`` in config.toml, the transport seam, the bridge
over plain pipes, the one-line failures, and picking up events after a drop
(tests/test_ssh_hosts.py runs all of it through a real sshd)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest
from helpers import stop_server

from cockpit import __version__
from cockpit.cli import main
from cockpit.errors import CockpitError
from cockpit.events import SessionStatus, StatusChanged, TextDelta, ToolCall, UsageUpdate
from cockpit.events import Usage as U
from cockpit.host_cli import host_name, without_host
from cockpit.runtime.config import ConfigError, HostEntry, config_path, host_entry, parse_hosts
from cockpit.runtime.sessionlog import SessionLog
from cockpit.server.replay import since
from cockpit.server.ssh import HostError, SshTransport, check_hello, failure_message
from cockpit.server.transport import Transport, UnixTransport, transport_for


def test_hosts_in_config_toml(capsys):
    config_path().write_text('[hosts.box]\nssh = "me@box.example"\nworkspace = "~/src/app"\ntimeout = 5\n'
                             '[hosts.alias]\nnotes = "/srv/notes"\n')
    box = host_entry("box")
    assert box == HostEntry(name="box", ssh="me@box.example", command="cockpit", notes=None,
                            workspace="~/src/app", timeout=5.0)
    assert host_entry("alias").ssh == "alias"  # no ssh = the name is the destination (a Host alias)
    assert host_entry("user@elsewhere") == HostEntry(name="user@elsewhere", ssh="user@elsewhere")
    with pytest.raises(ConfigError, match="--host needs a host name"):
        host_entry("-oProxyCommand=touch /tmp/x")  # never an ssh option
    assert main(["config", "check"]) == 0


@pytest.mark.parametrize(("table", "message"), [
    ({"box": {"sshh": "x"}}, "unknown key 'sshh' in [hosts.box] (did you mean 'ssh'?)"),
    ({"box": {"ssh": "-oProxyCommand=x"}}, "must be a destination, not an option"),
    ({"box": {"ssh": ""}}, "hosts.box.ssh must be a non-empty string"),
    ({"box": {"timeout": "soon"}}, "hosts.box.timeout must be a number of seconds > 0"),
    ({"box": "me@box"}, "[hosts.box] must be a table"),
])
def test_a_bad_host_entry_is_one_line(table, message, capsys):
    with pytest.raises(ConfigError) as err:
        parse_hosts(table, "config.toml")
    assert message in str(err.value)
    config_path().write_text('[hosts.box]\nsshh = "x"\n')
    assert main(["config", "check"]) == 2  # the file's check names it too
    assert "unknown key 'sshh' in [hosts.box]" in capsys.readouterr().err


def test_transports_are_one_seam():
    local, remote = UnixTransport(), SshTransport(HostEntry("box", "me@box"))
    assert isinstance(local, Transport) and isinstance(remote, Transport)
    assert (local.remote, local.label) == (False, "local") and (remote.remote, remote.label) == (True, "box")
    two = parse_hosts({"two": {"socket": "/srv/two/server.sock"}})["two"]  # a second server of this machine
    assert isinstance(transport_for(two), UnixTransport) and str(transport_for(two).path) == "/srv/two/server.sock"
    assert isinstance(transport_for(host_entry("me@box")), SshTransport)
    with pytest.raises(ConfigError, match="has both ssh and socket"):
        parse_hosts({"two": {"socket": "/s", "ssh": "box"}})


def test_one_host_per_command():
    assert host_name(argparse.Namespace(host=["box"])) == "box"  # the app's --host (repeatable) given once
    assert host_name(argparse.Namespace(host="box")) == "box" and host_name(argparse.Namespace()) is None
    with pytest.raises(CockpitError, match="this command acts on one host; --host was given 2 times"):
        host_name(argparse.Namespace(host=["a", "b"]))


def test_without_host():
    assert without_host(["memory", "search", "q", "--host", "box", "--json"]) == ["memory", "search", "q", "--json"]
    assert without_host(["--host=box", "worktrees", "list"]) == ["worktrees", "list"]


def test_failure_lines():
    box = HostEntry("box", "me@box", command="/opt/cockpit")
    assert "remote cockpit not found (`/opt/cockpit` exited 127" in failure_message(box, 127, "sh: 1: x: not found")
    auth = failure_message(box, 255, "me@box: Permission denied (publickey).\n")
    assert auth.startswith("host box (me@box): ssh authentication failed (me@box: Permission denied (publickey).)")
    down = failure_message(box, 255, "ssh: connect to host box port 22: Connection timed out\n")
    assert down == "host box (me@box) is unreachable (ssh: connect to host box port 22: Connection timed out)"
    with pytest.raises(HostError, match=r"^version mismatch: local cockpit .* host box has 9\.9 \(protocol 2\)"):
        check_hello(box, {"cockpit_bridge": 1, "version": "9.9", "protocol": 2})
    with pytest.raises(HostError, match="^host box: the Cockpit server there cannot be reached: boom$"):
        check_hello(box, {"cockpit_bridge": 1, "error": "the Cockpit server there cannot be reached: boom"})
    # a stopped server there: the remote's hint named this machine's `cockpit server stop --force`
    # (copied, it killed the local server) and a pid that is not here
    with pytest.raises(HostError) as stopped:
        check_hello(box, {"cockpit_bridge": 1, "stopped_pid": 30736,
                          "error": "the Cockpit server there cannot be reached: … `cockpit server stop --force` ends it"})
    said = str(stopped.value)
    assert "`kill -CONT 30736` on box" in said and "`cockpit server stop --force --host box`" in said


def test_the_bridge_says_which_server_is_stopped(monkeypatch):
    """The bridge's hello carries a stopped server's pid, for the client to name the host."""
    import io

    from cockpit.server import bridge, client

    monkeypatch.setattr(client, "ensure_server", lambda: (_ for _ in ()).throw(client.ServerError("stopped")))
    monkeypatch.setattr(client, "stopped_pid", lambda path=None: 4242)
    out = io.BytesIO()
    monkeypatch.setattr(bridge, "_write_all", lambda fd, data: out.write(data))
    assert bridge.run_bridge() == 1
    import json

    said = json.loads(out.getvalue())
    assert said["stopped_pid"] == 4242 and "cannot be reached: stopped" in said["error"]


def test_since_gives_what_came_after_the_drop_once():
    s = "s1"
    seen = SessionLog([StatusChanged(s, SessionStatus.STREAMING), TextDelta(s, "he"), TextDelta(s, "l"),
                 UsageUpdate(s, U(), U(), None, None, partial=True)])
    assert seen.events == [StatusChanged(s, SessionStatus.STREAMING), TextDelta(s, "hel")]  # as the server logs
    later = [StatusChanged(s, SessionStatus.STREAMING), TextDelta(s, "hello world"),
             ToolCall(s, "t1", "bash", {"command": "ls"}), StatusChanged(s, SessionStatus.WAITING)]
    assert since(seen, later) == [TextDelta(s, "lo world"), *later[2:]]
    assert since(SessionLog(later), later) == []
    assert since(SessionLog([*seen.events, *later]), later) == [later[-1]]  # the server's log was trimmed


def test_the_bridge_relays_the_protocol_over_pipes(monkeypatch):
    """What ssh runs on the remote host, driven through plain pipes: the hello line, then the
    unchanged protocol; the server it started stays when the client leaves."""
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    proc = subprocess.Popen([sys.executable, "-m", "cockpit", "server", "bridge"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        hello = json.loads(proc.stdout.readline())
        assert hello["cockpit_bridge"] == 1 and hello["version"] == __version__ and hello["protocol"] == 1
        assert hello["server_pid"] > 0 and hello["home"]
        proc.stdin.write(b'{"jsonrpc":"2.0","id":7,"method":"hello","params":{"client":"test"}}\n')
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 7 and reply["result"]["server"] == "cockpit" and reply["result"]["pid"] == hello["server_pid"]
        proc.stdin.close()  # the ssh channel ends: the bridge leaves
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        stop_server()


def test_remote_paths_keep_the_hosts_home():
    from cockpit.server.ssh import shell_path

    assert shell_path("~/src/my app") == "\"$HOME\"/'src/my app'" and shell_path("~") == '"$HOME"'
    assert shell_path("/srv/a b") == "'/srv/a b'" and shell_path("/x;rm -rf /") == "'/x;rm -rf /'"


def test_ssh_never_carries_the_key(monkeypatch):
    from cockpit.server.ssh import _ssh_env

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    env = _ssh_env()
    assert "ANTHROPIC_API_KEY" not in env and "OPENAI_API_KEY" not in env and env["PATH"] == os.environ["PATH"]


def test_run_on_a_host_names_its_folders_there_before_any_ssh(capsys, monkeypatch):
    """``cockpit run --host`` builds its SpawnSpecs like a local run; a folder there must be
    absolute or ``~/…`` (this machine's current folder means nothing on the host), and one
    workspace must be named: each refused in one line, before ssh is tried."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", "/nonexistent/ssh")  # reached, it would fail otherwise
    config_path().write_text('[hosts.box]\nssh = "me@box.example"\n')
    assert main(["run", "hi", "--host", "box"]) == 2
    assert "no workspace on host box: give --workspace" in capsys.readouterr().err
    assert main(["run", "hi", "--host", "box", "--workspace", "src/app"]) == 2
    assert "a path on another host must be absolute (or start with ~/): src/app" in capsys.readouterr().err
    assert main(["run", "hi", "--host", "box", "--workspace", "~/app", "--notes", "notes"]) == 2
    assert "must be absolute (or start with ~/): notes" in capsys.readouterr().err
    assert main(["run", "hi", "--host", "box", "--workspace", "~/app", "--top-k", "0"]) == 2
    assert "--top-k must be an integer ≥ 1" in capsys.readouterr().err  # the SpawnSpec's own check


def test_host_local_is_this_machine_and_a_command_takes_one_host():
    from cockpit.cli import build_parser
    from cockpit.errors import CockpitError
    from cockpit.host_cli import host_name

    assert host_name(build_parser("ls").parse_args(["ls", "--host", "local"])) is None  # the grid's name for here
    assert host_name(build_parser("ls").parse_args(["ls", "--host", "box"])) == "box"
    assert host_name(build_parser("ls").parse_args(["--host", "box", "ls"])) == "box"
    assert host_name(build_parser("ls").parse_args(["ls"])) is None
    with pytest.raises(CockpitError, match="acts on one host; --host was given 2 times"):
        host_name(build_parser("ls").parse_args(["ls", "--host", "a", "--host", "b"]))


def test_the_shell_on_a_host_is_the_transports_ssh_with_every_path_quoted(tmp_path, monkeypatch):
    """``s`` on a remote pane: the transport's own ssh command line (``COCKPIT_SSH_COMMAND``, the
    host's ``ssh =``), ``-t``, a login shell in the folder there; its editor on a file. A stand-in
    ssh runs the remote command with sh here: folder and file names with quotes, ``$(…)``,
    backticks and ``;`` are names, never commands."""
    from cockpit.server.ssh import open_shell, shell_argv, ssh_argv

    monkeypatch.chdir(tmp_path)  # where an injected command would run
    fake = tmp_path / "fake-ssh"  # runs its last argument (the remote command) as the remote shell would
    fake.write_text('#!/bin/sh\nfor a; do last=$a; done\nexec sh -c "$last"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", f"{fake} -F /dev/null")
    host = HostEntry("box", ssh="me@box.example", timeout=7)
    odd = tmp_path / "it's a \"dir\" $(touch PWNED); touch PWNED2 `touch PWNED3`"
    odd.mkdir()
    argv = shell_argv(host, str(odd))
    transport = ssh_argv(host, "REMOTE")
    assert argv[:2] == [str(fake), "-F"] and argv[-2] == "me@box.example"  # the transport's command and target
    assert argv[:-1] == [*transport[:3], "-t", *transport[4:-1]] and transport[3] == "-T"
    record = tmp_path / "record"
    script = tmp_path / "record.sh"  # the remote $SHELL / $EDITOR: records where it ran and on what
    script.write_text(f'#!/bin/sh\npwd -P > "{record}"\nprintf "%s\\n" "$@" >> "{record}"\n')
    script.chmod(0o755)
    monkeypatch.setenv("SHELL", str(script))
    assert open_shell(host, str(odd)) == 0
    assert record.read_text().splitlines() == [str(odd.resolve()), "-l"]  # a login shell, in the folder
    monkeypatch.setenv("EDITOR", str(script))
    monkeypatch.delenv("VISUAL", raising=False)
    name = "a 'b' $(touch PWNED4).txt"
    assert open_shell(host, str(odd), edit=name) == 0
    assert record.read_text().splitlines() == [str(odd.resolve()), name]
    assert not [p for p in tmp_path.rglob("PWNED*")]
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", "/nonexistent/ssh")
    with pytest.raises(HostError, match=r"ssh not found \(/nonexistent/ssh\)"):
        open_shell(host, str(odd))


def test_a_hung_hosts_line_names_the_host_in_the_doctor_command():
    """It said "`cockpit doctor --host` it", without the name."""
    from cockpit.server.client import hung_message

    assert hung_message("host box").endswith("try again, or `cockpit doctor --host box`")
