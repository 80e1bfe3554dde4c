"""``cockpit memory hook``: preseed plain Claude Code sessions from the project's notes.

As a Claude Code ``UserPromptSubmit`` hook it reads the hook input (JSON on stdin: ``session_id``,
``cwd``, ``prompt``, ``hook_event_name`` …) and, for the first prompt of a session (or a
``SessionStart`` that carries a ``prompt``), prints the same block a Cockpit session gets, in the
output format Claude Code documents::

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "<project-notes>…"}}

so the notes are in the model's context before its first turn. Later prompts of the same session,
a prompt no note qualifies for, and every failure print nothing and exit 0: a broken hook must
never block the user's prompt. The block comes from the Cockpit server's warm engine (a server is
started when none runs; ``COCKPIT_NO_SERVER=1`` loads the engine in this process instead).
Sessions already preseeded are remembered in ``<data>/hooks/seen.json`` (the last 1000). Inside
a session Cockpit itself runs with the claude-code backend (``COCKPIT_SESSION_ID`` set in Claude
Code's environment) the hook stays silent: that session got the block in its first prompt.

``--install [--project|--user]`` adds the hook to ``<cwd>/.claude/settings.json`` (default) or
``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR`` respected) after showing the change and asking;
``--uninstall`` removes exactly that entry (restoring the file byte for byte when nothing else
changed it since).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

MARK = "-m cockpit memory hook"
SEEN_MAX = 1000


def _data_root() -> Path:
    env = os.environ.get("COCKPIT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("cockpit")


# -- the hook itself ------------------------------------------------------------------------------
def add_arguments(sp: Any) -> None:
    """The hook's flags (shared by ``cockpit memory hook`` and the fast path in ``cockpit.cli``)."""
    sp.add_argument("--notes", default=None, metavar="DIR",
                    help="notes folder, or 'auto' (Claude Code's memory folder); default: ./notes of the session's cwd")
    sp.add_argument("--index", default=None, metavar="PATH")
    sp.add_argument("--top-k", type=int, default=None, metavar="N",
                    help="at most N notes (default: what the token budget holds, as for a Cockpit session)")
    sp.add_argument("--install", action="store_true",
                    help="add the hook to a Claude Code settings.json (shows the change, asks)")
    sp.add_argument("--uninstall", action="store_true", help="remove exactly what --install added")
    where = sp.add_mutually_exclusive_group()
    where.add_argument("--project", action="store_true", help="<cwd>/.claude/settings.json (default)")
    where.add_argument("--user", action="store_true", help="~/.claude/settings.json")
    sp.add_argument("--yes", action="store_true", help="do not ask before writing settings.json")


def fast_main(argv: list[str]) -> int:
    """``cockpit memory hook …`` without building the whole CLI (the hook runs before every
    first prompt: start-up time is its latency)."""
    import argparse

    parser = argparse.ArgumentParser(prog="cockpit memory hook")
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.install or args.uninstall:
        from cockpit.errors import CockpitError

        try:
            return main(args)
        except CockpitError as exc:
            print(f"cockpit: error: {exc}", file=sys.stderr)
            return exc.code
    return main(args)


def first_time(session_id: str) -> bool:
    """True the first time a session id is seen (recorded under a file lock)."""
    import fcntl

    path = _data_root() / "hooks" / "seen.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            seen = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(seen, list):
                seen = []
        except (OSError, ValueError):
            seen = []
        if session_id in seen:
            return False
        seen = (seen + [session_id])[-SEEN_MAX:]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(seen), encoding="utf-8")
        os.replace(tmp, path)
        return True


def block_for(prompt: str, notes: Path, index: str | None, top_k: int | None) -> str:
    """The preseed block for ``prompt`` ("" when none qualifies): the block a Cockpit session
    gets (``top_k`` None: as many notes as the token budget holds)."""
    from cockpit.runtime.query import preseed_query

    query = preseed_query(prompt)
    if not os.environ.get("COCKPIT_NO_SERVER"):
        from cockpit.server.client import BlockingClient, ensure_server

        ensure_server()
        with BlockingClient() as client:
            index = str(Path(index).expanduser().resolve()) if index else None  # not the server's cwd
            return client.call("memory.preseed", notes=str(notes.resolve()), index=index, query=query,
                               top_k=top_k)["text"]
    from memory import MemoryEngine

    with MemoryEngine(notes, index_path=index) as engine:
        engine.start_warmup()
        engine.sync()
        return engine.build_preseed(query, top_k).text


def handle(payload: Any, notes_arg: str | None, index: str | None, top_k: int | None) -> dict | None:
    """The hook output for one input (None: print nothing)."""
    if not isinstance(payload, dict):
        return None
    if os.environ.get("COCKPIT_SESSION_ID"):  # a Cockpit claude-code session: already preseeded
        return None
    event = payload.get("hook_event_name")
    prompt = payload.get("prompt")
    if event not in ("UserPromptSubmit", "SessionStart") or not isinstance(prompt, str) or not prompt.strip():
        return None
    session = str(payload.get("session_id") or "")
    from cockpit.notes_location import resolve_notes

    notes = resolve_notes(notes_arg, Path(str(payload.get("cwd") or os.getcwd())))
    if not notes.is_dir() or (session and not first_time(session)):
        return None
    text = block_for(prompt, notes, index, top_k)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def main(args: Any) -> int:
    if args.install or args.uninstall:
        return install(args)
    try:
        raw = sys.stdin.buffer.read(4 * 1024 * 1024)
        out = handle(json.loads(raw.decode("utf-8", "replace")), args.notes, args.index, args.top_k)
        if out is not None:
            sys.stdout.write(json.dumps(out, ensure_ascii=False))
            sys.stdout.flush()
    except BaseException:  # never block the user's prompt, whatever happened
        pass
    return 0


# -- install / uninstall ----------------------------------------------------------------------------
def settings_path(user: bool, cwd: Path) -> Path:
    from cockpit.notes_location import claude_config_dir

    return claude_config_dir() / "settings.json" if user else cwd / ".claude" / "settings.json"


def hook_command(notes: str | None, cwd: Path) -> str:
    import shlex

    parts = [sys.executable, "-m", "cockpit", "memory", "hook"]
    if notes:
        parts += ["--notes", notes if notes == "auto" else str((cwd / notes).resolve())]
    return " ".join(shlex.quote(p) for p in parts)


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and MARK in str(hook.get("command", ""))


def with_hook(settings: dict, command: str) -> dict:
    hooks = settings.setdefault("hooks", {})
    groups = hooks.setdefault("UserPromptSubmit", [])
    for group in groups:
        if any(_is_ours(h) for h in group.get("hooks", [])):
            return settings
    groups.append({"hooks": [{"type": "command", "command": command, "timeout": 60}]})
    return settings


def without_hook(settings: dict) -> dict:
    hooks = settings.get("hooks", {})
    groups = hooks.get("UserPromptSubmit", [])
    kept = []
    for group in groups:
        rest = [h for h in group.get("hooks", []) if not _is_ours(h)]
        if rest:
            kept.append({**group, "hooks": rest})
    if kept:
        hooks["UserPromptSubmit"] = kept
    else:
        hooks.pop("UserPromptSubmit", None)
    if not hooks:
        settings.pop("hooks", None)
    return settings


def _check_shape(settings: dict, path: Path) -> None:
    """Refuse (CockpitError naming the key) a settings file whose ``hooks`` part is not shaped as
    Claude Code documents it: nothing is rewritten that this command does not understand."""
    from cockpit.errors import CockpitError

    def bad(where: str, want: str) -> CockpitError:
        return CockpitError(f"{path}: {where} is not {want}; fix it first (nothing was written)")

    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise bad('"hooks"', "an object")
    groups = hooks.get("UserPromptSubmit", [])
    if not isinstance(groups, list):
        raise bad('"hooks.UserPromptSubmit"', "a list")
    for i, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
            raise bad(f'"hooks.UserPromptSubmit[{i}]"', 'an object with a "hooks" list')


def _backup(path: Path) -> Path:
    import hashlib

    return _data_root() / "hooks" / f"backup-{hashlib.sha1(str(path).encode()).hexdigest()[:16]}.json"


def _ask(question: str) -> bool:
    print(question, end=" ", flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _settings_text(settings: dict) -> str:
    """``settings`` as Claude Code's settings.json text (2-space indent, UTF-8). A lone surrogate
    (what a ``\\ud800`` escape in the file reads as) is written back as that escape: it has no
    UTF-8 form."""
    import re

    text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)


def install(args: Any) -> int:
    import base64
    import difflib

    from cockpit.errors import CockpitError

    cwd = Path.cwd()
    path = settings_path(bool(args.user), cwd)
    if path.is_symlink():  # write through the link (a dotfiles checkout), never replace it
        path = path.resolve()
    try:
        old_bytes = path.read_bytes() if path.exists() else None
    except OSError as exc:
        raise CockpitError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        settings = json.loads(old_bytes) if old_bytes else {}
    except ValueError as exc:
        raise CockpitError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(settings, dict):
        raise CockpitError(f"{path} does not hold a JSON object")
    _check_shape(settings, path)
    backup = _backup(path)
    new_text: str | None
    saved: Any = None
    if args.install:
        new = with_hook(json.loads(json.dumps(settings)), hook_command(args.notes, cwd))
        new_text = _settings_text(new)
    else:
        try:
            saved = json.loads(backup.read_text(encoding="utf-8")) if backup.exists() else None
        except (OSError, ValueError):
            saved = None  # a damaged backup: remove just our entry instead
        current = old_bytes.decode("utf-8", "replace") if old_bytes is not None else None
        if isinstance(saved, dict) and "written" in saved and current == saved["written"]:
            original = saved["original"]
            new_text = None if original is None else base64.b64decode(original).decode("utf-8", "surrogateescape")
        else:
            new = without_hook(json.loads(json.dumps(settings)))
            new_text = _settings_text(new)
    old_text = old_bytes.decode("utf-8", "replace") if old_bytes is not None else ""
    if (new_text or "") == old_text and (new_text is not None or old_bytes is None):
        print(f"{path}: nothing to change")
        return 0
    diff = difflib.unified_diff(old_text.splitlines(keepends=True), (new_text or "").splitlines(keepends=True),
                                str(path) if old_bytes is not None else "/dev/null",
                                str(path) if new_text is not None else "/dev/null")
    sys.stdout.writelines(line.encode("utf-8", "backslashreplace").decode("utf-8") for line in diff)
    if not args.yes and not _ask(f"\n{'Write' if new_text is not None else 'Delete'} {path}? [y/N]"):
        print("nothing written")
        return 1
    created_dir = not path.parent.exists()
    if new_text is None:
        path.unlink()
        if isinstance(saved, dict) and saved.get("created_dir"):
            try:
                path.parent.rmdir()  # the .claude folder --install made, when nothing else is in it
            except OSError:
                pass
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.cockpit-tmp")
        tmp.write_text(new_text, encoding="utf-8")
        os.replace(tmp, path)
    if args.install:
        backup.parent.mkdir(parents=True, exist_ok=True)
        original = None if old_bytes is None else base64.b64encode(old_bytes).decode()
        backup.write_text(json.dumps({"path": str(path), "original": original, "written": new_text,
                                      "created_dir": created_dir}), encoding="utf-8")
        print(f"installed: Claude Code sessions in {cwd if not args.user else 'every project'} now start with "
              f"the notes their first prompt needs")
    else:
        backup.unlink(missing_ok=True)
        print("uninstalled")
    return 0
