"""From a session's change to a merged one: the check command, the sandbox it runs in, the
follow-up after a conflict, merge commit messages, push and pull request.

- **Check command** (tests before merge): ``check_command`` in ``config.toml`` (top level or
  ``[worktrees]``) first; else a note named ``test-command`` in the notes folder, whose body's first
  code block (or inline code span) is the command — shown and confirmed once (the confirmation is
  remembered per command and repository in ``checks-confirmed.json`` in the data folder). It runs
  on the session's change merged onto the current base, in a scratch worktree
  (:func:`cockpit.runtime.worktree.check`), inside the OS sandbox when there is one, network off.
- **Conflicts**: :func:`conflict_followup` is the message that sends a conflicting change back to
  its session.
- **Commit style**: a note named ``commit-style`` or ``commit-messages`` that mentions Conventional
  Commits makes merge commit messages ``fix: <task>`` (a task starting with fix/bug/repair…) or
  ``feat: <task>``; without one, ``Merge <branch>: <task>``.
- **Pull request**: :func:`pr_text` drafts a title and body (the task, the session's final answer,
  the notes it was given, the check's result); :func:`open_pr` pushes the branch and runs
  ``gh pr create`` when ``gh`` is on ``PATH``, else gives GitHub's compare URL (or says pushed).

Everything blocks (git, the check): call from a thread.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cockpit.runtime import worktree as wt

CHECK_NOTE = "test-command"
STYLE_NOTES = ("commit-style", "commit-messages")


@dataclass(frozen=True)
class PullRequestDraft:
    """A pull request's text as drafted from the session (the user edits it before it is opened)."""

    title: str
    body: str


# -- the check command --------------------------------------------------------------------------
def _note_file(notes_dir: Path | str | None, name: str) -> Path | None:
    """The note called ``name`` (file ``<name>.md``, or a note whose front matter says ``name:``)."""
    if not notes_dir or not Path(notes_dir).is_dir():
        return None
    direct = Path(notes_dir) / f"{name}.md"
    if direct.is_file():
        return direct
    for path in sorted(Path(notes_dir).glob("*.md")):
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:600]
        except OSError:
            continue
        if re.search(rf"(?m)^name:\s*['\"]?{re.escape(name)}['\"]?\s*$", head):
            return path
    return None


def _body(text: str) -> str:
    """A note's text without its front matter."""
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            return text[end + 4:]
    return text


def command_from_note(text: str) -> str | None:
    """The first fenced code block's first non-empty line(s), or the first inline code span."""
    body = _body(text)
    block = re.search(r"```[^\n]*\n(.*?)```", body, re.S)
    span = re.search(r"(?<!`)`([^`\n]+)`(?!`)", body)
    if block and (not span or block.start() < span.start()):
        lines = [ln.strip() for ln in block.group(1).splitlines() if ln.strip() and not ln.strip().startswith("#")]
        return " && ".join(ln.removeprefix("$ ") for ln in lines) or None
    return span.group(1).strip() if span else None


def check_command(config: Any, notes_dir: Path | str | None = None) -> tuple[str | None, str]:
    """(the check command or None, where it came from: ``config`` | ``note <path>`` | why none)."""
    if getattr(config, "check_command", None):
        return config.check_command, "config"
    note = _note_file(notes_dir, CHECK_NOTE)
    if note is None:
        return None, ("no check command: set check_command in config.toml ([worktrees]) or write a "
                      f"note named {CHECK_NOTE} whose first code block is the command")
    try:
        cmd = command_from_note(note.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        return None, f"cannot read {note}: {exc.strerror or exc}"
    if not cmd:
        return None, f"the note {note.name} holds no code span or block with the command"
    return cmd, f"note {note}"


def _confirmed_file() -> Path:
    from cockpit.runtime.config import worktrees_dir

    return worktrees_dir().parent / "checks-confirmed.json"  # the data folder


def _key(command: str, repo: str) -> str:
    return hashlib.sha256(f"{repo}\0{command}".encode()).hexdigest()[:32]


def is_confirmed(command: str, repo: str) -> bool:
    """True when the user has confirmed running this command (from a note) in this repository."""
    try:
        return _key(command, repo) in json.loads(_confirmed_file().read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def confirm(command: str, repo: str) -> None:
    """Remember that the user confirmed the command (a note's) for this repository."""
    path = _confirmed_file()
    try:
        keys = list(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        keys = []
    keys.append(_key(command, repo))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(sorted(set(keys))), encoding="utf-8")
    os.replace(tmp, path)


def sandbox_wrap(config: Any, made: list[str]):
    """``wrap(tree, argv) -> argv`` running a check in the OS sandbox with the network off, or None
    when there is no sandbox here or the config turned it off; the temp folders it makes are
    appended to ``made`` (the caller removes them)."""
    from cockpit.runtime import sandbox

    if not getattr(config, "sandbox", True):
        return None
    backend = sandbox.detect().backend
    if backend is None:
        return None
    settings = replace(config.sandbox_settings(), network="off")
    root = config.resolved_worktrees_dir()
    hidden = [str(root), str(config.resolved_sessions_dir())]

    def wrap(tree: str, argv: list[str]) -> list[str]:
        tmp = sandbox.session_tmp(root)
        made.append(tmp)
        conf = sandbox.confinement_for(tree, tree, tmp, settings, also_hidden=hidden)
        return backend.command(conf, argv)

    return wrap


def run_check(info: wt.WorktreeInfo, command: str, config: Any, timeout: float = 900.0) -> wt.CheckResult:
    """:func:`worktree.check` inside the sandbox when there is one (network off); the sandbox's
    temp folder is removed after it."""
    from cockpit.runtime import scratch

    made: list[str] = []
    try:
        return wt.check(info, command, sandbox_wrap(config, made), timeout)
    finally:
        for tmp in made:
            scratch.remove(tmp)


def check_report(res: wt.CheckResult, lines: int = 20) -> str:
    """The result's line and, unless it passed, the last ``lines`` lines of its output."""
    if res.ok or not res.output.strip():
        return res.line()
    tail = "\n".join(res.output.rstrip().splitlines()[-lines:])
    return f"{res.line()}\n{tail}"


# -- conflicts ----------------------------------------------------------------------------------
def conflict_followup(info: wt.WorktreeInfo, conflicts: tuple[str, ...] | list[str]) -> str:
    """The follow-up that sends a conflicting change back to its session."""
    base = info.base_branch or info.base_commit[:10]
    files = "\n".join(f"- {p}" for p in conflicts) or "- (git named no file)"
    return (f"Merging your branch {info.branch} into {base} conflicts in these files:\n{files}\n\n"
            f"Please merge {base} into your branch yourself, here in your worktree (`git merge {base}`), "
            "resolve the conflicts keeping both intents, run the tests, and commit the merge. "
            "Then tell me it is ready to merge.")


def unresolved_followup(info: wt.WorktreeInfo, paths: tuple[str, ...] | list[str]) -> str:
    """The follow-up that sends back a change still holding a conflict (unmerged paths, or
    conflict markers left in its files)."""
    base = info.base_branch or info.base_commit[:10]
    files = "\n".join(f"- {p}" for p in paths)
    return (f"Your branch {info.branch} cannot be merged into {base} yet: these files still hold an unresolved "
            f"conflict (unmerged in git, or `<<<<<<<` / `=======` / `>>>>>>>` lines left in them):\n{files}\n\n"
            "Please resolve each one keeping both intents, remove every conflict marker, run the tests, and "
            "commit. Then tell me it is ready to merge.")


# -- commit messages ----------------------------------------------------------------------------
_FIX = re.compile(r"^\s*(fix|bug|repair|correct|resolve|patch|crash|broken|regression)", re.I)


def commit_style(notes_dir: Path | str | None) -> str | None:
    """``conventional`` when a ``commit-style``/``commit-messages`` note mentions Conventional
    Commits; None otherwise."""
    for name in STYLE_NOTES:
        note = _note_file(notes_dir, name)
        if note is None:
            continue
        try:
            text = note.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if re.search(r"conventional[\s-]*commits?", text, re.I):
            return "conventional"
    return None


SUBJECT_MAX = 72  # git's customary subject line


def _fit(text: str, width: int = SUBJECT_MAX) -> str:
    """``text`` in ``width`` characters, cut at a word with "…" when it is longer."""
    if len(text) <= width:
        return text
    head = text[: width - 1]
    if " " in head[width // 2:]:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:-") + "…"


def subject(info: wt.WorktreeInfo, notes_dir: Path | str | None) -> str:
    """The subject line of the session's change: the task's first line, as ``fix: …``/``feat: …``
    when a note says the project writes Conventional Commits; at most :data:`SUBJECT_MAX`."""
    first = (info.task.strip().splitlines() or [""])[0].strip() or info.branch
    if commit_style(notes_dir) != "conventional":
        return _fit(first)
    kind = "fix" if _FIX.match(first) else "feat"
    return _fit(f"{kind}: {first[0].lower()}{first[1:].rstrip('.')}")


def commit_message(info: wt.WorktreeInfo, notes_dir: Path | str | None) -> str:
    """The message of Cockpit's commit of the session's work — what the base branch gets when the
    merge fast-forwards: :func:`subject`, the whole task when the subject could not hold it, the
    notes the session was given, and the session as a trailer."""
    import textwrap

    head = subject(info, notes_dir)
    task = info.task.strip()
    parts = [head]
    if task and (len(task.splitlines()) > 1 or head.endswith("…")):
        parts.append("\n".join(textwrap.fill(line, SUBJECT_MAX) if line.strip() else ""
                               for line in task.splitlines()))
    _answer, notes = session_facts(info)
    if notes:
        parts.append(textwrap.fill("Notes given: " + ", ".join(notes), SUBJECT_MAX))
    parts.append(f"Cockpit-Session: {info.session_id}")
    return "\n\n".join(parts)


def merge_message(info: wt.WorktreeInfo, notes_dir: Path | str | None) -> str | None:
    """The merge commit's message under the project's commit style (None: the default)."""
    if commit_style(notes_dir) != "conventional":
        return None
    return f"{subject(info, notes_dir)}\n\nMerge {info.branch} (cockpit session {info.session_id})"


# -- pull requests ------------------------------------------------------------------------------
def session_facts(info: wt.WorktreeInfo) -> tuple[str, list[str]]:
    """(the session's final answer, the names of the notes it was given) from its transcript."""
    from cockpit.runtime.history import fold
    from cockpit.runtime.transcript import read_events

    if not info.transcript or not Path(info.transcript).is_file():
        return "", []
    try:
        h = fold(read_events(Path(info.transcript)))
    except (OSError, ValueError):
        return "", []
    # a session waiting for a follow-up has no end yet: its answer is its last text; the notes
    # given are the block's lines (a note only named in its "may be relevant" index was not given)
    return h.final_text, [n.name for n in h.notes if n.name and n.kind == "line"]


def pr_text(info: wt.WorktreeInfo, check: wt.CheckResult | None = None,
            extra_protected: tuple[str, ...] = ()) -> tuple[str, str]:
    """A pull request's title and body: the task, the session's final answer, the notes it was
    given, the check's result."""
    task = info.task.strip() or info.branch
    title = task.splitlines()[0][:72]
    final, notes = session_facts(info)
    parts = [f"## Task\n\n{task}"]
    if final.strip():
        parts.append(f"## What the session did\n\n{final.strip()}")
    if notes:
        parts.append("## Notes it was given\n\n" + "\n".join(f"- {n}" for n in notes))
    try:
        protected = wt.diff(info, patches=False, extra_protected=extra_protected).protected
    except wt.WorktreeError:
        protected = ()
    if protected:  # the reviewers on the forge see it too (a workflow runs there with the secrets)
        parts.append("## ⚠ Protected paths\n\nThis change touches paths that can run code outside a sandbox "
                     "(CI workflows, git hooks, editor or agent config); review them first:\n\n"
                     + "\n".join(f"- `{f.path}` — {f.protected}" for f in protected))
    if check is not None:
        parts.append(f"## Check\n\n{check.line()}" + (
            "" if check.ok or not check.output.strip()
            else "\n\n```\n" + "\n".join(check.output.rstrip().splitlines()[-15:]) + "\n```"))
    parts.append(f"_Branch `{info.branch}`, from Cockpit session {info.session_id}._")
    return title, "\n\n".join(parts)


def open_pr(info: wt.WorktreeInfo, title: str, body: str, message: str = "") -> tuple[bool, str]:
    """Push the branch, then open a pull request with ``gh`` when it is installed (else GitHub's
    compare URL, or just "pushed"). Returns (ok, one line)."""
    try:
        remote, url = wt.push(info, message or commit_message(info, None))
    except wt.WorktreeError as exc:
        return False, f"not pushed: {exc}"
    gh = shutil.which("gh")
    base = info.base_branch or "main"
    if gh:
        args = [gh, "pr", "create", "--title", title, "--body", body, "--head", info.branch, "--base", base]
        try:
            proc = subprocess.run(args, cwd=info.repo, capture_output=True, text=True, errors="replace",
                                  timeout=120, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"pushed {info.branch} to {remote}; gh pr create failed: {exc}"
        said = f"{proc.stderr}\n{proc.stdout}"
        if proc.returncode != 0 and "already exists" in said:  # the push updated the one open for this branch
            found = re.findall(r"https?://\S+", said)
            return True, (f"pushed {info.branch} to {remote}: the pull request already open for it has the change"
                          + (f": {found[-1]}" if found else ""))
        if proc.returncode != 0:
            why = (proc.stderr or proc.stdout).strip().splitlines()
            last = why[-1] if why else f"exit {proc.returncode}"
            return False, f"pushed {info.branch} to {remote}; gh pr create failed: {last}"
        link = (proc.stdout.strip().splitlines() or [""])[-1]
        return True, f"pull request opened: {link}" if link else f"pull request opened for {info.branch}"
    compare = wt.compare_url(url, base, info.branch)
    if compare:
        return True, f"pushed {info.branch} to {remote}; open the pull request: {compare}"
    return True, f"pushed {info.branch} to {remote} ({url})"
