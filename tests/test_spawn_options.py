"""A spawn is one SpawnSpec (cockpit.runtime.spawn) from every face to the manager: it crosses the
wire unchanged, each bad option is one line naming it (in Python, the CLI and the server), and an
unknown option is refused, never dropped."""

import dataclasses
import inspect
from pathlib import Path

import pytest

from cockpit import wire
from cockpit.cli import main
from cockpit.runtime import RuntimeConfig, SessionManager
from cockpit.runtime.spawn import SpawnSpec, SpawnSpecError
from cockpit.server import rpc
from cockpit.server.client import AsyncClient, RemoteError
from cockpit.server.daemon import Server
from cockpit.server.methods import METHODS
from cockpit.server.remote import RemoteRuntime

FULL = dict(model="claude-x", preseed=False, top_k=3, interactive=True, permission_mode="plan", worktree=False,
            tools="portable", backend="acp:claude", max_budget_usd=2.5, max_budget_tokens=5000, sandbox=False,
            network="on")

# (option, bad value, the one line it gets)
BAD = [
    ("task", "   ", "task must be text that is not blank, got '   '"),
    ("task", 5, "task must be a string, got 5"),
    ("workspace", "", "workspace must be a folder path (no NUL), got ''"),
    ("model", ["m"], "model must be a string, got ['m']"),
    ("preseed", "no", "preseed must be true or false, got 'no'"),
    ("top_k", 0, "top_k must be an integer ≥ 1, got 0"),
    ("top_k", "5", "top_k must be an integer, got '5'"),
    ("top_k", True, "top_k must be an integer, got True"),
    ("interactive", 1, "interactive must be true or false, got 1"),
    ("permission_mode", "yolo", "permission_mode must be one of default, acceptEdits, plan, bypassPermissions, auto, "
                                "got 'yolo'"),
    ("worktree", "false", "worktree must be true or false, got 'false'"),
    ("tools", "fancy", "tools must be one of 'anthropic', 'portable', got 'fancy'"),
    ("backend", "", "backend must be a non-empty string (no NUL), got ''"),
    ("max_budget_usd", -1, "max_budget_usd must be a number of dollars > 0, got -1"),
    ("max_budget_usd", "1", "max_budget_usd must be a number, got '1'"),
    ("max_budget_tokens", 2.5, "max_budget_tokens must be an integer, got 2.5"),
    ("max_budget_tokens", 0, "max_budget_tokens must be an integer ≥ 1, got 0"),
    ("sandbox", "off", "sandbox must be true or false, got 'off'"),
    ("network", "maybe", "network must be one of 'off', 'on', 'allow', got 'maybe'"),
]


def test_every_option_has_a_bad_value_case():
    assert {name for name, _, _ in BAD} == {f.name for f in dataclasses.fields(SpawnSpec)}


@pytest.mark.parametrize("name, value, line", BAD)
def test_each_bad_option_is_one_line_naming_it(name, value, line):
    given = {"task": "t", name: value}
    with pytest.raises(SpawnSpecError) as err:
        SpawnSpec(**given)
    assert str(err.value) == line and "\n" not in line
    with pytest.raises(SpawnSpecError, match=f"^{line[:20]}"):  # the wire reading says the same
        SpawnSpec.from_wire(given)


def test_the_spec_round_trips_through_its_wire_form_and_the_servers_reading():
    spec = SpawnSpec("fix the test", workspace="/src/app", **FULL)
    assert SpawnSpec.from_wire(spec.to_wire()) == spec
    params = {**spec.to_wire(), "notes": "/n", "index": None, "config": {"model": "m"}}
    bound = METHODS["spawn"].bind(params)
    assert bound == {"spec": spec, "notes": "/n", "config": {"model": "m"}}
    assert SpawnSpec("t", max_budget_usd=2).max_budget_usd == 2.0  # a JSON integer is a number
    assert SpawnSpec("t", workspace=Path("/w")).workspace == "/w"  # a Path is kept as its text


def test_an_unknown_option_is_refused_by_name():
    with pytest.raises(SpawnSpecError, match="unknown spawn option 'permision_mode'"):
        SpawnSpec.from_wire({"task": "t", "permision_mode": "plan"})
    with pytest.raises(SpawnSpecError, match="unknown parameter 'permision_mode' for spawn"):
        METHODS["spawn"].bind({"task": "t", "workspace": "/w", "permision_mode": "plan"})
    with pytest.raises(TypeError, match="permision_mode"):
        SpawnSpec("t", permision_mode="plan")  # type: ignore[call-arg]


def test_the_runtimes_spawn_takes_one_spec():
    for cls in (SessionManager, RemoteRuntime):
        params = inspect.signature(cls.spawn).parameters
        assert list(params)[:2] == ["self", "spec"] and all(
            p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(params.values())[2:]), cls
    spawn = METHODS["spawn"]
    assert [p.name for p in spawn.params] == [f.name for f in dataclasses.fields(SpawnSpec)] + [
        "notes", "index", "config"]


@pytest.fixture
async def server(tmp_path, monkeypatch):
    """A server in this process whose manager records the specs it is asked to spawn."""
    monkeypatch.chdir(tmp_path)
    srv = Server(RuntimeConfig(api_key="test-key", base_url="http://127.0.0.1:9", max_retries=0))
    await srv.start()
    seen: list[SpawnSpec] = []

    async def spawn(spec, *, config=None, engine=...):
        seen.append(spec)
        raise ValueError("recorded, not started")

    srv.mgr.spawn = spawn  # type: ignore[method-assign]
    try:
        yield srv, seen
    finally:
        await srv.shutdown()


async def test_a_spec_crosses_the_server_unchanged(server, tmp_path):
    srv, seen = server
    rt = RemoteRuntime(await AsyncClient.connect(srv.socket_path), RuntimeConfig(interactive=False))
    try:
        spec = SpawnSpec("fix it", workspace=str(tmp_path), **FULL)
        with pytest.raises(RemoteError, match="recorded, not started"):
            await rt.spawn(spec)
        assert seen == [spec]
        # left open: the workspace becomes the client's folder (absolute), interactive the client's
        with pytest.raises(RemoteError):
            await rt.spawn(SpawnSpec("t"))
        assert seen[1] == SpawnSpec("t", workspace=str(tmp_path.resolve()), interactive=False)
    finally:
        await rt.aclose()


async def test_a_runtime_of_one_host_refuses_any_host_but_none(server, tmp_path):
    """The host is ``Runtime.spawn``'s keyword (a grid routes by it); a runtime of one host takes
    None only, and says so in one line — nothing reaches the server."""
    srv, seen = server
    rt = RemoteRuntime(await AsyncClient.connect(srv.socket_path), RuntimeConfig())
    mgr = SessionManager(None, RuntimeConfig(api_key="k"))
    try:
        for runtime in (rt, mgr):
            with pytest.raises(ValueError, match="^this runtime has one host: cannot spawn on host 'box'$"):
                await runtime.spawn(SpawnSpec("t", workspace=str(tmp_path)), host="box")
        assert seen == []
        with pytest.raises(RemoteError, match="recorded, not started"):  # None: this host
            await rt.spawn(SpawnSpec("t", workspace=str(tmp_path)), host=None)
        assert len(seen) == 1
    finally:
        await rt.aclose()
        await mgr.aclose()


async def test_the_server_refuses_each_bad_option_and_an_unknown_one_with_its_line(server, tmp_path):
    srv, seen = server
    client = await AsyncClient.connect(srv.socket_path)
    try:
        for name, value, line in BAD:
            params = {"task": "t", "workspace": str(tmp_path), name: value}
            with pytest.raises(RemoteError) as err:
                await client.call("spawn", **params)
            assert err.value.code == rpc.INVALID_PARAMS and err.value.message == line, name
        with pytest.raises(RemoteError) as err:
            await client.call("spawn", task="t", workspace=str(tmp_path), permision_mode="plan")
        assert err.value.code == rpc.INVALID_PARAMS and "unknown parameter 'permision_mode'" in err.value.message
        with pytest.raises(RemoteError) as err:  # a setting the server does not know is not dropped either
            await client.call("spawn", task="t", workspace=str(tmp_path), config={"api_kee": "k"})
        assert err.value.code == rpc.INVALID_PARAMS and "unknown config key 'api_kee'" in err.value.message
        with pytest.raises(RemoteError) as err:
            await client.call("spawn", task="t", workspace="relative")
        assert err.value.code == rpc.INVALID_PARAMS and err.value.message.startswith("workspace must be an absolute")
        assert seen == []  # nothing reached the manager
    finally:
        await client.close()


@pytest.mark.parametrize("flags, line", [
    (["--top-k", "0"], "--top-k must be an integer ≥ 1, got 0"),
    (["--max-budget-usd", "0"], "--max-budget-usd must be a number of dollars > 0, got 0.0"),
    (["--max-budget-usd", "inf"], "--max-budget-usd must be a number of dollars > 0, got inf"),
    (["--max-budget-tokens", "-3"], "--max-budget-tokens must be an integer ≥ 1, got -3"),
    (["--backend", ""], "--backend must be a non-empty string (no NUL), got ''"),
    (["--model", ""], "--model must be a non-empty string (no NUL), got ''"),
])
def test_cockpit_run_says_a_bad_option_in_one_line_naming_the_flag(flags, line, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    assert main(["run", "a task", "--no-server", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"cockpit: error: {line}"


def test_param_errors_name_the_parameter():
    with pytest.raises(wire.ParamError) as err:
        METHODS["wait"].bind({"ids": ["a"], "until": "later"})
    assert str(err.value) == "until must be one of 'final', 'idle', got 'later'" and err.value.name == "until"
    with pytest.raises(wire.ParamError, match="^ids is required$"):
        METHODS["wait"].bind({})
    with pytest.raises(wire.ParamError, match="^notes must be an absolute path"):
        METHODS["memory.search"].bind({"query": "q", "notes": "notes"})
