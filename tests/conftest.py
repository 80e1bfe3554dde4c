"""Shared test setup: offline model loading, and per-user state kept out of the real home."""

import os
import sys

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

# Bytecode is written (the gitignored __pycache__ folders) even where PYTHONDONTWRITEBYTECODE is
# set, as in many containers: else every worker compiles and assertion-rewrites every test module
# anew, and each of the suite's ~200 Python subprocesses (servers, bridges, CLIs) compiles
# Cockpit's sources again (collection alone: ≈ 12 → 7 CPU-s a worker). Subprocesses inherit it.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from helpers import api, hello_ports, workspace  # noqa: E402, F401 - shared fixtures (tests/helpers.py), offered to every test

# The files that take longest, in the order a worker should start them (the rest follow in their
# usual order). A file stays on one worker (``--dist loadfile``), so the two workers end together
# only when the long files do not come last; `--no-loadscope-reorder` (pyproject.toml) keeps this
# order instead of xdist's, which starts the files with the most tests first.
LONGEST_FIRST = (
    "test_server.py", "test_ssh_hosts.py", "test_tui_coding.py", "test_tui_app.py", "test_tui_ship.py",
    "test_tui_hosts.py", "test_acp_agents.py", "test_tui_live.py", "test_acp.py", "test_claude_code.py",
    "test_web.py", "test_memory_agents.py", "test_encoder_reference.py", "test_sandbox_sessions.py",
    "test_memory_robust.py", "test_tui_server.py", "test_tui_paging.py", "test_ship.py",
    "test_runtime_coding.py",
)


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: two workers a core (at most 16). Much of the suite waits on other processes
    (servers, sshd, agents, a browser), so one worker a core left the cores idle a third of the
    time; measured on two cores: 205-224 s with two workers, 176 s with three or four."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(16, 2 * cores)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file keeps its order


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory, monkeypatch):
    """Every test gets its own COCKPIT_DATA_DIR (index cache, sessions, config, UI state), and
    clients run in-process unless a test asks for the server (``COCKPIT_NO_SERVER`` unset); a
    test's server does not load the embedding model before it needs it (``COCKPIT_PREWARM=0``,
    except where a test asks for it)."""
    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path_factory.mktemp("cockpit-data")))
    monkeypatch.setenv("COCKPIT_NO_SERVER", "1")
    monkeypatch.setenv("COCKPIT_PREWARM", "0")  # a test's server loads the model when it needs it
    yield
    from cockpit.runtime import keyguard

    keyguard.forget()  # a key an in-process run took out of the environment is not the next test's


@pytest.fixture(autouse=True)
async def _managers_closed(monkeypatch):
    """Every ``SessionManager`` a test makes is closed when the test ends, also when an assert
    failed before the test's own ``aclose()``: its sessions, shells and subscriptions do not
    leak into the next test (``aclose`` is idempotent)."""
    from cockpit.runtime.manager import SessionManager

    made: list[SessionManager] = []
    init = SessionManager.__init__

    def tracked(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(SessionManager, "__init__", tracked)
    yield
    for mgr in made:
        await mgr.aclose()


@pytest.fixture(autouse=True, scope="session")
def _onnx_model_cache(request, tmp_path_factory):
    """The MiniLM graph built for ONNX Runtime (memory/onnx_model.py) is kept in pytest's own
    cache folder, so a test run builds it at most once (and usually reuses the last run's)."""
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    if cache is not None:
        folder = cache.mkdir("cockpit-onnx-models")
    else:
        folder = tmp_path_factory.mktemp("cockpit-onnx-models")
    os.environ["COCKPIT_MODEL_CACHE"] = str(folder)
