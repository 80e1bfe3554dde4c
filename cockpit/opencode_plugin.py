"""OpenCode's preseed: a small plugin on its ``chat.message`` hook that runs ``cockpit memory hook``.

OpenCode has no command hooks; it loads plugins from ``.opencode/plugins/`` (the project's) and
``~/.config/opencode/plugins/`` (the user's). The plugin this module writes calls ``cockpit
memory hook`` on a session's messages until it has given the session a block (the hook gives
one once: on the first prompt, or on a later one when the server was still starting), with the
Claude-Code-shaped payload the hook already answers (``UserPromptSubmit``), and puts the block
before the prompt as a part of its own. The hook never blocks a prompt: it is given 5 s (it answers within 2 s, or
with nothing on a cold start; ``COCKPIT_HOOK_TIMEOUT_MS`` changes the 5 s), and any failure
leaves the message as it was.

The file is wholly ours: ``--install`` writes it (showing it, asking), ``--uninstall`` deletes it
and the folders the install made — the project is byte-identical afterwards.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

FILE = "cockpit-memory.js"
MARK = "cockpit-memory: installed by `cockpit memory hook --install --agent opencode`"

TEMPLATE = """// {mark}
// Puts the project notes the first prompt of each OpenCode session needs before that prompt
// (`cockpit memory hook`). Remove it with `cockpit memory hook --uninstall --agent opencode`.
const COMMAND = {command}
const TIMEOUT_MS = Number(process.env.COCKPIT_HOOK_TIMEOUT_MS) || 5000
const seen = new Set()

export const CockpitMemory = async ({{ directory }}) => ({{
  "chat.message": async (input, output) => {{
    const sid = input?.sessionID
    const parts = output?.parts
    if (!sid || seen.has(sid) || !Array.isArray(parts)) return
    const prompt = parts.filter((p) => p.type === "text" && !p.synthetic).map((p) => p.text).join("\\n")
    if (!prompt.trim()) return
    const payload = JSON.stringify({{ hook_event_name: "UserPromptSubmit", session_id: sid, prompt, cwd: directory }})
    try {{
      const proc = Bun.spawn(COMMAND, {{ cwd: directory, stdin: new Blob([payload]), stdout: "pipe",
                                        stderr: "ignore" }})
      const timer = setTimeout(() => proc.kill(), TIMEOUT_MS)
      const out = await new Response(proc.stdout).text()
      clearTimeout(timer)
      const block = JSON.parse(out || "{{}}")?.hookSpecificOutput?.additionalContext
      if (!block) return  // nothing yet (a server starting, no note for this prompt): the next prompt asks again
      seen.add(sid)
      const first = parts.find((p) => p.type === "text") ?? parts[0]
      // OpenCode stores parts by id (an upsert) and reads them back in id order: the block's id is
      // the prompt's without its last character, distinct from it and sorting just before it
      parts.unshift({{ ...first, id: first.id ? first.id.slice(0, -1) : undefined, type: "text", text: block,
                       synthetic: true }})
    }} catch (err) {{
      // the notes are an aid: never a reason to lose the prompt
    }}
  }},
}})
"""


def plugin_path(user: bool, cwd: Path) -> Path:
    if not user:
        return cwd / ".opencode" / "plugins" / FILE
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".config") / "opencode" / "plugins" / FILE


def plugin_text(notes: str | None, portable: bool) -> str:
    argv = ["cockpit", "memory", "hook"] if portable else [sys.executable, "-m", "cockpit", "memory", "hook"]
    if notes:
        argv += ["--notes", notes]
    return TEMPLATE.format(mark=MARK, command=json.dumps(argv))


def install(args: Any) -> int:
    """``cockpit memory hook --install|--uninstall --agent opencode [--user] [--yes]``."""
    import difflib

    from cockpit.errors import CockpitError

    cwd = Path.cwd()
    path = plugin_path(bool(args.user), cwd)
    current = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    if current is not None and MARK not in current:
        raise CockpitError(f"{path} exists and is not Cockpit's plugin: move it away first (nothing was written)")
    notes = args.notes if (args.user or not args.notes or args.notes == "auto") else args.notes
    new = plugin_text(notes, portable=not args.user) if args.install else None
    if new == current:
        print(f"{path}: nothing to change")
        return 0
    diff = difflib.unified_diff((current or "").splitlines(True), (new or "").splitlines(True),
                                str(path) if current is not None else "/dev/null",
                                str(path) if new is not None else "/dev/null")
    sys.stdout.writelines(diff)
    if not args.yes:
        print(f"\n{'Write' if new is not None else 'Delete'} {path}? [y/N]", end=" ", flush=True)
        if sys.stdin.readline().strip().lower() not in ("y", "yes"):
            print("nothing written")
            return 1
    if new is None:
        path.unlink()
        for folder in (path.parent, path.parent.parent):  # the folders --install made, when empty
            if folder.name in ("plugins", ".opencode") and not args.user:
                try:
                    folder.rmdir()
                except OSError:
                    break
        print("uninstalled")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".js.cockpit-tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)
    print(f"installed: OpenCode sessions in {cwd if not args.user else 'every project'} now start with the notes "
          "their first prompt needs")
    if not args.user:
        print("the plugin runs `cockpit memory hook` from PATH: everyone using it needs cockpit installed")
    return 0


__all__ = ["FILE", "MARK", "install", "plugin_path", "plugin_text"]
