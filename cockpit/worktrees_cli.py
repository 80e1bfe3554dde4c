"""``cockpit worktrees``: list, merge, keep, discard and prune the sessions' git worktrees.

Every session started in a git repository works in its own worktree under the per-user data
folder (see :mod:`cockpit.runtime.worktree`). The TUI's diff screen merges, keeps or discards
them; this command does the same from a shell — for ``cockpit run`` results, and for worktrees a
crashed run left behind::

    cockpit worktrees                 # each worktree: session, branch, base, changes, state
    cockpit worktrees diff ID         # its change against the base commit: files, then patches
    cockpit worktrees merge ID        # commit pending changes, merge into the base branch
    cockpit worktrees keep ID         # commit, remove the worktree, keep the branch
    cockpit worktrees discard ID      # remove worktree and branch (asks first; --yes to skip)
    cockpit worktrees prune           # remove worktrees with no changes and of vanished repos
                                      # (never one a live session in the server still works in)

``ID`` is a session id, a unique prefix, or a unique suffix of at least 4 characters. Exit code 1
when a merge is refused (conflict), 2 for usage errors.

``diff`` and ``merge`` print a warning line for each changed protected path (a git hook, editor or
agent config that can run code outside the sandbox: :mod:`cockpit.runtime.protected`); in a
terminal, ``merge`` then asks again (``--yes`` skips the question).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cockpit.errors import CockpitError
from cockpit.textsafe import one_line


def add_parser(sub) -> None:
    p = sub.add_parser("worktrees", help="list, merge, keep, discard or prune session worktrees",
                       description="The sessions' git worktrees: list them, merge, keep, discard, prune.")
    p.add_argument("action", nargs="?", default="list", choices=["list", "diff", "merge", "keep", "discard", "prune"])
    p.add_argument("session", nargs="?",
                   help="session id (or a unique prefix, or suffix of ≥ 4 characters) for diff/merge/keep/discard")
    p.add_argument("--json", action="store_true", help="list as JSON")
    p.add_argument("--yes", action="store_true",
                   help="discard, or merge changed protected paths, without asking")
    p.add_argument("--no-server", action="store_true", default=argparse.SUPPRESS,
                   help="act on the worktrees directly, never through a running Cockpit server")
    p.set_defaults(func=run)


def _config():
    from cockpit.runtime import load_config
    from cockpit.runtime.config import ConfigError

    try:
        return load_config()
    except ConfigError as exc:
        raise CockpitError(str(exc)) from None


def _root() -> Path:
    return _config().resolved_worktrees_dir()


def _row(info) -> dict:
    from cockpit.runtime import worktree as wt

    row = {"session": info.session_id, "task": info.task, "branch": info.branch, "base_commit": info.base_commit,
           "base_branch": info.base_branch, "path": info.path, "repo": info.repo, "transcript": info.transcript}
    if not Path(info.repo).is_dir():
        row["state"] = "repository gone"
    elif not Path(info.path).is_dir():
        row["state"] = "worktree folder gone"
    else:
        try:
            stat = wt.diff_stat(info)
            row.update(files=stat.files, added=stat.added, removed=stat.removed,
                       state="changed" if stat.files else "unchanged")
        except wt.WorktreeError as exc:
            row["state"] = f"unreadable: {exc}"
    return row


def protected_lines(diff) -> list[str]:
    """The warning lines for a diff's changed protected paths: how many, then one per file; none
    when no protected path changed."""
    from cockpit.runtime import worktree as wt

    protected = diff.protected
    if not protected:
        return []
    return [f"⚠ {wt.protected_warning(len(protected))}",
            *(f"    {one_line(f.path)}  {wt.protected_line(f)}" for f in protected)]


def _file_line(change) -> str:
    from cockpit.runtime import worktree as wt

    added = "bin" if change.added is None else f"+{change.added} -{change.removed}"
    mark = f"  {wt.protected_line(change)}" if change.protected else ""
    return f"{change.status} {one_line(change.path)}  {added}{mark}"


def _print_diff(info, extra: tuple[str, ...]) -> int:
    """``worktrees diff``: the protected-path warnings, the files, then the patches (``extra``: the
    config's protected globs)."""
    from cockpit.runtime import worktree as wt

    diff = wt.diff(info, extra_protected=extra)
    if not diff.files:
        print(f"{info.branch}: no changes against {info.base_commit[:10]}")
        return 0
    for line in protected_lines(diff):
        print(line)
    print(f"{info.branch} against {info.base_commit[:10]}: {diff.stat}")
    for change in diff.files:
        print(f"  {_file_line(change)}")
    for change in diff.files:
        if change.patch:
            print()
            print(change.patch, end="" if change.patch.endswith("\n") else "\n")
    return 0


def _confirm_protected(info, yes: bool, extra: tuple[str, ...]) -> bool:
    """Before a merge: print the warnings for changed protected paths (``extra``: the config's
    globs); in a terminal (without ``yes``) ask whether to merge anyway. True: go on."""
    from cockpit.runtime import worktree as wt

    if not Path(info.path).is_dir():
        return True
    try:
        lines = protected_lines(wt.diff(info, patches=False, extra_protected=extra))
    except wt.WorktreeError:  # the merge reports what is wrong
        return True
    for line in lines:
        print(line)
    if not lines or yes or not sys.stdin.isatty():
        return True
    return input("merge anyway? [y/N] ").strip().lower() in ("y", "yes")


def _through_server(session_id: str, action: str) -> int | None:
    """When the session belongs to a running server, review it there (the server holds its
    worktree); None when no server knows it."""
    import os

    if os.environ.get("COCKPIT_NO_SERVER"):
        return None
    from cockpit.server.client import BlockingClient, RemoteError, ServerError, server_running

    if not server_running():
        return None
    try:
        with BlockingClient() as client:
            result = client.call("review", id=session_id, action=action)
    except RemoteError as exc:
        if "no session" in exc.message:
            return None
        raise CockpitError(exc.message, code=1) from None
    except ServerError:
        return None
    print(result["data"]["message"])
    return 0 if result["data"]["ok"] else 1


def _live_sessions() -> dict[str, str]:
    """Session id → state of the sessions a running server holds that have not ended (their
    worktrees are in use); empty when no server runs."""
    import os

    if os.environ.get("COCKPIT_NO_SERVER"):
        return {}
    from cockpit.events import SessionStatus
    from cockpit.server.client import BlockingClient, RemoteError, ServerError, server_running

    if not server_running():
        return {}
    try:
        with BlockingClient() as client:
            rows = client.call("list")["sessions"]
    except (RemoteError, ServerError, OSError):
        return {}
    live = {}
    for row in rows:
        try:
            final = SessionStatus(row["status"]).is_final
        except ValueError:
            final = False  # a state this client does not know: treat it as live
        if not final:
            live[row["id"]] = row["status"]
    return live


def run(args: argparse.Namespace) -> int:
    from cockpit.runtime import worktree as wt

    root = _root()
    if args.action == "list":
        rows = [_row(i) for i in wt.list_all(root)]
        if args.json:
            print(json.dumps({"worktrees": rows}, indent=2))
        elif not rows:
            print("no session worktrees")
        for r in rows if not args.json else []:
            changes = (f"{r['files']} file{'s' if r['files'] != 1 else ''} +{r['added']} -{r['removed']}"
                       if "files" in r else r["state"])
            print(f"{r['session']}  {r['branch']}  base {r['base_commit'][:10]} on {r['base_branch'] or '(detached)'}"
                  f"  {changes}\n    {r['path']}\n    task: {one_line(r['task'])[:100]}")
        return 0
    if args.action == "prune":
        removed = 0
        live = _live_sessions()
        for info in wt.list_all(root):
            if info.session_id in live:
                print(f"kept {info.session_id}: its session is {live[info.session_id]} in the server")
                continue
            r = _row(info)
            if r["state"] in ("unchanged", "repository gone", "worktree folder gone"):
                if r["state"] == "unchanged":
                    wt.discard(info)
                else:
                    info.meta_path.unlink(missing_ok=True)
                    if Path(info.repo).is_dir():
                        wt.git("worktree", "prune", cwd=info.repo, check=False)
                print(f"pruned {info.session_id} ({r['state']})")
                removed += 1
            else:
                print(f"kept {info.session_id}: {r.get('files', '?')} files changed — merge, keep or discard it")
        print(f"{removed} pruned")
        return 0
    if not args.session:
        raise CockpitError(f"worktrees {args.action} needs a session id")
    found = wt.find(root, args.session)
    if found is None:
        raise CockpitError(f"no single session worktree matches {args.session!r} (see `cockpit worktrees`)")
    info = found
    if args.action == "discard" and not args.yes:
        if not sys.stdin.isatty():
            raise CockpitError("discard deletes the branch and its changes: add --yes to confirm")
        answer = input(f"discard {info.branch} and its worktree, changes included? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not discarded")
            return 1
    try:
        if args.action == "diff":
            return _print_diff(info, tuple(_config().protected))
        if args.action == "merge" and not _confirm_protected(info, args.yes, tuple(_config().protected)):
            print("not merged")
            return 1
    except wt.WorktreeError as exc:
        raise CockpitError(str(exc), code=1) from None
    routed = _through_server(info.session_id, args.action)
    if routed is not None:
        return routed
    message = f"cockpit session {info.session_id}: {info.task.splitlines()[0][:60] if info.task else ''}"
    try:
        if args.action == "merge":
            res = wt.merge(info, message)
            print(res.message)
            return 0 if res.ok else 1
        if args.action == "keep":
            print(wt.keep(info, message))
            return 0
        print(wt.discard(info))
        return 0
    except wt.WorktreeError as exc:
        raise CockpitError(str(exc), code=1) from None
