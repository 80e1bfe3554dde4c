"""The Cockpit server: one process per user (per data folder) that owns the sessions, their
worktrees and one warm memory engine per notes folder; the TUI, ``cockpit run``/``ls``/``send``/
``attach``/``approve`` and the memory commands are its clients. Protocol: ``docs/PROTOCOL.md``.

- :mod:`cockpit.server.paths`: where the socket, lock, log and live-session registry live.
- :mod:`cockpit.server.rpc`: JSON-RPC 2.0 messages, one per line (framing, errors, limits).
- :mod:`cockpit.server.daemon`: the server (``cockpit server run``).
- :mod:`cockpit.server.client`: clients (async and blocking) and auto-start.
- :mod:`cockpit.server.remote`: the runtime and memory engine as seen through a client.
"""
