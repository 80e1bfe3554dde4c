"""`cockpit worktrees merge` of a server's session that conflicts says what to do next."""

from __future__ import annotations

from cockpit import worktrees_cli
from cockpit.server import client as client_module


class _Client:
    message = "merge conflict in app.py: nothing was merged; the branch cockpit/1nh2abcd/x is kept"

    def __init__(self, *_a, **_k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def call(self, method, **params):
        assert (method, params) == ("review", {"id": "1nh2abcd", "action": "merge"})
        return {"type": "Reviewed", "data": {"action": "merge", "ok": False, "message": self.message}}


def test_a_conflicting_merge_through_the_server_names_the_next_steps(monkeypatch, capsys):
    monkeypatch.delenv("COCKPIT_NO_SERVER", raising=False)
    monkeypatch.setattr(client_module, "server_running", lambda: True)
    monkeypatch.setattr(client_module, "BlockingClient", _Client)
    assert worktrees_cli._through_server("1nh2abcd", "merge") == 1
    out = capsys.readouterr().out
    assert out.startswith("merge conflict in app.py: nothing was merged")
    assert "send it back: cockpit worktrees send-back 1nh2abcd" in out and "cockpit shell 1nh2abcd" in out
    # a conflict the session left (markers): the same way on, as the merge without a server says
    monkeypatch.setattr(_Client, "message", "unresolved conflicts in app.py (unmerged, or conflict markers left in): "
                        "nothing was merged; the branch cockpit/1nh2abcd/x is kept")
    assert worktrees_cli._through_server("1nh2abcd", "merge") == 1
    assert "send it back: cockpit worktrees send-back 1nh2abcd" in capsys.readouterr().out


def test_a_kept_branchs_conflict_hint_names_what_can_work_on_it(capsys):
    """No worktree: a send-back or a shell could only fail; a checkout of the branch can."""
    worktrees_cli._conflict_hint("1nh2abcd", "main", "cockpit/1nh2abcd/x")
    out = capsys.readouterr().out
    assert "send-back" not in out and "cockpit shell" not in out
    assert "git worktree add DIR cockpit/1nh2abcd/x, then git merge main there and commit" in out
