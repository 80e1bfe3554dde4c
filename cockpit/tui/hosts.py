"""Several hosts in one grid, as the app shows them (a ``CockpitApp`` mixin).

The runtime (``cockpit.server.hosts.MultiHostRuntime``) says each host's connection with
``HostStatus`` events; session ids carry their host (``cockpit.hostids``). Here:

- with more than one host, each pane's title names its host (``SessionView.host``);
- a host that is not connected marks its panes (``SessionView.link``: "reconnecting", and when
  the next attempt is), the header lists the hosts and their states, and a toast says why once;
- when a host is back, its sessions' events replay from the start (``replaying`` …
  ``connected``): each of its views is rebuilt from the replay (reset at its first replayed
  event), folded as the attach snapshot is (nothing announced on the way), and a session that
  came to need you while the host was away is announced once the replay ends.
"""

from __future__ import annotations

from typing import Any

from textual.app import App

from cockpit import events as ev
from cockpit import hostids
from cockpit.events import SessionStatus
from cockpit.runtime.protocols import GridRuntime, Runtime
from cockpit.tui.model import SessionView

STATE_TEXT = {"connecting": "connecting…", "replaying": "reattaching…", "reconnecting": "reconnecting",
              "unreachable": "unreachable"}


def link_text(status: ev.HostStatus) -> str:
    """What a pane of a host that is not connected says (short: the session's own state follows
    on the line): ``reconnecting · next try in 4 s``. Why is said once, in a toast."""
    text = STATE_TEXT.get(status.state, status.state)
    if status.retry_in:
        text += f" · next try in {status.retry_in:.0f} s"
    return text


class HostsView(App):
    """Mixin of ``CockpitApp`` (which has ``views``, ``main`` — the screen that owns the panes,
    their repaint scheduler and the totals — and ``needs_you``). The main screen calls
    ``host_event``, ``replaying``, ``host_label`` and ``replay_reset`` as it folds events."""

    @property
    def views(self) -> dict[str, SessionView]:
        raise NotImplementedError

    @property
    def main(self) -> Any:
        raise NotImplementedError

    def needs_you(self, view: SessionView) -> None:
        raise NotImplementedError

    def close_stale_approval(self) -> None:
        raise NotImplementedError

    def _hosts_init(self) -> None:
        self.host_states: dict[str, ev.HostStatus] = {}  # by host name, in the runtime's order
        self._replay_reset: set[str] = set()  # sessions rebuilt at their first replayed event
        self._replay_before: dict[str, SessionStatus] = {}  # their state before the host dropped

    @property
    def multi_host(self) -> bool:
        return len(self.host_states) > 1

    def host_label(self, session_id: str) -> str:
        """The host a pane's title names ("" with one host)."""
        return hostids.host_of(session_id) if self.multi_host else ""

    def replaying(self, session_id: str) -> bool:
        status = self.host_states.get(hostids.host_of(session_id))
        return status is not None and status.state == "replaying"

    def host_event(self, status: ev.HostStatus) -> None:
        """Fold one ``HostStatus`` (see the module doc)."""
        before = self.host_states.get(status.host)
        self.host_states[status.host] = status
        was = before.state if before is not None else ""
        if status.state in ("reconnecting", "unreachable") and was != status.state:
            detail = status.detail.removeprefix(f"host {status.host}: ")  # (the line names the host already)
            why = f": {detail}" if detail else ""
            self.notify(f"host {status.host} {status.state}{why}", title="hosts", severity="warning", timeout=10)
        elif status.state == "connected" and was in ("replaying", "reconnecting", "unreachable"):
            self.notify(f"host {status.host} is back", title="hosts", timeout=5)
        mine = [v for sid, v in self.views.items() if hostids.host_of(sid) == status.host]
        if status.state == "replaying":
            for view in mine:
                self._replay_reset.add(view.session_id)
                self._replay_before[view.session_id] = view.status
        elif status.state == "connected" and before is not None and before.state == "replaying":
            gone = []
            for view in mine:
                if view.session_id in self._replay_reset and view.status.is_final:
                    gone.append(view.session_id)  # the server replayed nothing of it: it holds it no more
                self._replay_reset.discard(view.session_id)
                earlier = self._replay_before.pop(view.session_id, None)
                if view.status.needs_user and view.status is not earlier:
                    self.needs_you(view)
            self.close_stale_approval()  # its session may have ended while the host was away
            if gone:
                self._close_gone(status.host, gone)
        link = "" if status.state in ("connected", "replaying") else link_text(status)
        for view in mine:
            if view.link != link:
                view.link = link
                view.version += 1
                view.meta_version += 1
                self.main.repaint.mark(view.session_id)
        self.main.totals_dirty = True

    def replay_reset(self, view: SessionView) -> None:
        """Before the first replayed event of ``view``'s session: start it anew, in place (its
        pane keeps the object), the body redrawn whole."""
        if view.session_id not in self._replay_reset:
            return
        self._replay_reset.discard(view.session_id)
        keep = (view.version, view.meta_version, view.epoch, view.host, view.link)
        view.__dict__.update(SessionView(view.session_id).__dict__)
        view.version, view.meta_version, view.epoch = keep[0] + 1, keep[1] + 1, keep[2] + 1
        view.host, view.link = keep[3], keep[4]

    def _close_gone(self, host: str, session_ids: list[str]) -> None:
        """Close the panes of finished sessions the (new) server of ``host`` no longer holds — it
        keeps those with a change to review and the interrupted ones — so the grid and the header
        match it (their spend stays in the header's totals; their transcripts in the review)."""
        for sid in session_ids:
            self.call_later(self.main.remove_pane, sid, False)
        where = f" on host {host}" if self.multi_host else ""
        self.notify(f"{len(session_ids)} finished pane{'s' if len(session_ids) != 1 else ''} closed: the server{where} "
                    "restarted and holds nothing of theirs to review (r: their transcripts)", timeout=10)

    def hosts_line(self) -> list[tuple[str, str]]:
        """``(host, state)`` for the header (nothing with one host)."""
        if not self.multi_host:
            return []
        return [(name, s.state) for name, s in self.host_states.items()]


def spawn_hosts(manager: Runtime, workspace: str) -> dict[str, Any]:
    """The spawn dialog's ``hosts`` and ``host`` for a runtime of several hosts, or of one other
    host (a ``GridRuntime``, told by a typed ``isinstance``; nothing for any other): each host's
    state, default workspace (the local host's: the app's ``workspace``), notes and backends."""
    from cockpit.tui.screens.spawn import HostChoice

    if not isinstance(manager, GridRuntime) or [h.name for h in manager.hosts] == [hostids.LOCAL]:
        return {}
    hosts = manager.hosts
    choices = tuple(
        HostChoice(h.name, manager.host_state(h.name),
                   workspace=h.workspace or (workspace if h.same_machine else ""),
                   notes=h.notes or "", backends=manager.backends_of(h.name), local=h.name == hostids.LOCAL,
                   engine=None if h.name == hostids.LOCAL else manager.engine_of(h.name))
        for h in hosts)
    return {"hosts": choices, "host": manager.default_host}
