"""The user's ``[keymap]`` (``config.toml``, ``state.json``) checked against the app's bindings
before the app starts: a binding id that does not exist, an empty key, or a key that would
then do two things on one screen is refused with one line (the same rule as every other bad
setting), never silently dropped or shadowed."""

from __future__ import annotations

from typing import Any


def _groups() -> dict[str, list[Any]]:
    from cockpit.tui.app import CockpitApp
    from cockpit.tui.screens import approval, budget, dialogs, diff, main, memory, review, spawn
    from cockpit.tui.widgets import diffview

    app = list(CockpitApp.BINDINGS)  # active on every screen, beside the screen's own
    return {
        "the main screen": app + list(main.MainScreen.BINDINGS),
        "the diff screen": app + list(diff.DiffScreen.BINDINGS) + list(diffview.DiffView.BINDINGS),
        "the approval dialog": app + list(approval.ApprovalDialog.BINDINGS),
        "the review screen": app + list(review.ReviewScreen.BINDINGS),
        "the memory screen": app + list(memory.MemoryScreen.BINDINGS),
        "the spawn dialog": app + list(spawn.SpawnDialog.BINDINGS),
        "the confirm dialog": app + list(dialogs.ConfirmDialog.BINDINGS),
        "the follow-up dialog": app + list(dialogs.FollowUpDialog.BINDINGS),
        "the choice dialog": app + list(dialogs.ChoiceDialog.BINDINGS),
        "the comment dialog": app + list(dialogs.CommentDialog.BINDINGS),
        "the budget dialog": app + list(budget.BudgetDialog.BINDINGS),
    }


def _keys(text: str) -> list[str]:
    """The keys of a binding string as Textual names them (``?`` is ``question_mark``)."""
    from textual.keys import _character_to_key

    return [_character_to_key(k) if len(k) == 1 else k for k in (k.strip() for k in text.split(",")) if k]


def _reserved() -> dict[str, str]:
    """Keys Textual itself answers on every screen, which no binding of ours may take: key → what."""
    from textual.app import App

    return {App.COMMAND_PALETTE_BINDING: "the command palette"}


def check_keymap(keymap: dict[str, str]) -> None:
    """Raises ValueError (one line) for an unknown binding id, an empty key, or a key given to a
    binding that another binding of the same screen already answers (pairs that share a key by
    design — ``enter``: approve / follow up, ``q``: quit / detach — stay allowed)."""
    groups = _groups()
    known = {b.id for bs in groups.values() for b in bs if getattr(b, "id", None)}
    reserved = _reserved()
    for bid, keys in keymap.items():
        if bid not in known:
            raise ValueError(f"[keymap] has no binding {bid!r}; ids: {', '.join(sorted(known))}")
        if not _keys(keys):
            raise ValueError(f"[keymap] {bid} = {keys!r} gives no key (it would leave the action without one)")
        for key in _keys(keys):
            if key in reserved:
                raise ValueError(f"[keymap] gives {key!r} to {bid}, but it opens {reserved[key]}; choose another key")
    for where, bindings in groups.items():
        default: dict[str, set[str]] = {}
        action = {b.id: b.action for b in bindings if b.id}
        for b in bindings:
            if b.id:
                for key in _keys(b.key):
                    default.setdefault(key, set()).add(b.id)
        shared = {frozenset(ids) for ids in default.values() if len(ids) > 1}
        # keys that answer the same actions as a designed pair (q and ctrl+q: detach / quit) may merge
        shared_actions = {frozenset(action[i] for i in ids) for ids in shared}
        owner: dict[str, set[str]] = {}
        for b in bindings:
            if not b.id:
                continue
            for key in _keys(keymap[b.id] if b.id in keymap else b.key):
                owner.setdefault(key, set()).add(b.id)
        for key, ids in owner.items():
            if len(ids) > 1 and frozenset(ids) not in shared and ids & set(keymap) \
                    and frozenset(action[i] for i in ids) not in shared_actions:
                raise ValueError(f"[keymap] gives {key!r} to {' and '.join(sorted(ids))} on {where}; "
                                 "choose another key")


def keymap_problem() -> str | None:
    """Why the user's keymap (``[keymap]`` in ``config.toml``, then ``state.json``) would stop the
    app from starting, or None: what the app, ``cockpit config check`` and ``doctor`` say."""
    from cockpit.tui import state

    try:
        check_keymap(state.load_keymap())
    except ValueError as exc:
        return str(exc)
    return None


__all__ = ["check_keymap", "keymap_problem"]
