"""A host that answers with what no Cockpit server sends (a hostile or broken peer behind ssh):
every command says one line, nothing ends in a traceback, and the host speaks only for its own
sessions. The "ssh" here is a script (``$COCKPIT_SSH_COMMAND``) that says the bridge's hello and
then plays the peer; tests/test_ssh_hosts.py runs the real thing through sshd."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cockpit import __version__
from cockpit.cli import main

PEER = '''\
import json, sys
hello = {{"cockpit_bridge": 1, "version": {version!r}, "protocol": 1}}
sys.stdout.buffer.write((json.dumps(hello) + "\\n").encode()); sys.stdout.flush()
request = json.loads(sys.stdin.buffer.readline())
answer = {answer!r}.replace(b"ID", str(request["id"]).encode())
sys.stdout.buffer.write(answer); sys.stdout.flush()
sys.stdin.buffer.read()
'''


def fake_ssh(tmp_path: Path, monkeypatch, answer: bytes) -> None:
    """``ssh`` is a peer that says hello, then answers the first request with ``answer``
    (``ID`` in it: the request's id)."""
    script = tmp_path / "peer.py"
    script.write_text(PEER.format(version=__version__, answer=answer))
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", f"{sys.executable} {script}")
    monkeypatch.setenv("COCKPIT_SERVER_TIMEOUT", "20")


@pytest.mark.parametrize("answer", [
    b"this is not json\n",
    b"[1, 2, 3]\n",
    b"42\n",
    b"\xff\xfe\n",
    b'{"jsonrpc":"2.0","id":ID,"result":' + b"[" * 100000 + b"]" * 100000 + b"}\n",
    b'{"jsonrpc":"2.0","id":ID,"error":"boom"}\n',
    b'{"jsonrpc":"2.0","id":ID,"error":{"code":"x","message":"m"}}\n',
    b'{"jsonrpc":"2.0","id":ID,"result":"not an object"}\n',
    b'{"jsonrpc":"2.0","id":ID,"result":null}\n',
    b'{"jsonrpc":"2.0","id":ID,"result":NaN}\n',
    b'{"jsonrpc":"2.0","id":ID,"result":{"sessions":[1,"x",null,{"id":null}]}}\n',
    b'{"jsonrpc":"2.0","id":ID,"result":{"sessions":"none"}}\n',
], ids=["not-json", "a-list", "a-number", "not-utf8", "nested-deep", "error-a-string", "error-code-a-word",
        "result-a-string", "result-null", "result-nan", "rows-not-objects", "rows-not-a-list"])
def test_a_malformed_answer_is_one_line(answer, tmp_path, monkeypatch, capsys):
    fake_ssh(tmp_path, monkeypatch, answer)
    code = main(["ls", "--host", "box"])
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("cockpit: error: "), err
    if b'"error"' not in answer:  # (an error reply says its own message)
        assert "host box" in err, err


@pytest.mark.parametrize("answer", [
    b"this is not json\n",
    b'{"jsonrpc":"2.0","id":ID,"result":"not an object"}\n',
    b'{"jsonrpc":"2.0","id":ID,"result":{"id":["a"]}}\n',
], ids=["not-json", "result-a-string", "id-not-a-string"])
def test_attach_to_a_malformed_host_is_one_line(answer, tmp_path, monkeypatch, capsys):
    fake_ssh(tmp_path, monkeypatch, answer)
    code = main(["attach", "--host", "box", "abcd"])
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("cockpit: error: host box"), err


ESC = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b]0;owned\x07\x9b31m"  # clipboard write, clear screen, title, C1 CSI


def _answer(result: object = None, error: object = None) -> bytes:
    msg = {"jsonrpc": "2.0", "id": 0, "error": error} if error is not None else {"jsonrpc": "2.0", "id": 0,
                                                                                  "result": result}
    return json.dumps(msg).replace('"id": 0', '"id": ID').encode() + b"\n"


@pytest.mark.parametrize(("argv", "answer"), [
    (["ls"], _answer({"sessions": [{"id": "abc" + ESC, "status": "done" + ESC, "model": "m" + ESC, "task": "t",
                                    "backend": "b" + ESC, "worktree": {"branch": "br" + ESC}}]})),
    (["kill", "abcd"], _answer({"id": "abc" + ESC, "status": "done"})),
    (["approve", "abcd"], _answer({"id": "abc" + ESC, "summary": "rm" + ESC})),
    (["send", "abcd", "hi"], _answer(error={"code": 1, "message": "no" + ESC + "\ncockpit: a second line"})),
    (["ls"], _answer(error={"code": 2, "message": "no" + ESC + "\ncockpit: a second line"})),
], ids=["ls", "kill", "approve", "send-error", "ls-error"])
def test_a_hosts_text_never_drives_the_terminal(argv, answer, tmp_path, monkeypatch, capsys):
    fake_ssh(tmp_path, monkeypatch, answer)
    main([*argv, "--host", "box"])
    out, err = capsys.readouterr()
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, repr(text)
    assert "a second line" not in err or len(err.strip().splitlines()) == 1, err


CHATTY = '''\
import sys
print("Welcome to box! Last login: today\\x1b]0;owned\\x07")  # a login banner / a chatty .bashrc on stdout
command = sys.argv[-1]
if command.endswith("--version"):
    print("cockpit {version}")
else:
    print("\\u2713 server: running\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J")
'''


def test_doctor_on_a_host_with_a_login_banner(tmp_path, monkeypatch, capsys):
    """A banner before ``cockpit --version`` is no version mismatch (the bridge skips one too), and
    what the host's doctor prints never drives this terminal."""
    script = tmp_path / "chatty.py"
    script.write_text(CHATTY.format(version=__version__))
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", f"{sys.executable} {script}")
    main(["doctor", "--host", "box"])
    out = capsys.readouterr().out
    assert "version mismatch" not in out and f"cockpit {__version__} there, as here" in out, out
    assert "server: running" in out and "\x1b" not in out and "\x07" not in out, repr(out)


@pytest.mark.parametrize("name", ["box\n-oProxyCommand=x", "box -oProxyCommand=x", "box\t", "b\x1b[2Jox", "box\x00"])
def test_a_host_with_spaces_or_control_characters_is_refused_in_one_line(name, tmp_path, monkeypatch, capsys):
    calls = tmp_path / "ssh-ran"
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", f"touch {calls}")
    assert main(["ls", "--host", name]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "\x1b" not in err and "host" in err, repr(err)
    assert not calls.exists()  # refused before any ssh
    assert main(["--host", name, "--host", "local"]) == 2  # the app's grid refuses it too
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "a host name is a word" in err, repr(err)


def test_an_ssh_destination_with_spaces_is_refused_in_config_toml(capsys):
    from cockpit.runtime.config import config_path

    config_path().write_text('[hosts.box]\nssh = "box\\n-oProxyCommand=x"\n')
    assert main(["config", "check"]) == 2
    assert "hosts.box.ssh" in capsys.readouterr().err


def test_ssh_carries_no_credential_of_cockpits(tmp_path, monkeypatch, capsys):
    """ssh's environment (what a SendEnv rule would send to the host) holds none of the key
    variables of the session shells' list, nor the key under another name."""
    seen = tmp_path / "env.json"
    script = tmp_path / "envssh.py"
    script.write_text(f"import json, os\nopen({str(seen)!r}, 'w').write(json.dumps(dict(os.environ)))\n")
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", f"{sys.executable} {script}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-secret-value-0123456789")
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-oauth-value-0123456789")
    monkeypatch.setenv("COCKPIT_SERVER_TOKEN", "server-token-0123456789")
    monkeypatch.setenv("MY_KEY_COPY", "sk-ant-api03-secret-value-0123456789")
    monkeypatch.setenv("COCKPIT_SERVER_TIMEOUT", "20")
    main(["ls", "--host", "box"])
    env = json.loads(seen.read_text())
    assert env["PATH"] == __import__("os").environ["PATH"]
    for name in ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "COCKPIT_SERVER_TOKEN", "MY_KEY_COPY"):
        assert name not in env, name


def test_a_hosts_table_named_local_is_refused(capsys):
    """``local`` is this machine in a grid and on every --host: a [hosts.local] table would be
    ignored without a word (its ssh never used), so config check names it."""
    from cockpit.runtime.config import config_path

    config_path().write_text('[hosts.local]\nssh = "me@box"\n')
    assert main(["config", "check"]) == 2
    assert "[hosts.local]" in capsys.readouterr().err


def test_an_unreadable_ssh_command_is_one_line_that_says_so(monkeypatch, capsys):
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", "ssh -o 'ProxyJump=unclosed")
    for argv in (["ls"], ["kill", "abcd"], ["attach", "abcd"]):
        assert main([*argv, "--host", "box"]) != 0
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "COCKPIT_SSH_COMMAND" in err and "malformed" not in err, err


KEEPALIVES = '''\
import json, sys, time
hello = {{"cockpit_bridge": 1, "version": {version!r}, "protocol": 1}}
sys.stdout.write(json.dumps(hello) + "\\n"); sys.stdout.flush()
while True:  # "still working", never an answer
    sys.stdout.write('{{"jsonrpc":"2.0","method":"keepalive","params":{{}}}}\\n'); sys.stdout.flush()
    time.sleep(0.2)
'''


def test_a_host_that_only_sends_keepalives_does_not_hold_a_command(tmp_path, monkeypatch, capsys):
    script = tmp_path / "keepalives.py"
    script.write_text(KEEPALIVES.format(version=__version__))
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", f"{sys.executable} {script}")
    monkeypatch.setenv("COCKPIT_SERVER_TIMEOUT", "1")
    assert main(["ls", "--host", "box"]) != 0
    err = capsys.readouterr().err
    assert err.startswith("cockpit: error: host box did not answer in time") and len(err.strip().splitlines()) == 1, err


def test_attach_to_a_host_that_only_sends_keepalives_gives_up(tmp_path, monkeypatch, capsys):
    script = tmp_path / "keepalives.py"
    script.write_text(KEEPALIVES.format(version=__version__))
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", f"{sys.executable} {script}")
    monkeypatch.setenv("COCKPIT_SERVER_TIMEOUT", "1")
    assert main(["attach", "--host", "box", "abcd"]) != 0
    err = capsys.readouterr().err
    assert err.startswith("cockpit: error: host box did not answer in time") and len(err.splitlines()) == 1, err


def test_run_on_a_host_that_only_sends_keepalives_gives_up(tmp_path, monkeypatch, capsys):
    script = tmp_path / "keepalives.py"
    script.write_text(KEEPALIVES.format(version=__version__))
    monkeypatch.setenv("COCKPIT_SSH_COMMAND", f"{sys.executable} {script}")
    monkeypatch.setenv("COCKPIT_SERVER_TIMEOUT", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    assert main(["run", "--host", "box", "--workspace", str(tmp_path), "a task"]) != 0
    err = capsys.readouterr().err
    assert "host box did not answer in time" in err and "Traceback" not in err, err


async def test_a_server_socket_another_user_serves_is_refused(tmp_path, monkeypatch, capsys):
    """``[hosts.two] socket = …`` in a shared folder (/tmp) may be taken first by another user,
    who would get the API key with each spawn: the clients check who serves it, as the server
    checks its clients."""
    import os
    import socket

    from cockpit.runtime.config import config_path
    from cockpit.server.client import AsyncClient, ServerError

    path = tmp_path / "server.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()
    config_path().write_text(f'[hosts.two]\nsocket = "{path}"\n')
    try:
        me = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: me + 1)  # this process is someone else than the listener
        assert main(["ls", "--host", "two"]) != 0
        err = capsys.readouterr().err
        assert "served by another user" in err and len(err.strip().splitlines()) == 1, err
        with pytest.raises(ServerError, match="served by another user"):
            await AsyncClient.connect(path)  # the grid's way to a socket host
    finally:
        listener.close()


async def test_a_server_that_floods_events_nobody_reads_is_cut_off(tmp_path, monkeypatch):
    """A peer that sends events faster than they are read does not grow the client without
    bound: past the backlog limit the connection closes, saying why."""
    import asyncio
    import json as _json

    from cockpit.server import rpc
    from cockpit.server.client import AsyncClient

    monkeypatch.setattr(rpc, "MAX_PENDING_EVENTS", 50)
    sent = asyncio.Event()

    async def peer(reader, writer):
        request = _json.loads(await reader.readline())
        writer.write(rpc.response(request["id"], {"events": []}))
        for n in range(200):
            writer.write(rpc.notification("event", {"type": "StatusChanged", "data": {"n": n}}))
        await writer.drain()
        sent.set()
        await reader.read()

    path = tmp_path / "s.sock"
    server = await asyncio.start_unix_server(peer, path=str(path))
    client = await AsyncClient.connect(path, timeout=30)
    try:
        await client.call("subscribe")
        await asyncio.wait_for(sent.wait(), 60)
        await asyncio.wait_for(client._task, 60)  # the reader ends on its own
        assert client.closed and client.events.qsize() == 50 + 1  # the backlog, then the end (None)
        assert "sent events faster than they could be read" in str(client.error)
    finally:
        await client.close()
        server.close()
