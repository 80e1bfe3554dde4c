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
    cockpit worktrees check ID        # the check command on the change merged onto the current base
    cockpit worktrees merge ID --check   # check first; a failed check asks again (--yes: merge anyway)
    cockpit worktrees pr ID           # push the branch, open a pull request (gh) or print the compare URL
    cockpit shell ID                  # $SHELL in the session's worktree ($EDITOR FILE with --edit FILE)

Kept branches (``cockpit/*`` branches whose worktree was removed by a keep) are listed too, with
their base, commits ahead/behind and diff stat; merge, discard, check and pr work on them.

``ID`` is a session id, a unique prefix, or a unique suffix of at least 4 characters. Exit code 1
when a merge is refused (conflict) or a check fails, 2 for usage errors (``check`` with no check
command set: nothing ran).

``diff``, ``merge`` and ``pr`` print a warning line for each changed protected path (a git hook,
editor or agent config that can run code outside the sandbox: :mod:`cockpit.runtime.protected`);
``merge`` and ``pr`` then ask in a terminal and refuse elsewhere (``--yes`` goes on), as they do
for a failed ``--check``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cockpit.errors import CockpitError
from cockpit.textsafe import one_line


def add_parser(sub) -> None:
    p = sub.add_parser("worktrees", help="list, merge, keep, discard or prune session worktrees",
                       description="The sessions' git worktrees: list them, merge, keep, discard, prune.")
    p.add_argument("action", nargs="?", default="list",
                   choices=["list", "diff", "merge", "keep", "discard", "prune", "check", "pr", "send-back"])
    p.add_argument("session", nargs="?",
                   help="session id (or a unique prefix, or suffix of ≥ 4 characters) for diff/merge/keep/discard/"
                        "check/pr/send-back (send-back: a conflicting change back to its session, through the "
                        "server — a session that ended is resumed in its worktree)")
    p.add_argument("--json", action="store_true", help="list as JSON")
    p.add_argument("--yes", action="store_true",
                   help="discard; merge or push (pr) changed protected paths or a change whose check failed, "
                        "without asking")
    p.add_argument("--no-server", action="store_true", default=argparse.SUPPRESS,
                   help="act on the worktrees directly, never through a running Cockpit server (a worktree "
                        "one of its sessions works in is still refused)")
    p.add_argument("--check", action="store_true",
                   help="merge/pr: run the check command first (a failed check stops them; --yes goes on)")
    p.add_argument("--notes", help="the notes folder (a test-command or commit-style note); default: "
                                   "the repository's notes/ folder when it has one")
    p.add_argument("--title", help="pr: the pull request's title (default: the task)")
    p.add_argument("--body", help="pr: its body (default: task, final answer, notes given, check result)")
    from cockpit.host_cli import add_host_argument

    add_host_argument(p)
    p.set_defaults(func=run)
    sh = sub.add_parser("shell", help="open $SHELL (or $EDITOR) in a session's worktree",
                        description="A shell in a session's worktree; back where you were when it exits.")
    sh.add_argument("session", help="session id (or a unique prefix, or suffix of ≥ 4 characters)")
    sh.add_argument("--edit", metavar="FILE", help="open $EDITOR on FILE (relative to the worktree) instead")
    sh.add_argument("--force", action="store_true",
                    help="open it as it is: a waiting session's jobs not ended first, and even where the "
                         "session made git repositories of its own in its worktree")
    add_host_argument(sh)
    sh.set_defaults(func=run_shell)


def _on() -> str:
    """`` --host NAME`` when this runs whole on a host (its hints then name it), else ''."""
    from cockpit.host_cli import hint

    return hint(None)


def shell_argv(edit: str | None = None) -> list[str]:
    """``$SHELL`` (``/bin/sh`` when unset), or ``$EDITOR FILE`` (``vi`` when unset)."""
    import os
    import shlex

    if edit:
        return [*shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"), edit]
    return [os.environ.get("SHELL") or "/bin/sh"]


def _one(root: Path, query: str):
    """The worktree ``query`` names; else one line: none (a prefix too short), or the ones it
    could mean, each with its branch. A session resumed in another's worktree (a send-back, `o`
    on an interrupted session) names that worktree, whose record is its first session's."""
    from cockpit.runtime import worktree as wt
    from cockpit.runtime.ids import not_one

    found = wt.candidates(root, query)
    if len(found) == 1:
        return found[0]
    if not found and (shared := _worktree_of_session(root, query)) is not None:
        info, sid = shared
        print(f"session {sid} works in session {info.session_id}'s worktree (resumed there): "
              f"acting on {info.session_id}'s", file=sys.stderr)
        return info
    see = f"`cockpit worktrees{_on()}`"
    why = not_one(query, [(w.session_id, w.branch) for w in found], "session worktree", see)
    if not found and (done := _dealt_with(query)):  # merged or discarded already: say that
        why = f"{why}: {done}"
    raise CockpitError(f"{why} (see {see})" if found else why)


def _histories(query: str):
    """``(session id, its folded transcript)`` for each transcript of this data folder whose
    session ``query`` names (a transcript is ``<stamp>-<id>.jsonl``); unreadable ones skipped."""
    from cockpit.runtime.history import fold
    from cockpit.runtime.ids import matches
    from cockpit.runtime.transcript import read_events

    folder = _config().resolved_sessions_dir()
    for p in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        sid = p.stem.split("-", 2)[-1]
        if matches(query, sid):
            try:
                yield sid, fold(read_events(p, []))
            except (OSError, ValueError):
                continue


def _dealt_with(query: str) -> str:
    """What became of the change of the one session ``query`` names when it was merged or
    discarded already (its transcript's last review), e.g. "session X: merged B into main (…)";
    else ""."""
    found = list(_histories(query))
    if len(found) != 1:
        return ""
    sid, history = found[0]
    reviewed = history.reviewed
    if reviewed is None or not reviewed.ok or reviewed.action not in ("merge", "discard"):
        return ""
    return f"session {sid}'s change was dealt with already — {reviewed.message}"


def _worktree_of_session(root: Path, query: str):
    """``(record, session id)`` when ``query`` names one session — of the running server, else
    of the transcripts — that works in the worktree of another session's record; else None."""
    from cockpit.runtime import worktree as wt
    from cockpit.runtime.ids import matches

    paths = {}
    for sid, _state, path in _server_rows():
        if matches(query, sid) and path:
            paths[sid] = path
    if not paths:
        for sid, history in _histories(query):
            if history.worktree is not None and sid not in paths:
                paths[sid] = history.worktree.path
    if len(paths) != 1:
        return None
    (sid, path), = paths.items()
    records = [w for w in wt.list_all(root) + wt.list_kept(root) if w.path == path]
    return (records[0], sid) if len(records) == 1 else None


def run_shell(args: argparse.Namespace) -> int:
    import subprocess


    info = _one(_root(), args.session)
    if not Path(info.cwd).is_dir():
        raise CockpitError(f"{info.branch} has no worktree (kept branch): nothing to open a shell in")
    forced = getattr(args, "force", False)
    if not forced:  # a live session's shell and jobs ended: nothing plants after the check
        rows = _server_rows()
        _quiesce(_holder(info, rows), rows)
    if not forced and (why := planted_warning(info.path)):
        raise CockpitError(f"{why}; or open the shell anyway: cockpit shell --force {info.session_id}")
    print(f"shell in {info.cwd} ({info.branch}); exit to come back", file=sys.stderr)
    return subprocess.call(shell_argv(args.edit), cwd=info.cwd, env=shell_env())


def planted_warning(tree: str) -> str:
    """Why not to open a shell in ``tree`` yet ("" when nothing is in the way): the git
    repositories the session made inside its worktree, and how to remove them."""
    import shlex

    from cockpit.runtime import worktree as wt

    planted = wt.planted_repos(tree)
    if not planted:
        return ""
    if planted == ["…"]:
        return (f"{tree} holds more than {wt.PLANTED_SCAN_MAX:,} files and folders: it could not all be checked for "
                "git repositories the session made there (their config would run commands when your git looks inside)")
    real = [p for p in planted if p != "…"]
    names = ", ".join(real[:5]) + (f" (+{len(real) - 5} more)" if len(real) > 5 else "")
    def what(rel: str) -> Path:  # the link itself, the .git, or a bare repository's folder
        path = Path(tree) / rel
        return path if path.is_symlink() or not (path / ".git").exists() else path / ".git"

    remove = " ".join(shlex.quote(str(what(p))) for p in real[:5])
    return (f"the session made git repositories of its own at {names} in its worktree: their config, which the "
            f"session wrote, runs commands when your git or a shell prompt looks inside them; remove them first "
            f"(rm -rf {remove})")


def shell_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a shell opened in a session's worktree: yours, and git told to run no
    fsmonitor, to use no bare repository it only finds by looking and not to look into
    submodules from the worktree's root (a session still running could plant a repository there
    after the check: its config would run at your prompt's `git status`) — added to any
    ``GIT_CONFIG_COUNT`` entries you set."""
    import os

    env = dict(os.environ if base is None else base)
    try:
        n = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        n = 0
    for key, value in (("core.fsmonitor", "false"), ("safe.bareRepository", "explicit"),
                       ("diff.ignoreSubmodules", "all"), ("status.submoduleSummary", "false"),
                       ("submodule.recurse", "false")):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
        n += 1
    env["GIT_CONFIG_COUNT"] = str(n)
    return env


def _notes_dir(args: argparse.Namespace, info) -> Path | None:
    if getattr(args, "notes", None):
        given = Path(args.notes).expanduser()
        if not given.is_dir():  # as the memory commands: a mistyped folder is said, not read as none
            raise CockpitError(f"notes folder {given} does not exist (check the path given to --notes)")
        return given
    guess = Path(info.repo) / "notes"
    return guess if guess.is_dir() else None


def _run_check(args: argparse.Namespace, info):
    """Find the check command (config, then a ``test-command`` note: confirmed once), run it; the
    result (printed), or None when there is no command or it was not confirmed."""
    from cockpit.runtime import ship

    cfg = _config()
    command, source = ship.check_command(cfg, _notes_dir(args, info))
    if command is None:
        print(source)
        return None
    if source != "config" and not ship.is_confirmed(command, info.repo):
        print(f"check command from the {source}:\n    {command}")
        if not args.yes and not sys.stdin.isatty():
            raise CockpitError("a check command from a note runs only once confirmed: add --yes", code=1)
        if not args.yes and input("run it (now and from now on)? [y/N] ").strip().lower() not in ("y", "yes"):
            print("not run")
            return None
        ship.confirm(command, info.repo)
    print(f"checking {info.branch} merged onto {info.base_branch or info.base_commit[:10]}: {command}", flush=True)
    res = ship.run_check(info, command, cfg)
    print(ship.check_report(res))
    return res


def _config():
    from cockpit.runtime import load_config
    from cockpit.runtime.config import ConfigError

    try:
        return load_config()
    except ConfigError as exc:
        raise CockpitError(str(exc)) from None


def _root() -> Path:
    return _config().resolved_worktrees_dir()


def _here() -> str | None:
    """The repository the command runs in (its top folder, resolved), or None outside one."""
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return os.path.realpath(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def _elsewhere(repo: str, here: str | None) -> str:
    """`` in REPO`` when the session's repository is not the one the command runs in (its merge,
    keep or discard lands there), else ``""``."""
    return "" if here is not None and os.path.realpath(repo) == here else f" in {repo}"


def _row(info, kept: bool = False) -> dict:
    from cockpit.runtime import worktree as wt

    row = {"session": info.session_id, "task": info.task, "branch": info.branch, "base_commit": info.base_commit,
           "base_branch": info.base_branch, "path": info.path, "repo": info.repo, "transcript": info.transcript}
    if kept:
        row["state"] = "kept"
        row["path"] = None
        try:
            stat = wt.diff_stat(info)
            ahead, behind = wt.ahead_behind(info)
            row.update(files=stat.files, added=stat.added, removed=stat.removed, ahead=ahead, behind=behind)
        except wt.WorktreeError as exc:
            row["state"] = f"kept, unreadable: {exc}"
    elif not Path(info.repo).is_dir():
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
    link = f"  → {one_line(change.link)} (a symbolic link)" if getattr(change, "link", "") else ""
    return f"{change.status} {one_line(change.path)}  {added}{link}{mark}"


def _print_diff(info, extra: tuple[str, ...]) -> int:
    """``worktrees diff``: the protected-path warnings, the files, then the patches (``extra``: the
    config's protected globs)."""
    from cockpit.runtime import worktree as wt

    diff = wt.diff(info, extra_protected=extra)
    # what a merge does to the base branch as it is now (not the commit the session started from,
    # which a send-back's merge of the base branch left behind)
    against = info.base_branch or info.base_commit[:10]
    if not diff.files:
        print(f"{info.branch}: no changes against {against}")
        return 0
    for line in protected_lines(diff):
        print(line)
    if diff.conflicts:  # the merge would be refused: said first, and what the diff is against
        print(f"⚠ conflicts with {against} in {', '.join(diff.conflicts)} — a merge would refuse it")
        _conflict_hint(info.session_id, against, None if Path(info.path).is_dir() else info.branch)
    if diff.unresolved:
        print(f"⚠ conflict markers left in {', '.join(diff.unresolved)} — a merge would refuse it")
    since = f"where it last met {against}" if diff.conflicts else against  # (the diff's start)
    print(f"{info.branch} against {since}: {diff.stat}")
    for change in diff.files:
        print(f"  {_file_line(change)}")
    for change in diff.files:
        if change.patch:
            print()
            print(change.patch, end="" if change.patch.endswith("\n") else "\n")
    return 0


def _confirm_protected(info, yes: bool, extra: tuple[str, ...], verb: str = "merge") -> bool:
    """Before a merge or a push (``verb``): print the warnings for changed protected paths
    (``extra``: the config's globs); in a terminal (without ``yes``) ask whether to go on anyway,
    elsewhere only ``yes`` does (as a failed check). True: go on."""
    from cockpit.runtime import worktree as wt

    try:
        lines = protected_lines(wt.diff(info, patches=False, extra_protected=extra))
    except wt.WorktreeError:  # the merge reports what is wrong
        return True
    for line in lines:
        print(line)
    if not lines or yes:
        return True
    if verb == "push":  # a pushed workflow or hook runs on the forge's CI, with the repository's secrets
        print("(a pushed branch runs them there: in CI on the forge, in the checkout of whoever fetches it)")
    if not sys.stdin.isatty():
        print(f"(review them; --yes {_FORMS[verb][2]} anyway)")
        return False
    return input(f"{verb} anyway? [y/N] ").strip().lower() in ("y", "yes")


_FORMS = {"merge": ("merging", "merged", "merges"), "push": ("pushing", "pushed", "pushes")}


def _check_gate(args, info, verb: str):
    """``--check``: run the check command on the change; a failed one stops the merge or the push
    (``verb``) unless ``--yes``, or a yes in a terminal. Returns (go on, the check's result or
    None)."""
    if not args.check:
        return True, None
    res = _run_check(args, info)
    if res is None or res.ok:
        return True, res
    ing, ed, es = _FORMS[verb]
    if args.yes:
        print(f"{ing} anyway (--yes)")
        return True, res
    if sys.stdin.isatty() and input(f"the check did not pass: {verb} anyway? [y/N] ").strip().lower() in ("y", "yes"):
        return True, res
    print(f"not {ed} (the check did not pass; --yes {es} anyway)")
    return False, res


def _through_server(session_id: str, action: str, kept: str | None = None) -> int | None:
    """When the session belongs to a running server, review it there (the server holds its
    worktree); None when no server knows it."""
    import os

    if os.environ.get("COCKPIT_NO_SERVER"):
        return None
    from cockpit.server.client import BlockingClient, RemoteError, ServerError, server_running

    if not server_running():
        return None
    params: dict = {"id": session_id, "action": action}
    if action == "send-back":  # it may resume the session: with this terminal's settings, as a resume
        from cockpit.server.remote import client_payload

        params["config"] = client_payload(_config())
    try:
        with BlockingClient() as client:
            result = client.call("review", **params)
    except RemoteError as exc:
        if "no session" in exc.message:
            return None
        raise CockpitError(exc.message, code=1) from None
    except ServerError:
        return None
    data = result["data"]
    print(data["message"])
    from cockpit.runtime.worktree import refused_for_a_conflict

    if action == "merge" and refused_for_a_conflict(str(data["message"])):
        _conflict_hint(session_id, "the base branch", kept)
    return 0 if data["ok"] else 1


def _send_back(session_id: str) -> int:
    """A conflicting change back to its session (the server's ``review`` ``send-back``: a follow-up
    naming the files; a session that ended is resumed in its worktree first)."""
    import os

    if os.environ.get("COCKPIT_NO_SERVER"):
        raise CockpitError("send-back gives the session a follow-up: it needs the Cockpit server "
                           "(unset COCKPIT_NO_SERVER)", code=1)
    from cockpit.server.client import server_running

    if not server_running():
        raise CockpitError(f"no Cockpit server is running: send-back needs the server that holds session "
                           f"{session_id}; resolve it by hand instead: cockpit shell {session_id}", code=1)
    routed = _through_server(session_id, "send-back")
    if routed is None:
        raise CockpitError(f"no session {session_id} in the running Cockpit server (send-back needs the server "
                           f"that holds it); resolve it by hand instead: cockpit shell {session_id}", code=1)
    return routed


def _conflict_hint(session_id: str, base: str, kept: str | None = None) -> None:
    """What to do about a merge that conflicts (nothing was merged). ``kept``: the branch, kept
    without a worktree (no session or shell can work in it: a checkout of it can)."""
    on = _on()  # (run whole on a host: $COCKPIT_HINT_HOST names it)
    if kept:
        print(f"    the branch is kept without a worktree: resolve it in a checkout of it (git worktree add DIR "
              f"{kept}, then git merge {base} there and commit), then merge again; or leave it: nothing was merged")
        return
    print(f"    send it back: cockpit worktrees{on} send-back {session_id} (or in the app: d, then b); "
          f"resolve by hand: cockpit shell{on} {session_id}; or leave it: nothing was merged")


def _quiesce(session_id: str, rows: list[tuple[str, str, str]]) -> None:
    """When a running server holds the session and it has not ended (``rows``: the server's, see
    :func:`_server_rows`): its shell and jobs ended (``quiesce``). Raises CockpitError while it works."""
    if session_id not in _live_sessions(rows):
        return
    from cockpit.server.client import BlockingClient, RemoteError, ServerError

    try:
        with BlockingClient() as client:
            client.call("quiesce", id=session_id)
    except RemoteError as exc:
        raise CockpitError(f"no shell opened: {exc} (or open it anyway: cockpit shell --force {session_id})",
                           code=1) from None
    except (ServerError, OSError):  # the server went away meanwhile: nothing of it runs there
        pass


def _server_rows(asked_not_to: bool = False) -> list[tuple[str, str, str]]:
    """``(id, state, worktree path or "")`` of every session a running server holds; empty when
    no server runs, or when told not to use one (``--no-server``) unless ``asked_not_to``: a
    direct merge, keep or discard still must not pull a worktree from under a working session."""
    import os

    if os.environ.get("COCKPIT_NO_SERVER") and not asked_not_to:
        return []
    from cockpit.server.client import BlockingClient, RemoteError, ServerError, server_running

    if not server_running():
        return []
    try:
        with BlockingClient() as client:
            rows = client.call("list")["sessions"]
    except (RemoteError, ServerError, OSError):
        return []
    return [(str(row["id"]), str(row["status"]), str((row.get("worktree") or {}).get("path") or ""))
            for row in rows]


def _live_sessions(rows: list[tuple[str, str, str]]) -> dict[str, tuple[str, str]]:
    """Session id → ``(state, worktree path)`` of the sessions that have not ended (their worktrees
    are in use), of ``rows`` (the server's, :func:`_server_rows`)."""
    from cockpit.events import SessionStatus

    live = {}
    for sid, state, path in rows:
        try:
            final = SessionStatus(state).is_final
        except ValueError:
            final = False  # a state this client does not know: treat it as live
        if not final:
            live[sid] = (state, path)
    return live


def _holder(info, rows: list[tuple[str, str, str]]) -> str:
    """The id to review ``info`` by in the running server (``rows``: its sessions): its session's,
    or — when the server no longer holds that one (resumed after an interruption) — the
    session's that works in the same worktree now."""
    if any(sid == info.session_id for sid, _s, _p in rows):
        return info.session_id
    return next((sid for sid, _s, path in rows if path == info.path), info.session_id)


def _refuse_what_does_not_apply(args: argparse.Namespace) -> None:
    """Arguments the action does not take are refused in one line, never dropped."""
    if args.action in ("list", "prune") and args.session:
        raise CockpitError(f"worktrees {args.action} takes no session id (got {args.session!r}): "
                           f"cockpit worktrees diff{_on()} {args.session} shows one")
    only = {"--title": ("pr",), "--body": ("pr",), "--check": ("merge", "pr"), "--json": ("list",),
            "--yes": ("merge", "discard", "check", "pr"), "--notes": ("merge", "keep", "check", "pr")}
    for flag, actions in only.items():
        if getattr(args, flag[2:], None) and args.action not in actions:
            raise CockpitError(f"{flag} is for worktrees {', '.join(actions[:-1])}{' and ' if actions[:-1] else ''}"
                               f"{actions[-1]}, not {args.action}")


def run(args: argparse.Namespace) -> int:
    from cockpit.runtime import worktree as wt

    _refuse_what_does_not_apply(args)
    root = _root()
    if args.action == "list":
        rows = [_row(i) for i in wt.list_all(root)]
        kept = [_row(i, kept=True) for i in wt.list_kept(root)]
        if args.json:
            print(json.dumps({"worktrees": rows, "kept": kept}, indent=2))
        elif not rows and not kept:
            print("no session worktrees")
        here = _here()
        for r in rows + kept if not args.json else []:
            changes = (f"{r['files']} file{'s' if r['files'] != 1 else ''} +{r['added']} -{r['removed']}"
                       if "files" in r else r["state"])
            if "ahead" in r:
                changes = f"kept branch, {r['ahead']} ahead / {r['behind']} behind, {changes}"
            # "on main" of which repository: a row of another one says so (its merge lands there)
            on = f"{r['base_branch'] or '(detached)'}{_elsewhere(r['repo'], here)}"
            print(f"{r['session']}  {r['branch']}  base {r['base_commit'][:10]} on {on}"
                  f"  {changes}\n    {r['path'] or '(no worktree)'}\n    task: {one_line(r['task'])[:100]}")
        return 0
    if args.action == "prune":
        removed = 0
        live = _live_sessions(_server_rows())
        in_use = {path: (sid, state) for sid, (state, path) in live.items() if path}
        for info in wt.list_all(root):
            if info.session_id in live:
                print(f"left {info.session_id}: its session is {live[info.session_id][0]} in the server")
                continue
            if info.path in in_use:  # a session resumed in it (a send-back, an interrupted one resumed)
                sid, state = in_use[info.path]
                print(f"left {info.session_id}: session {sid} works in it and is {state} in the server")
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
                n = r.get("files")
                if n is not None:
                    files = f"{n} file{'' if n == 1 else 's'}"
                    print(f"left {info.session_id}: {files} changed — merge, keep or discard it")
                else:  # its branch or worktree cannot be read: only a discard can end it
                    print(f"left {info.session_id}: {r.get('state', 'not read')} — "
                          f"cockpit worktrees discard {info.session_id} removes what is left")
        print(f"{removed} pruned")
        return 0
    if not args.session:
        raise CockpitError(f"worktrees {args.action} needs a session id")
    if args.action == "send-back":
        return _send_back(args.session)
    info = _one(root, args.session)
    _notes_dir(args, info)  # a --notes given that does not exist: said before anything is done
    if args.action in ("merge", "keep", "discard", "pr") and (elsewhere := _elsewhere(info.repo, _here())):
        print(f"session {info.session_id} is a session{elsewhere}")  # typed in another repository: where it acts
    if args.action == "discard" and not args.yes:
        if not sys.stdin.isatty():
            raise CockpitError("discard deletes the branch and its changes: add --yes to confirm")
        answer = input(f"discard {info.branch} and its worktree, changes included? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not discarded")
            return 1
    is_kept = not Path(info.path).is_dir() and wt.branch_exists(info)
    from cockpit.runtime import ship

    def message() -> str:  # Cockpit's commit of the session's work (read from its transcript)
        return ship.commit_message(info, _notes_dir(args, info))

    try:
        if args.action == "diff":
            return _print_diff(info, tuple(_config().protected))
        if args.action == "check":
            command, source = ship.check_command(_config(), _notes_dir(args, info))
            if command is None:  # nothing to run: not a failed check (a script tells them apart by the code)
                raise CockpitError(source, code=2)
            res = _run_check(args, info)
            return 0 if res is not None and res.ok else 1
        if args.action in ("merge", "pr"):
            verb = "merge" if args.action == "merge" else "push"
            if not _confirm_protected(info, args.yes, tuple(_config().protected), verb):
                print(f"not {_FORMS[verb][1]}")
                return 1
            go_on, check = _check_gate(args, info, verb)
            if not go_on:
                return 1
        if args.action == "pr":
            title, body = ship.pr_text(info, check, tuple(_config().protected))
            ok, line = ship.open_pr(info, args.title or title, args.body or body, message())
            print(line)
            return 0 if ok else 1
    except wt.WorktreeError as exc:
        raise CockpitError(str(exc), code=1) from None
    # the server's sessions, asked also with --no-server: a direct merge, keep or discard must not
    # pull a worktree from under one working in it
    server_rows = _server_rows(asked_not_to=True)
    # a kept branch too: the server records it in the session's history, so an open app shows it
    routed = None if is_kept and args.action == "keep" else \
        _through_server(_holder(info, server_rows), args.action, info.branch if is_kept else None)
    if routed is not None:
        return routed
    working = [(sid, state) for sid, (state, path) in _live_sessions(server_rows).items() if path == info.path]
    if working and not is_kept:  # (--no-server) the server's session still works in this worktree
        sid, state = working[0]
        raise CockpitError(f"session {sid} works in this worktree and is {state} in the Cockpit server: "
                           f"{args.action} it through the server (without --no-server), or end it first "
                           f"(cockpit kill {sid})", code=1)
    try:
        if args.action == "merge":
            res = wt.merge(info, message(), ship.merge_message(info, _notes_dir(args, info)))
            print(res.message)
            if res.conflicts:
                _conflict_hint(info.session_id, info.base_branch, info.branch if is_kept else None)
            return 0 if res.ok else 1
        if args.action == "keep":
            print(wt.keep(info, message()))
            return 0
        print(wt.discard(info))
        return 0
    except wt.WorktreeError as exc:
        raise CockpitError(str(exc), code=1) from None
