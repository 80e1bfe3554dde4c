"""Spawn options are spelled once (cockpit.runtime.spawn.SpawnOptions): the manager, the remote
client and the server agree, and an unknown option or a wrong type is refused, never dropped."""

import inspect

import pytest

from cockpit.runtime import RuntimeConfig, SessionManager
from cockpit.runtime.spawn import SpawnOptionError, SpawnOptions
from cockpit.server.remote import RemoteRuntime


def test_the_managers_spawn_takes_exactly_the_spawn_options():
    params = set(inspect.signature(SessionManager.spawn).parameters) - {"self", "task", "config", "engine"}
    assert params == set(SpawnOptions.names())


class _Client:
    def __init__(self):
        self.calls = []

    async def call(self, method, **params):
        self.calls.append((method, params))
        return {"id": "s1", "task": params["task"], "status": "queued"}


async def test_the_remote_client_refuses_an_unknown_option_and_sends_the_rest(tmp_path):
    rt = RemoteRuntime.__new__(RemoteRuntime)
    rt.client, rt.notes, rt.index, rt.config = _Client(), str(tmp_path), None, RuntimeConfig(interactive=False)
    with pytest.raises(TypeError, match="permision_mode"):
        await rt.spawn("t", permision_mode="plan")
    assert rt.client.calls == []
    info = await rt.spawn("t", workspace=str(tmp_path), permission_mode="plan", backend="acp:claude", sandbox=False)
    assert info.id == "s1"
    method, params = rt.client.calls[0]
    assert method == "spawn" and params["permission_mode"] == "plan" and params["backend"] == "acp:claude"
    assert params["sandbox"] is False and params["interactive"] is False and params["workspace"] == str(tmp_path)


@pytest.mark.parametrize("params, message", [
    ({"modle": "x"}, "unknown spawn option 'modle'"),
    ({"top_k": "5"}, "top_k must be an integer"),
    ({"top_k": True}, "top_k must be an integer"),
    ({"sandbox": "no"}, "sandbox must be true or false"),
    ({"max_budget_usd": "1"}, "max_budget_usd must be a number"),
])
def test_the_server_side_reading_refuses_unknown_keys_and_wrong_types(params, message):
    with pytest.raises(SpawnOptionError, match=message):
        SpawnOptions.from_wire({"task": "t", **params}, ignore=("task",))


def test_the_server_side_reading_keeps_the_values():
    got = SpawnOptions.from_wire({"task": "t", "top_k": 3, "max_budget_usd": 2, "backend": "acp:opencode",
                                  "notes": "/n"}, ignore=("task", "notes"))
    assert got.top_k == 3 and got.max_budget_usd == 2.0 and got.backend == "acp:opencode" and got.model is None
