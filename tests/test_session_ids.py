"""A session id typed by the user: a unique prefix or suffix of at least 4 characters. One that
matches several sessions lists them (with their tasks, short); one too short says so."""

from types import SimpleNamespace

import pytest

from cockpit.runtime import RuntimeConfig, SessionManager, ids


@pytest.fixture
def mgr():
    """A manager that holds stand-ins (id, task) of sessions: only their ids are looked up."""
    mgr = SessionManager(None, RuntimeConfig())
    yield mgr
    mgr._sessions.clear()  # (nothing to stop)


def _hold(mgr: SessionManager, *rows: tuple[str, str]) -> SessionManager:
    for sid, task in rows:
        mgr._sessions[sid] = SimpleNamespace(id=sid, task=task)  # type: ignore[assignment]
    return mgr


def test_an_ambiguous_prefix_lists_the_matches_with_their_tasks(mgr):
    _hold(mgr, ("1nh1txh4364c", "fix the flaky test in the parser module"), ("1nh1wq4r7mza", "write docs"),
               ("2abcdefghijk", "other"))
    with pytest.raises(KeyError) as err:
        mgr.get("1nh1")
    assert err.value.args[0] == ("session id '1nh1' is ambiguous: it matches 1nh1txh4364c (fix the flaky test "
                                 "in the par…), 1nh1wq4r7mza (write docs); give more characters — ids begin with "
                                 "the time they were made, their ends tell them apart: 364c, 7mza")
    assert mgr.get("7mza").id == "1nh1wq4r7mza"
    assert mgr.get("1nh1t").id == "1nh1txh4364c"


def test_a_too_short_prefix_says_how_many_characters_it_needs(mgr):
    _hold(mgr, ("1nh1txh4364c", "t"))
    with pytest.raises(KeyError) as err:
        mgr.get("1nh")
    assert err.value.args[0] == "no session '1nh': a prefix or suffix needs at least 4 characters (see cockpit ls)"
    with pytest.raises(KeyError) as err:
        mgr.get("zzzz")
    assert err.value.args[0] == "no session 'zzzz' (see cockpit ls)"


def test_many_matches_are_counted_not_all_listed():
    found = [(f"1nh1{i:08d}", "t") for i in range(7)]
    line = ids.not_one("1nh1", found)
    assert "1nh100000004 (t) and 2 more; give more characters" in line and "\n" not in line
    assert line.endswith("their ends tell them apart: 0000, 0001, 0002, 0003, 0004")
