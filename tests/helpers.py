"""Small helpers the tests share: a git repository to work in, waiting for a process to be gone,
stopping a Cockpit server a test started, a session manager against the Messages API stand-in
(the ``api`` and ``workspace`` fixtures, which conftest.py offers every test, and
:func:`make_manager`). (``tests/`` is on ``sys.path`` under pytest.)"""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.runtime.pricing import ModelPrice

CALC = "def add(a, b):\n    return a - b\n"
PRICE = ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3, context_window=200000)  # make_manager's


def git(cwd: Path | str, *args: str) -> str:
    """Run git in ``cwd``; its stdout. Raises CalledProcessError when it fails."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, files: dict[str, str] | None = None, untracked: dict[str, str] | None = None) -> Path:
    """A git repository at ``path`` (branch ``main``, a local identity) with ``files`` committed
    (default: a ``calc.py`` whose ``add`` subtracts) and ``untracked`` files written, not added."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "dev@example.com")
    git(path, "config", "user.name", "Dev")
    for name, text in (files if files is not None else {"calc.py": CALC}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
        git(path, "add", name)
    for name, text in (untracked or {}).items():
        (path / name).write_text(text)
    git(path, "commit", "-q", "-m", "init")
    return path


@pytest.fixture
def api():
    """The Messages API stand-in (tests/standin.py), serving on a loopback port for this test."""
    from standin import StandIn

    with StandIn() as s:
        yield s


HELLO = "HELLO-FROM-OUTSIDE"
# a GET of 127.0.0.1:{port} through the sandbox's HTTP proxy, run inside a session (NO_PROXY,
# set to the loopback there, emptied: the test's hosts are on the loopback)
FETCH_THROUGH_PROXY = ("NO_PROXY= python3 -c \"import os, urllib.request as u; "
                       "o = u.build_opener(u.ProxyHandler({{'http': os.environ['HTTP_PROXY']}})); "
                       "print(o.open('http://127.0.0.1:{port}/', timeout=10).read().decode())\"")


@pytest.fixture
def hello_ports():
    """Two HTTP servers on the loopback answering every GET with :data:`HELLO` (one to allow,
    one to refuse): their ports, the servers shut down after the test."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self):
            body = HELLO.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    servers = [ThreadingHTTPServer(("127.0.0.1", 0), Hello) for _ in range(2)]
    for srv in servers:
        Thread(target=srv.serve_forever, daemon=True).start()
    yield tuple(srv.server_address[1] for srv in servers)
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A folder for the sessions to work in, with a README that says staging's port."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("Staging runs on port 8080.\n")
    return ws


def make_manager(api, engine=None, **cfg):
    """A ``SessionManager`` against the stand-in ``api``: model ``test-model`` at
    :data:`PRICE`, two retries, a 10 s timeout, not interactive; ``cfg`` sets any other
    ``RuntimeConfig`` field or overrides these. ``engine``: a ``MemoryEngine`` (None: no notes)."""
    from cockpit.runtime import RuntimeConfig, SessionManager
    from cockpit.runtime.pricing import PricingTable

    base = dict(api_key="test-key", base_url=api.base_url, interactive=False, max_retries=2, timeout=10.0,
                model="test-model")
    base.update(cfg)
    pricing = PricingTable({"test-model": PRICE}, source="test", date="2026-01-01")
    return SessionManager(engine, RuntimeConfig(**base), pricing=pricing)


async def next_event(sub, pred, timeout: float = 60):
    """The first event of subscription ``sub`` that ``pred`` accepts (``timeout`` only bounds a
    failing test)."""
    async def first():
        async for e in sub:
            if pred(e):
                return e
    return await asyncio.wait_for(first(), timeout)


async def wait_for(check, what: str, tries: int = 1200) -> None:
    """Wait until ``check()`` is true; fail the test naming ``what`` (after ~60 s: a bound for a
    failing test only, never a budget a loaded machine can break)."""
    for _ in range(tries):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def wait_gone(pid: int, what: str, tries: int = 1200) -> None:
    """Wait until process ``pid`` no longer exists; fail the test naming ``what`` (after ~60 s: a
    bound for a failing test only, never a budget a loaded machine can break)."""
    for _ in range(tries):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} (pid {pid}) is still running")


def stop_server(sock: Path | None = None) -> None:
    """Stop the Cockpit server listening on ``sock`` (default: the one of this test's data
    folder), if one listens there (SIGKILL if it does not stop)."""
    from cockpit.server.client import BlockingClient, ServerError, ServerHung, wait_for_stop

    try:
        client = BlockingClient(sock)
    except ServerHung:
        raise  # one is there but does not answer: the test left it stopped
    except ServerError:
        return  # none listens
    with client as c:
        pid = c.call("server.status")["pid"]
        try:
            c.call("server.stop")
        except Exception:
            pass
    if not wait_for_stop(pid, 30):
        os.kill(pid, signal.SIGKILL)


def assert_implements(impl: type, protocol: type) -> None:
    """``impl`` has every member ``protocol`` names: each method, with the same async-ness and a
    signature that accepts every parameter the protocol passes (by name, or through ``**kwargs``)
    and needs no other; each property or attribute (on the class, or as a dataclass field). What
    a fake must satisfy so that it cannot drift from the real class it stands in for."""
    import dataclasses
    import inspect
    import re

    fields = {f.name for f in dataclasses.fields(impl)} if dataclasses.is_dataclass(impl) else set()
    for klass in impl.__mro__:  # attributes set in __init__ and the like: ``self.name = …``
        try:
            fields |= set(re.findall(r"self\.(\w+)\s*(?::[^=\n]*)?=", inspect.getsource(klass)))
        except (OSError, TypeError):
            pass
    members: dict[str, object] = {}
    for klass in reversed(protocol.__mro__):
        if klass is object or not getattr(klass, "_is_protocol", False):
            continue
        members.update({n: None for n in getattr(klass, "__annotations__", {})})
        members.update({n: v for n, v in vars(klass).items()
                        if not n.startswith("_") and (inspect.isfunction(v) or isinstance(v, property))})
    problems = []
    for name, want in members.items():
        if not (hasattr(impl, name) or name in fields):
            problems.append(f"no {name}")
            continue
        if not inspect.isfunction(want):
            continue
        have = inspect.getattr_static(impl, name)
        if isinstance(have, (staticmethod, classmethod)):
            have = have.__func__
        if not callable(have):
            problems.append(f"{name} is not a method")
            continue
        if inspect.iscoroutinefunction(want) != inspect.iscoroutinefunction(have):
            problems.append(f"{name}: async-ness differs")
        w = [p for p in inspect.signature(want).parameters.values() if p.name != "self"]
        h = [p for p in inspect.signature(have).parameters.values() if p.name != "self"]
        var_kw = any(p.kind is p.VAR_KEYWORD for p in h)
        var_pos = any(p.kind is p.VAR_POSITIONAL for p in h)
        names = {p.name for p in h}
        for p in w:
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            if p.name not in names and not var_kw and not (var_pos and p.kind is p.POSITIONAL_ONLY):
                problems.append(f"{name}: does not take {p.name}")
        wanted = {p.name for p in w}
        for p in h:
            if p.default is p.empty and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name not in wanted:
                problems.append(f"{name}: needs {p.name}, which the protocol never passes")
    assert not problems, f"{impl.__name__} does not implement {protocol.__name__}: {'; '.join(problems)}"

def fake_gh(tmp_path: Path, monkeypatch, with_cwd: bool = False) -> Path:
    """A ``gh`` on PATH that records its arguments (JSON: the list, or ``{"argv", "cwd"}`` with
    ``with_cwd``) and prints a pull request's URL."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "gh-args"
    script = bin_dir / "gh"
    what = "{'argv': sys.argv[1:], 'cwd': os.getcwd()}" if with_cwd else "sys.argv[1:]"
    script.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                      f"open({str(record)!r}, 'w').write(json.dumps({what}))\n"
                      "print('https://github.com/acme/calc/pull/7')\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


def with_remote(repo: Path, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    return remote
