"""A host that answers with what no Cockpit server sends (a hostile or broken peer behind ssh):
every command says one line, nothing ends in a traceback, and the host speaks only for its own
sessions. The "ssh" here is a script (``$COCKPIT_SSH_COMMAND``) that says the bridge's hello and
then plays the peer; tests/test_ssh_hosts.py runs the real thing through sshd."""

from __future__ import annotations

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
