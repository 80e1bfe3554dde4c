"""``cockpit memory hook``: preseed plain Claude Code sessions from the project's notes.

As a Claude Code ``UserPromptSubmit`` hook it reads the hook input (JSON on stdin: ``session_id``,
``cwd``, ``prompt``, ``hook_event_name`` …) and, for the first prompt of a session (or a
``SessionStart`` that carries a ``prompt``), prints the same block a Cockpit session gets, in the
output format Claude Code documents::

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "<project-notes>…"}}

so the notes are in the model's context before its first turn. Later prompts of the same session,
a prompt no note qualifies for, and every failure print nothing and exit 0: a broken hook must
never block the user's prompt. The block comes from the Cockpit server's warm engine
(``COCKPIT_NO_SERVER=1`` loads the engine in this process instead, which takes seconds).

It returns within :data:`BUDGET_S` whatever the server does (a watchdog ends it silently at
:data:`WATCHDOG_S`): with no server running (a cold start) it starts one in the background
(a detached ``python -m cockpit.memory_hook --warm NOTES``: the server, then the notes' engine)
and returns at once with nothing for this prompt and a one-line note on stderr; with a server
that is still warming the notes' engine, or one that does not answer (stopped, hung), the same.
The session is then not marked as preseeded: its next prompt gets the block.
Sessions already preseeded are remembered in ``<data>/hooks/seen.json`` (the last 1000). Inside
a session Cockpit itself runs with the claude-code backend (``COCKPIT_SESSION_ID`` set in Claude
Code's environment) the hook stays silent: that session got the block in its first prompt.

Misses: for a session it preseeded, the hook keeps the block's lines in
``<data>/hooks/given/<session>.json``; installed also as a ``PostToolUse`` hook (matcher
:data:`MISS_MATCHER`), it sees the session read a note in full — ``mcp__cockpit__memory_get`` (or of the server
registered as ``cockpit-memory``), or
``Read`` of a file in the notes folder — and, when that note was not a line, appends a miss to
``<data>/hooks/misses.jsonl`` (what ``cockpit memory misses`` lists beside the transcripts' own).

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
from typing import Any, NamedTuple

from cockpit import hook_fast
from cockpit.hook_fast import BUDGET_S, PROMPT_EVENTS, WATCHDOG_S, handle  # noqa: F401 - the hook's API

MARK = "cockpit memory hook"  # in our command, portable ("cockpit memory hook …") or not ("python -m cockpit …")
# Claude Code names an MCP tool mcp__<server>__<tool>: ours is registered as "cockpit" by the
# claude-code backend and as "cockpit-memory" in the guide's `claude mcp add` (a regex, as Claude
# Code's matchers are)
MISS_MATCHER = "mcp__cockpit[\\w-]*__memory_get|Read"


def _data_root() -> Path:
    from cockpit import places

    return Path(places.data_root())


# -- the hook itself ------------------------------------------------------------------------------
def add_arguments(sp: Any) -> None:
    """The hook's flags (shared by ``cockpit memory hook`` and the fast path in ``cockpit.cli``)."""
    sp.add_argument("--notes", default=None, metavar="DIR",
                    help="notes folder, or 'auto' (Claude Code's memory folder); default: ./notes of the "
                         "session's cwd, else notes/ at the root of its git work tree")
    sp.add_argument("--index", default=None, metavar="PATH")
    sp.add_argument("--top-k", type=int, default=None, metavar="N",
                    help="at most N notes (default: what the token budget holds, as for a Cockpit session)")
    sp.add_argument("--install", action="store_true",
                    help="add the hook to the agent's settings (shows the change, asks)")
    sp.add_argument("--agent", choices=[*sorted(AGENTS), "opencode"], default="claude",
                    help="whose settings: claude (.claude/settings.json), codex (.codex/hooks.json), "
                         "gemini (.gemini/settings.json), opencode (a plugin, .opencode/plugins/cockpit-memory.js); "
                         "default claude")
    sp.add_argument("--uninstall", action="store_true", help="remove exactly what --install added")
    where = sp.add_mutually_exclusive_group()
    where.add_argument("--project", action="store_true",
                       help="the project's file, e.g. <cwd>/.claude/settings.json (default); the command in it "
                            "is the portable `cockpit memory hook` (cockpit on PATH), never a path into a venv")
    where.add_argument("--user", action="store_true", help="your own file, e.g. ~/.claude/settings.json")
    sp.add_argument("--yes", action="store_true", help="do not ask before writing settings.json")


def full_main(argv: list[str]) -> int:
    """``cockpit memory hook …`` with flags the hot path (``cockpit.hook_fast``) does not take:
    ``--install``, ``--uninstall``, ``--help``, a mistake (argparse's message)."""
    import argparse

    parser = argparse.ArgumentParser(prog="cockpit memory hook")
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.install or args.uninstall:
        from cockpit.errors import CockpitError

        try:
            return install(args)
        except CockpitError as exc:
            print(f"cockpit: error: {exc}", file=sys.stderr)
            return exc.code
    return hook_fast.run({"notes": args.notes, "index": args.index, "top_k": args.top_k})


def _note(text: str) -> None:
    """One line on stderr (Claude Code shows a hook's stderr in its transcript view)."""
    try:
        print(f"cockpit memory hook: {text}", file=sys.stderr, flush=True)
    except Exception:
        pass


def _start_in_background(notes: Path, index: str | None) -> None:
    """Start the server and warm the notes' engine in a detached process, not waited for (its
    output goes nowhere: Claude Code waits for the hook's pipes to close)."""
    import subprocess

    cmd = [sys.executable, "-m", "cockpit.memory_hook", "--warm", str(notes.resolve())]
    if index:
        cmd += ["--index", index]
    subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True, cwd="/")


def warm(notes: str, index: str | None) -> int:
    """``python -m cockpit.memory_hook --warm NOTES``: start the server (if none runs) and have it
    load the engine for ``notes``, so the next prompt's hook finds it warm."""
    from cockpit.server.client import BlockingClient, ServerError, ensure_server

    try:
        ensure_server()
        with BlockingClient() as client:
            client.call("memory.wait_ready", notes=notes, index=index, timeout=120)
    except (ServerError, RuntimeError, OSError):
        return 1
    return 0


def no_server(notes: str, index: str | None, sock: str) -> None:
    """The hook found nothing listening on ``sock``: start a server in the background when none
    runs (the notes come with a later prompt), say so on stderr."""
    from cockpit.server import client as cl

    if cl.server_pid() is None:
        _start_in_background(Path(notes), index)
        _note("no Cockpit server ran: starting one in the background; the project notes come "
              "with a later prompt of this session")
    else:
        _note("the Cockpit server is starting; the project notes come with a later prompt")


def late(sock: str) -> None:
    """The server at ``sock`` did not answer within the hook's budget: say why on stderr."""
    from cockpit.server import client as cl

    pid = cl.stopped_pid(sock)
    _note(cl.stopped_message(pid) if pid is not None else
          f"the Cockpit server at {sock} did not answer in time (busy, stopped or hung?)")


def block_in_process(query: str, notes: str, index: str | None, top_k: int | None) -> str:
    """``COCKPIT_NO_SERVER=1``: the block from an engine loaded in this process (seconds)."""
    from memory import MemoryEngine

    with MemoryEngine(Path(notes), index_path=index) as engine:
        engine.start_warmup()
        engine.sync()
        return engine.build_preseed(query, top_k).text


def _given_path(session: str) -> Path:
    return Path(hook_fast.given_path(session))


def misses_path() -> Path:
    return _data_root() / "hooks" / "misses.jsonl"


def read_misses() -> list[dict]:
    """The misses the hook recorded (a damaged line is skipped)."""
    try:
        text = misses_path().read_text(encoding="utf-8")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def _front_name(path: Path) -> str:
    """A note file's frontmatter ``name`` (the name a block gives it; the file name may differ),
    read with a line match — the hook stays light (no YAML parser); "" when there is none."""
    import re

    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:
        return ""
    lines = head.lstrip("\ufeff \t\n").splitlines()
    if not lines or lines[0].strip() != "---":
        return ""
    name = ""
    for line in lines[1:]:
        if line.strip() in ("---", "..."):
            return name  # (the last `name:` wins, as in YAML's loader)
        found = re.match(r"name\s*:\s*(.*)$", line)
        if found:
            value = re.sub(r"^&\S+\s+", "", found.group(1).strip())  # an anchor is not the value
            if value[:1] in "'\"" and len(value) >= 2 and value.rstrip()[-1:] == value[0]:
                value = value.rstrip()[1:-1]
                value = value.replace("''", "'") if found.group(1).strip()[:1] == "'" else value
            else:
                value = re.sub(r"\s+#.*$", "", value)  # a comment
                if value in ("~", "null", "Null", "NULL") or value[:1] in "|>{[!*":
                    value = ""  # no name, or one this line match cannot read: the file name then
            name = value.strip()
    return ""  # no closing line: not frontmatter


def record_miss(payload: dict) -> None:
    """A ``PostToolUse`` input: the session read a note in full; a miss when it was not a line."""
    import time

    session = str(payload.get("session_id") or "")
    tool = str(payload.get("tool_name") or "")
    raw = payload.get("tool_input")
    data: dict = raw if isinstance(raw, dict) else {}
    try:
        given = json.loads(_given_path(session).read_text(encoding="utf-8")) if session else None
    except (OSError, ValueError):
        return
    if not isinstance(given, dict):
        return
    name = data.get("name") if tool.endswith("memory_get") else None
    if tool == "Read" and isinstance(data.get("file_path"), str):
        path = Path(data["file_path"]).expanduser()
        try:
            rel = path.resolve().relative_to(Path(given["notes"]))
        except (ValueError, OSError, KeyError):
            return
        known = given.get("paths")
        name = known.get(os.path.realpath(path)) if isinstance(known, dict) else None
        if not isinstance(name, str) or not name:  # a note the block did not name: its own name, best effort
            name = (_front_name(path) or rel.stem) if rel.suffix == ".md" else None
    if not isinstance(name, str) or not name or name.casefold() in {n.casefold() for n in given.get("lines", [])}:
        return
    if any(r.get("session") == session and r.get("name") == name for r in read_misses()):
        return  # once per note and session
    record = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S"), "session": session, "name": name, "via": tool,
              "in_index": name.casefold() in {n.casefold() for n in given.get("index", [])},
              "task": given.get("task", ""), "notes": given.get("notes", ""), "agent": "claude-code (hook)"}
    with open(misses_path(), "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")


# -- install / uninstall ----------------------------------------------------------------------------
class Agent(NamedTuple):  # (not a dataclass: importing dataclasses costs the hook ≈ 13 ms)
    """An agent whose hooks can preseed its first prompt. ``project`` / ``user``: its settings
    file (``user`` relative to the folder ``home()`` gives); ``event``: the prompt hook's event;
    ``misses``: it also runs our ``PostToolUse`` entry (misses); ``note``: what else it needs."""

    label: str
    project: str
    user: str
    home_env: str
    home: str
    event: str
    misses: bool = False
    note: str = ""

    def path(self, user: bool, cwd: Path) -> Path:
        if not user:
            return cwd / self.project
        base = os.environ.get(self.home_env) if self.home_env else None
        return (Path(base).expanduser() if base else Path.home() / self.home) / self.user


AGENTS = {
    "claude": Agent("Claude Code", ".claude/settings.json", "settings.json", "CLAUDE_CONFIG_DIR", ".claude",
                    "UserPromptSubmit", misses=True),
    "codex": Agent("Codex", ".codex/hooks.json", "hooks.json", "CODEX_HOME", ".codex", "UserPromptSubmit",
                   note="Codex runs hooks only with `[features] codex_hooks = true` in ~/.codex/config.toml"),
    "gemini": Agent("Gemini CLI", ".gemini/settings.json", "settings.json", "", ".gemini", "BeforeAgent",
                    note="Gemini CLI runs hooks when they are enabled in its settings (see its hooks guide)"),
}


def settings_path(user: bool, cwd: Path, agent: str = "claude") -> Path:
    return AGENTS[agent].path(user, cwd)


def hook_command(notes: str | None, cwd: Path, portable: bool = False) -> str:
    """The command the agent runs. ``portable`` (a project's file, which a team commits):
    ``cockpit memory hook`` found on PATH, the notes folder relative to the session's cwd; else
    this interpreter and absolute paths (one user's machine)."""
    import shlex

    parts = ["cockpit", "memory", "hook"] if portable else [sys.executable, "-m", "cockpit", "memory", "hook"]
    if notes:
        parts += ["--notes", notes if notes == "auto" or portable else str((cwd / notes).resolve())]
    return " ".join(shlex.quote(p) for p in parts)


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and MARK in str(hook.get("command", ""))


def with_hook(settings: dict, command: str, agent: str = "claude") -> dict:
    spec = AGENTS[agent]
    hooks = settings.setdefault("hooks", {})
    groups = hooks.setdefault(spec.event, [])
    if not any(_is_ours(h) for group in groups for h in group.get("hooks", [])):
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": 60}]})
    if spec.misses:  # misses: a note read in full that was not a line
        post = hooks.setdefault("PostToolUse", [])
        if not any(_is_ours(h) for group in post if isinstance(group, dict) for h in group.get("hooks", [])):
            post.append({"matcher": MISS_MATCHER, "hooks": [{"type": "command", "command": command, "timeout": 10}]})
    return settings


def _events() -> tuple[str, ...]:
    """The hook events an entry of ours can sit under: every agent's, and the misses watcher's."""
    return (*dict.fromkeys(a.event for a in AGENTS.values()), "PostToolUse")


def has_hook(settings: dict) -> bool:
    """Whether ``settings`` holds an entry of ours (any agent's event, or the misses watcher)."""
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        return False
    for event in _events():
        groups = hooks.get(event, [])
        for group in groups if isinstance(groups, list) else ():
            inner = group.get("hooks", []) if isinstance(group, dict) else []
            if isinstance(inner, list) and any(_is_ours(h) for h in inner):
                return True
    return False


def without_hook(settings: dict) -> dict:
    hooks = settings.get("hooks", {})
    for event in _events():
        kept = []
        for group in hooks.get(event, []):
            rest = [h for h in group.get("hooks", []) if not _is_ours(h)] if isinstance(group, dict) else [group]
            if rest:
                kept.append({**group, "hooks": rest} if isinstance(group, dict) else group)
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event, None)
    if not hooks:
        settings.pop("hooks", None)
    return settings


def _check_shape(settings: dict, path: Path, event: str = "UserPromptSubmit") -> None:
    """Refuse (CockpitError naming the key) a settings file whose ``hooks`` part is not shaped as
    the agent documents it (Claude Code, Codex and Gemini CLI share the shape): nothing is
    rewritten that this command does not understand."""
    from cockpit.errors import CockpitError

    def bad(where: str, want: str) -> CockpitError:
        return CockpitError(f"{path}: {where} is not {want}; fix it first (nothing was written)")

    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise bad('"hooks"', "an object")
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise bad(f'"hooks.{event}"', "a list")
    for i, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
            raise bad(f'"hooks.{event}[{i}]"', 'an object with a "hooks" list')


def _backup(path: Path) -> Path:
    import hashlib

    return _data_root() / "hooks" / f"backup-{hashlib.sha1(str(path).encode()).hexdigest()[:16]}.json"


def _ask(question: str) -> bool:
    print(question, end=" ", flush=True)
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _indent_of(text: str) -> int | str:
    """The indent a JSON file is written with (its first indented key's: spaces or a tab), 2 when
    it has none — so an entry added to a project's committed settings file changes only its lines."""
    import re

    m = re.search(r'^([ \t]+)"', text, re.MULTILINE)
    if m is None:
        return 2
    return "\t" if m.group(1).startswith("\t") else len(m.group(1))


def _settings_text(settings: dict, like: str = "") -> str:
    """``settings`` as Claude Code's settings.json text (the indent of ``like``, the file as it
    was, else 2 spaces; UTF-8). A lone surrogate (what a ``\\ud800`` escape in the file reads as)
    is written back as that escape: it has no UTF-8 form."""
    import re

    text = json.dumps(settings, indent=_indent_of(like), ensure_ascii=False) + "\n"
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)


def install(args: Any) -> int:
    import base64
    import difflib

    from cockpit.errors import CockpitError

    cwd = Path.cwd()
    agent = getattr(args, "agent", None) or "claude"
    if agent == "opencode":  # a plugin file, not a settings entry
        from cockpit import opencode_plugin

        return opencode_plugin.install(args)
    spec = AGENTS[agent]
    path = settings_path(bool(args.user), cwd, agent)
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
    _check_shape(settings, path, spec.event)
    backup = _backup(path)
    new_text: str | None
    saved: Any = None
    if args.install:
        new = with_hook(json.loads(json.dumps(settings)), hook_command(args.notes, cwd, portable=not args.user), agent)
        new_text = _settings_text(new, old_bytes.decode("utf-8", "replace") if old_bytes else "")
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
            if not has_hook(settings):  # no entry of ours: the file is not the tool's to touch (nor to reformat)
                print(f"{path}: no Cockpit hook in it: nothing to change" if old_bytes is not None
                      else f"{path}: no such file: nothing to change")
                return 0
            new_text = _settings_text(without_hook(json.loads(json.dumps(settings))),
                                      old_bytes.decode("utf-8", "replace") if old_bytes else "")
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
                path.parent.rmdir()  # the folder (.claude, .codex, .gemini) --install made, when nothing else is in it
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
        print(f"installed: {spec.label} sessions in {cwd if not args.user else 'every project'} now start with "
              f"the notes their first prompt needs")
        if not args.user:
            print("the entry runs `cockpit memory hook` from PATH: everyone using it needs cockpit installed "
                  "(pipx install / uv tool install)")
        if spec.note:
            print(f"note: {spec.note}")
    else:
        backup.unlink(missing_ok=True)
        print("uninstalled")
    return 0


if __name__ == "__main__":  # ``python -m cockpit.memory_hook --warm NOTES [--index PATH]`` (see warm)
    import argparse

    _p = argparse.ArgumentParser(prog="python -m cockpit.memory_hook")
    _p.add_argument("--warm", required=True, metavar="NOTES")
    _p.add_argument("--index", default=None)
    _a = _p.parse_args()
    sys.exit(warm(_a.warm, _a.index))
