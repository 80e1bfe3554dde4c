"""Several hosts in one grid, without servers: host ids, the hosts' configuration, the runtime
over fake hosts (routing, a drop, back-off, the replay) — see tests/test_tui_hosts.py for the app
over two real servers."""

from __future__ import annotations

import asyncio

import pytest
from tui_fakes import FakeManager

from cockpit import events as ev
from cockpit import hostids
from cockpit.cli import main
from cockpit.errors import CockpitError
from cockpit.events import SessionStatus as S
from cockpit.runtime import RuntimeConfig
from cockpit.runtime.spawn import SpawnSpec
from cockpit.server.host_config import GridHost, grid_hosts
from cockpit.server.hosts import Backoff, Host, HostUnavailable, MultiHostRuntime, qualify_event


def test_host_ids_qualify_remote_sessions_and_keep_local_ones_plain():
    assert hostids.qualify("local", "abc") == "abc"
    assert hostids.qualify("box", "abc") == "box:abc"
    assert hostids.split("box:abc") == ("box", "abc")
    assert hostids.split("abc") == ("local", "abc")
    for bad in ("", "a:b", "two words", " box"):
        with pytest.raises(ValueError, match="host name"):
            hostids.check_name(bad)
    spawned = ev.SessionSpawned("s2", "t", "m", "/w", "/t.jsonl", True, continued_from="s1")
    moved = qualify_event("box", spawned)
    assert (moved.session_id, moved.continued_from) == ("box:s2", "box:s1")
    assert qualify_event("local", spawned) is spawned


def test_backoff_doubles_up_to_its_cap():
    b = Backoff(first=0.5, factor=2.0, cap=5.0)
    assert [b.delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_grid_hosts_from_flags_or_config(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[grid]\nhosts = ["local", "box", "gpu"]\n'
                   '[hosts.box]\nsocket = "/tmp/box.sock"\nworkspace = "/srv/app"\nnotes = "/srv/notes"\n'
                   '[hosts.gpu]\nssh = "me@gpu.example"\n')
    hosts = grid_hosts(None, cfg)
    assert [h.name for h in hosts] == ["local", "box", "gpu"]
    assert hosts[1] == GridHost("box", socket="/tmp/box.sock", workspace="/srv/app", notes="/srv/notes")
    assert hosts[2].ssh == "me@gpu.example" and not hosts[2].socket
    # --host wins over [grid]; a name not configured is an ssh destination
    assert grid_hosts(["box", "me@other"], cfg)[1] == GridHost("me@other", ssh="me@other")
    assert grid_hosts(None, tmp_path / "none.toml") == []


@pytest.mark.parametrize("toml, names, message", [
    ('[hosts.box]\nsokcet = "/x"\n', ["box"], "unknown key 'sokcet' in [hosts.box]"),
    ('[hosts.box]\nsocket = "/x"\nssh = "b"\n', ["box"], "has both ssh and socket"),
    ('[hosts.box]\ntimeout = -1\n', ["box"], "must be a number of seconds > 0"),
    ('[grid]\nhosts = "box"\n', None, "grid.hosts must be a list of host names"),
    ("", ["local", "local"], "host local is named twice"),
    ("", ["a:b"], "a host name is a word without ':'"),
    ('[hosts.box]\nssh = "me@box"\n', ["box", "me@box"], "hosts box and me@box are the same ssh destination me@box"),
    ('[hosts.a]\nsocket = "/s"\n[hosts.b]\nsocket = "/s"\n', ["a", "b"], "hosts a and b are the same socket /s"),
])
def test_a_bad_host_configuration_is_one_line(tmp_path, toml, names, message):
    cfg = tmp_path / "config.toml"
    cfg.write_text(toml)
    with pytest.raises(CockpitError) as err:
        grid_hosts(names, cfg)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_config_file_accepts_grid_and_hosts_tables(tmp_path, monkeypatch):
    from cockpit.runtime.config import read_config_file

    cfg = tmp_path / "config.toml"
    cfg.write_text('[grid]\nhosts = ["local", "box"]\n[hosts.box]\nsocket = "/tmp/box.sock"\n')
    read_config_file(cfg)  # no "unknown key"
    cfg.write_text('[grid]\nhost = ["local"]\n')
    with pytest.raises(ValueError, match="unknown key 'host' in \\[grid\\]"):
        read_config_file(cfg)
    # what the app refuses, `cockpit config check` refuses too (one parser for each table)
    for text, message in (('[grid]\nhosts = "local"\n', "grid.hosts must be a list of host names"),
                          ('[grid]\nhosts = ["local", 3]\n', "grid.hosts must be a list of host names"),
                          ('[hosts."a:b"]\nssh = "box"\n', "a host name is a word without ':'")):
        cfg.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_config_file(cfg)


def test_host_with_no_server_is_refused_in_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--host", "local", "--host", "box", "--no-server"]) == 2
    assert "--host shows the sessions of hosts' servers: drop --no-server" in capsys.readouterr().err


# -- the runtime over fake hosts ----------------------------------------------------------------
class Hosts:
    """Connectors the test steers: each host's next connection is a FakeManager, or an error."""

    def __init__(self, *names: str):
        self.next: dict[str, list] = {n: [] for n in names}
        self.current: dict[str, FakeManager] = {}

    def connector(self, name: str):
        async def connect() -> FakeManager:
            plan = self.next[name]
            item = plan.pop(0) if plan else OSError(f"{name} is down")
            if isinstance(item, Exception):
                raise item
            self.current[name] = item
            return item

        return connect

    async def attach(self, **options) -> MultiHostRuntime:
        """A runtime over these hosts, in their order, each reached through its connector."""
        return await MultiHostRuntime.attach([Host(n, self.connector(n)) for n in self.next], RuntimeConfig(),
                                             **options)


def local_and_box(box_task: str) -> Hosts:
    """Two hosts: ``local`` with no session, ``box`` with one (``s1``, its task ``box_task``)."""
    hosts = Hosts("local", "box")
    hosts.next["local"].append(FakeManager())
    hosts.next["box"].append(FakeManager([ev.SessionSpawned("s1", box_task, "m", "/w", "/t", True)]))
    return hosts


async def events_until(sub, cond, limit=200):
    seen = []
    async with asyncio.timeout(30):  # a guard only: each event comes as soon as its cause
        async for event in sub:
            seen.append(event)
            if cond(event) or len(seen) >= limit:
                return seen
    return seen


async def test_calls_go_to_the_owning_host_with_its_own_ids():
    hosts = local_and_box("old")
    rt = await hosts.attach(backoff=Backoff(0.01, 2, 0.05))
    try:
        snap = rt.snapshot()
        assert [(e.host, e.state) for e in snap if isinstance(e, ev.HostStatus)] == [("local", "connected"),
                                                                                     ("box", "connected")]
        assert [e.session_id for e in snap if not isinstance(e, ev.HostStatus)] == ["box:s1"]
        here = await rt.spawn(SpawnSpec("a task"))
        there = await rt.spawn(SpawnSpec("b task", workspace="/srv"), host="box")
        assert here.id == "a00001" and there.id == "box:a00001"
        assert hosts.current["box"].spawn_options[0]["workspace"] == "/srv"
        await rt.kill("box:a00001")
        await rt.answer("a00001", "r1", True)
        await rt.send("box:s1", "more")
        reviewed = await rt.review("box:a00001", "merge")
        assert hosts.current["box"].killed == ["a00001"] and hosts.current["local"].answers[0][:2] == ("a00001", "r1")
        assert hosts.current["box"].sent == [("s1", "more")] and reviewed.session_id == "box:a00001"
        with pytest.raises(KeyError, match="no host 'gpu'"):
            await rt.kill("gpu:x")
        with pytest.raises(ValueError, match="no host 'gpu' in this grid"):
            await rt.spawn(SpawnSpec("c task"), host="gpu")
    finally:
        await rt.aclose()


async def test_a_drop_retries_with_back_off_then_replays_the_host():
    hosts = local_and_box("t")
    rt = await hosts.attach(backoff=Backoff(0.01, 2, 0.04))
    sub = rt.subscribe()
    try:
        hosts.current["box"].emit(ev.StatusChanged("s1", S.NEEDS_APPROVAL))
        await events_until(sub, lambda e: isinstance(e, ev.StatusChanged))
        await hosts.current["box"].aclose()  # the connection ends; two attempts fail
        down = await events_until(sub, lambda e: isinstance(e, ev.HostStatus) and e.retry_in == 0.04)
        states = [(e.state, e.retry_in) for e in down if isinstance(e, ev.HostStatus)]
        assert states[:4] == [("reconnecting", 0.0), ("reconnecting", 0.01), ("reconnecting", 0.02),
                              ("reconnecting", 0.04)]
        assert "box is down" in down[-1].detail
        with pytest.raises(HostUnavailable, match="host box is reconnecting"):
            await rt.kill("box:s1")
        assert rt.host_state("box") == "reconnecting" and rt.host_state("local") == "connected"
        # back, with the session's whole log: it replays between "replaying" and "connected"
        hosts.next["box"].append(FakeManager([ev.SessionSpawned("s1", "t", "m", "/w", "/t", True),
                                              ev.StatusChanged("s1", S.NEEDS_APPROVAL),
                                              ev.StatusChanged("s1", S.WAITING)]))
        back = await events_until(sub, lambda e: isinstance(e, ev.HostStatus) and e.state == "connected")
        back = [e for e in back if not (isinstance(e, ev.HostStatus) and e.state == "reconnecting")]
        assert [type(e).__name__ for e in back] == ["HostStatus", "SessionSpawned", "StatusChanged", "StatusChanged",
                                                    "HostStatus"]
        assert back[0].state == "replaying" and {e.session_id for e in back[1:4]} == {"box:s1"}
        await rt.kill("box:s1")
        assert hosts.current["box"].killed == ["s1"]
    finally:
        await rt.aclose()


async def test_an_unreachable_host_does_not_hold_up_attach():
    hosts = Hosts("local", "box")
    hosts.next["local"].append(FakeManager())
    gate = asyncio.Event()

    async def hangs() -> FakeManager:
        await gate.wait()  # a host that never answers (its connector's own timeout aside)
        raise OSError("never")

    rt = await MultiHostRuntime.attach([Host("local", hosts.connector("local")), Host("box", hangs)],
                                       RuntimeConfig(), first_wait=0.2, connect_timeout=0.5,
                                       backoff=Backoff(0.01, 2, 0.01))
    sub = rt.subscribe()
    try:
        assert rt.host_state("local") == "connected" and rt.host_state("box") == "connecting"
        assert (await rt.spawn(SpawnSpec("works"))).id == "a00001"
        # a connector that never returns is a failed attempt once its time is up, said in one line
        seen = await events_until(sub, lambda e: isinstance(e, ev.HostStatus) and e.host == "box")
        assert (seen[-1].state, seen[-1].detail) == ("unreachable", "no connection within 0.5 s (hung?)")
    finally:
        await rt.aclose()


async def test_a_host_speaks_only_for_its_own_sessions():
    """A host's server that sends a HostStatus (only the grid makes those) or an event of no session
    cannot mark another host reconnecting, reset its panes for a replay, add hosts to the header or
    put a session on the local host: the grid drops them, at attach and in the stream."""
    hosts = Hosts("local", "box")
    hosts.next["local"].append(FakeManager())
    hosts.next["box"].append(FakeManager([ev.HostStatus("", "local", "replaying"),
                                          ev.SessionSpawned("", "forged", "m", "/w", "/t", True),
                                          ev.SessionSpawned("s1", "t", "m", "/w", "/t", True)]))
    rt = await MultiHostRuntime.attach([Host(n, hosts.connector(n)) for n in ("local", "box")], RuntimeConfig(),
                                       backoff=Backoff(0.01, 2, 0.05))
    sub = rt.subscribe()
    try:
        snap = rt.snapshot()
        assert [(e.host, e.state) for e in snap if isinstance(e, ev.HostStatus)] == [("local", "connected"),
                                                                                     ("box", "connected")]
        assert [e.session_id for e in snap if not isinstance(e, ev.HostStatus)] == ["box:s1"]
        hosts.current["box"].emit(ev.HostStatus("", "local", "reconnecting", "forged"),
                                  ev.HostStatus("", "gpu", "connected"),
                                  ev.StatusChanged("", S.NEEDS_APPROVAL),
                                  ev.StatusChanged("s1", S.WAITING))
        seen = await events_until(sub, lambda e: isinstance(e, ev.StatusChanged) and e.session_id == "box:s1")
        assert [(type(e).__name__, e.session_id) for e in seen] == [("StatusChanged", "box:s1")]
        assert rt.host_state("local") == "connected"
    finally:
        await rt.aclose()


async def test_a_host_flooding_events_the_app_does_not_read_is_reconnected_once_it_catches_up(monkeypatch):
    """The grid's queue to the app is bounded: a host whose events pile up past it is dropped
    (saying why) and replayed only once the app has read half the backlog."""
    from cockpit.server import rpc

    monkeypatch.setattr(rpc, "MAX_PENDING_EVENTS", 20)
    hosts = local_and_box("t")
    hosts.next["box"].append(FakeManager([ev.SessionSpawned("s1", "t", "m", "/w", "/t", True)]))
    rt = await hosts.attach(backoff=Backoff(0.01, 2, 0.04))
    sub = rt.subscribe()
    try:
        for n in range(40):  # the app reads none of them yet
            hosts.current["box"].emit(ev.TextDelta("s1", f"{n} "))
        seen = await events_until(sub, lambda e: isinstance(e, ev.HostStatus) and e.state == "connected", 500)
        texts = [e for e in seen if isinstance(e, ev.TextDelta)]
        assert len(texts) < 40  # what came past the bound was dropped with the link ...
        drop = next(e for e in seen if isinstance(e, ev.HostStatus) and e.state == "reconnecting")
        assert "events waiting to be shown" in drop.detail
        assert [e for e in seen if isinstance(e, ev.SessionSpawned)][-1].session_id == "box:s1"  # ... then replayed
    finally:
        await rt.aclose()


@pytest.mark.parametrize("first", ["local", "box"])
async def test_one_server_under_two_names_is_kept_by_the_first_named_whichever_answers_first(first):
    """``box`` reaches the server ``local`` reached (the same ``instance`` in both hellos): at
    attach, ``local`` keeps it whichever of the two connected first; ``box`` is refused with
    why, none of its sessions shown, and refused again when it retries."""
    def server() -> FakeManager:
        m = FakeManager([ev.SessionSpawned("s1", "the task", "m", "/w", "/t", True)])
        m.server_instance = "one-server"  # type: ignore[attr-defined]
        return m

    order: list[str] = []
    turn = {n: asyncio.Event() for n in ("local", "box")}
    turn[first].set()

    def connector(name: str):
        async def connect() -> FakeManager:
            await turn[name].wait()
            order.append(name)
            for other in turn.values():
                other.set()  # the other host's turn, once this one has connected
            return server()
        return connect

    rt = await MultiHostRuntime.attach([Host(n, connector(n)) for n in ("local", "box")], RuntimeConfig(),
                                       backoff=Backoff(0.01, 2, 0.02))
    sub = rt.subscribe()
    try:
        assert order[:2] == [first, "local" if first == "box" else "box"]
        snap = rt.snapshot()
        states = {e.host: e for e in snap if isinstance(e, ev.HostStatus)}
        assert (states["local"].state, states["box"].state) == ("connected", "unreachable")
        assert "the same Cockpit server as host local" in states["box"].detail
        assert [e.session_id for e in snap if not isinstance(e, ev.HostStatus)] == ["s1"]  # once, under local
        assert rt.default_host == "local"
        again = await events_until(sub, lambda e: isinstance(e, ev.HostStatus) and e.host == "box")
        assert again[-1].state == "unreachable" and "host local" in again[-1].detail  # a retry is refused too
        assert not any(getattr(e, "session_id", "").startswith("box:") for e in again)
    finally:
        await rt.aclose()


async def test_with_the_twin_named_first_spawns_that_name_no_host_go_to_it():
    """``--host box --host local`` where box is this machine's server: ``local`` is the refused
    name, so a spawn naming no host (the dialog's default) goes to box, not to a host that never
    comes back."""
    def server() -> FakeManager:
        m = FakeManager()
        m.server_instance = "one-server"  # type: ignore[attr-defined]
        return m

    hosts = Hosts("box", "local")
    hosts.next["box"].append(server())
    hosts.next["local"].append(server())
    rt = await hosts.attach(backoff=Backoff(0.01, 2, 0.02))
    try:
        assert rt.host_state("box") == "connected" and rt.host_state("local") == "unreachable"
        assert rt.default_host == "box"
        ref = await rt.spawn(SpawnSpec("a task"))
        assert ref.id.startswith("box:") and hosts.current["box"].spawned
    finally:
        await rt.aclose()
