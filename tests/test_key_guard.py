"""The API key out of what a session hands on, in every encoding a command can print
(cockpit.runtime.redact), and out of reach of the process that holds it (cockpit.runtime.keyguard)."""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

from cockpit.runtime.config import RuntimeConfig, load_config
from cockpit.runtime.redact import redact, redactor

KEY = "sk-ant-api03-" + "Zq8_rT4-vXy7wP2mN9kL5jH3gF6dS1aQ0eR" + "Bc4Ud7Wf2Yh5Ji8Kl1Mn0Op3Qr6St9Uv2Wx5Yz8Ab1" + "AA"


def encoded_pieces(key: str, width: int = 10) -> set[str]:
    """``width``-character pieces of every encoding of ``key`` that must not survive redaction:
    the key and its reverse, hex (both cases), percent escapes, base64 (both alphabets) at the
    three alignments (first and last group left out: they hold bits of the bytes around)."""
    data = key.encode()
    forms = [key, key[::-1], data.hex(), data.hex().upper(), "".join(f"%{b:02X}" for b in data)]
    for offset in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            forms.append(enc(bytes(offset) + data).decode()[4:-4])
    return {f[i:i + width] for f in forms for i in range(len(f) - width + 1)}


def leaked(text: str, key: str = KEY) -> list[str]:
    """The pieces of ``key``'s encodings in ``text``, also once byte separators and line breaks
    are taken out (``\\x73``, ``73 6b``, a wrapped base64)."""
    compact = re.sub(r"\\x|0x|[\s:%,]", "", text)
    return sorted(p for p in encoded_pieces(key) if p in text or p in compact)


def _b64_in_stream(prefix: bytes, suffix: bytes, urlsafe: bool = False, wrap: int | None = None) -> str:
    enc = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(prefix + KEY.encode() + suffix).decode()
    return "\n".join(enc[i:i + wrap] for i in range(0, len(enc), wrap)) if wrap else enc


FORMS = {
    "plain": KEY,
    "reversed": KEY[::-1],
    "hex": KEY.encode().hex(),
    "HEX": KEY.encode().hex().upper(),
    "hex-escaped": "".join(f"\\x{b:02x}" for b in KEY.encode()),
    "hex-od": "\n".join(" " + " ".join(f"{b:02x}" for b in KEY.encode()[i:i + 16]) for i in range(0, len(KEY), 16)),
    "hex-xxd-p": "\n".join(KEY.encode().hex()[i:i + 60] for i in range(0, 2 * len(KEY), 60)),
    "percent": "".join(f"%{b:02X}" for b in KEY.encode()),
    "percent-lower": "".join(f"%{b:02x}" for b in KEY.encode()),
    "percent-some": KEY[:10] + "".join(f"%{b:02X}" for b in KEY[10:30].encode()) + KEY[30:],
    "quoted": urllib.parse.quote("ANTHROPIC_API_KEY=" + KEY, safe=""),
    **{f"base64-{len(p)}-{len(s)}{'-url' if u else ''}{'-wrapped' if w else ''}": _b64_in_stream(p, s, u, w)
       for p in (b"", b"x", b"xy", b"ANTHROPIC_API_KEY=") for s in (b"", b"\n", b"tail bytes")
       for u in (False, True) for w in (None, 76)},
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_every_encoding_of_the_key_is_redacted_inside_longer_text(name):
    text = f"some output before\n{FORMS[name]}\nand after it"
    assert leaked(text)  # the check sees it
    out = redact(text, KEY)
    assert "***" in out and not leaked(out), name
    assert out.startswith("some output before\n") and out.endswith("\nand after it")


def test_redaction_keeps_other_text_and_ignores_short_keys():
    text = "nothing secret here: 0123456789abcdef, aGVsbG8=, %41, drow"
    assert redact(text, KEY) == text
    assert redact(text, None) == text and redact("key abc", "abc") == "key abc"  # too short to redact
    # a dummy key of a stand-in or a local proxy is no secret: ordinary words keep their letters
    assert redact("run the tests, then test-key", "test") == "run the tests, then test-key"
    assert redactor("test-key")("test-keys") == "test-keys"
    assert redactor(None)("x") == "x" and redactor(KEY)(f"a{KEY}b") == "a***b"
    assert redact(redact(KEY, KEY), KEY) == "***"


def test_redaction_is_fast_on_large_output():
    big = os.urandom(400_000).hex() + base64.b64encode(os.urandom(300_000)).decode() + "x" * 200_000
    redact("warm the cache", KEY)
    # no quadratic scan over 2 MB: this thread's CPU time (other processes' load does not count)
    start = time.thread_time()
    out = redact(big + KEY, KEY)
    assert time.thread_time() - start < 2.0 and out.endswith("***")


def test_a_session_redacts_its_auth_token_too(tmp_path):
    from cockpit.runtime.session_base import SessionBase

    token = "bearer-token-" + secrets.token_hex(16)
    fake = SessionBase.__new__(SessionBase)
    fake._cfg = RuntimeConfig(api_key=KEY, auth_token=token)
    text = f"{base64.b64encode(token.encode()).decode()} {KEY[::-1]} {token}"
    assert fake._redact(text) == "*** *** ***"


# -- keyguard ------------------------------------------------------------------------------------
def test_taken_keys_stay_in_the_config(monkeypatch):
    from cockpit.runtime import keyguard

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-" + KEY[-8:])
    assert keyguard.take_keys() == {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_AUTH_TOKEN": "tok-" + KEY[-8:]}
    assert "ANTHROPIC_API_KEY" not in os.environ and "ANTHROPIC_AUTH_TOKEN" not in os.environ
    cfg = load_config()  # a later load in this process still finds them
    assert cfg.api_key == KEY and cfg.auth_token == "tok-" + KEY[-8:]
    assert KEY not in repr(cfg) and KEY[-8:] not in repr(cfg)
    keyguard.forget()
    assert load_config().api_key is None


_GUARD_CHECK = r'''
import json, os, subprocess, sys
key = os.environ["ANTHROPIC_API_KEY"]
with open("/proc/self/environ", "rb") as fh:
    before = key.encode() in fh.read()
taken = take_keys()
with open("/proc/self/environ", "rb") as fh:  # still dumpable: readable, and the value is gone
    after = key.encode() in fh.read()
undumpable = make_undumpable()
child = subprocess.run(["sh", "-c", "cat /proc/$PPID/environ; head -c 64 /proc/$PPID/mem; env"],
                       capture_output=True)
print(json.dumps({"before": before, "after": after, "taken": sorted(taken), "undumpable": undumpable,
                  "in_environ": "ANTHROPIC_API_KEY" in os.environ, "child_out": child.stdout.decode("latin-1"),
                  "child_err": child.stderr.decode("latin-1")}))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's")
def test_guarded_process_hides_the_key_from_its_children():
    """A process holding the key (its environment had it) takes it out of its environment block
    and becomes undumpable: a child of the same user can read neither its environ nor its mem.
    Run as an unprivileged user (root reads any process's /proc whatever its dumpable flag)."""
    source = Path(__file__).parents[1] / "cockpit" / "runtime" / "keyguard.py"
    code = source.read_text() + _GUARD_CHECK
    key = "sk-ant-api03-" + secrets.token_urlsafe(40)
    env = {"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": key, "ANTHROPIC_AUTH_TOKEN": "tok-" + key[-10:]}
    kwargs: dict = {}
    python = sys.executable
    if os.geteuid() == 0:
        python = shutil.which("python3", path="/usr/bin:/bin") or ""
        if not python:
            pytest.skip("no system python3 to run as an unprivileged user")
        kwargs = {"user": 65534, "group": 65534, "extra_groups": []}
    proc = subprocess.run([python, "-c", code], env=env, cwd="/", capture_output=True, text=True, timeout=60,
                          **kwargs)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["before"] and not got["after"]  # the value left the block /proc/<pid>/environ shows
    assert got["taken"] == ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"] and not got["in_environ"]
    assert got["undumpable"]
    assert "Permission denied" in got["child_err"]  # neither environ nor mem
    assert key not in got["child_out"] and key[-10:] not in got["child_out"]
    assert "PATH=" in got["child_out"]  # (the child's own env printed: the command ran)


def test_claude_code_gets_the_auth_token_through_the_helper_only():
    from cockpit.runtime.claude_code.options import KeyFile, process_env

    kf = KeyFile("tok-" + KEY)
    try:
        env = process_env(RuntimeConfig(auth_token="tok-" + KEY), "abc", kf)
        assert env["ANTHROPIC_API_KEY"] == "" and env["ANTHROPIC_AUTH_TOKEN"] == "" and KEY not in json.dumps(env)
    finally:
        kf.remove()
