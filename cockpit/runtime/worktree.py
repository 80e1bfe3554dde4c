"""A git worktree per session: create, include files, diff, merge, keep, discard, list, prune.

When a session's workspace is inside a git repository, it gets its own worktree on a new branch
``cockpit/<session-id>/<slug>`` created from the repository's current HEAD, under the per-user
data folder (``<data>/worktrees/<repo>-<hash>/<session-id>``), so sessions never write over each
other or over the user's checkout. A workspace in a sub-folder of the repository maps to the same
sub-folder of the worktree. Untracked files listed (gitignore syntax) in ``.worktreeinclude`` at
the repository root are copied in (``.env`` and the like; the convention of Claude Code's desktop
app). Each worktree has a metadata file beside it (``<session-id>.json``: :class:`WorktreeInfo`)
so ``cockpit worktrees`` can list and prune worktrees a crashed run left behind.

Review: :func:`diff` is the change against the base commit, committed or not, including new
untracked (not ignored) files; computed with a temporary index, the worktree's own index is never
touched; a patch over :data:`MAX_PATCH_CHARS` (or past :data:`MAX_DIFF_CHARS` for the whole
diff) is cut at a line end with a line saying so (the file counts stay exact). :func:`merge`
commits what is pending on the session branch, then merges it into the branch the session
started from (fast-forward when possible, else a merge commit; a conflict is aborted and
reported, never forced). :func:`keep` commits and removes the worktree, keeping the
branch. :func:`discard` removes worktree and branch.

All functions block (they run git): call them from a thread. Errors: :class:`WorktreeError` with
one line for the user.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from cockpit.runtime.protected import NO_HOOKS, hooks_path_of, protected_reason

log = logging.getLogger("cockpit.worktree")
BRANCH_PREFIX = "cockpit/"
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"}
FALLBACK_IDENTITY = ("-c", "user.name=Cockpit", "-c", "user.email=cockpit@localhost")
MAX_PATCH_CHARS = 1_000_000  # one file's patch as shown (a generated file can be huge)
MAX_DIFF_CHARS = 6_000_000  # all patches of one diff (it travels as one protocol line)


class WorktreeError(RuntimeError):
    """A git operation failed; the message is one line for the user."""


@dataclass(frozen=True)
class WorktreeInfo:
    """A session's worktree. ``path``: the worktree root; ``cwd``: where the session works
    (``path`` or a sub-folder of it); ``branch``: the session branch; ``base_commit``: the commit it
    started from; ``base_branch``: the branch HEAD was on (None when detached); ``repo``: the
    repository's main working tree; ``included``: files copied through ``.worktreeinclude``."""

    session_id: str
    path: str
    cwd: str
    branch: str
    base_commit: str
    base_branch: str | None
    repo: str
    task: str = ""
    transcript: str = ""
    included: tuple[str, ...] = ()

    @property
    def meta_path(self) -> Path:
        return Path(self.path).with_suffix(".json")


@dataclass(frozen=True)
class FileChange:
    """One file in a diff: ``status`` (A added, M modified, D deleted, R renamed, T type change),
    lines ``added``/``removed`` (None for binary files), ``patch`` (unified diff text),
    ``protected``: why the path (or a rename's old path) is protected — a git hook, editor or
    agent config that can run code outside the sandbox (:mod:`cockpit.runtime.protected`) — or ``""``;
    ``link``: where the file points when the change leaves it a symbolic link (a merge puts that link
    in the user's checkout), else ``""``."""

    path: str
    status: str
    added: int | None
    removed: int | None
    patch: str = ""
    old_path: str | None = None
    protected: str = ""
    link: str = ""


@dataclass(frozen=True)
class DiffStat:
    files: int = 0
    added: int = 0
    removed: int = 0

    def __str__(self) -> str:
        return f"{self.files} file{'s' if self.files != 1 else ''} changed, +{self.added} -{self.removed}"


@dataclass(frozen=True)
class Diff:
    files: tuple[FileChange, ...] = field(default_factory=tuple)
    # (read with the patches, for the diff screen) the files a merge into the base branch would
    # conflict in now, and those holding conflict markers the session left: a merge is refused
    conflicts: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()

    @property
    def stat(self) -> DiffStat:
        return DiffStat(len(self.files), sum(f.added or 0 for f in self.files), sum(f.removed or 0 for f in self.files))

    @property
    def protected(self) -> tuple[FileChange, ...]:
        """The changed files whose paths are protected (see :attr:`FileChange.protected`)."""
        return tuple(f for f in self.files if f.protected)


def protected_warning(count: int) -> str:
    """The one line saying that ``count`` protected paths changed (the diff screen's banner, the CLI's)."""
    return (f"{count} protected path{'s' if count != 1 else ''} changed — they can run code outside the sandbox "
            "(git hooks, editor or agent config): review before merging")


def protected_line(change: FileChange) -> str:
    """The warning for one protected file: ``⚠ protected: <reason>``."""
    return f"⚠ protected: {change.protected}"


@dataclass(frozen=True)
class MergeResult:
    """``ok``; ``message`` (one line); ``commit`` (the base branch's new head); ``conflicts`` (paths)."""

    ok: bool
    message: str
    commit: str | None = None
    conflicts: tuple[str, ...] = ()


CONFLICT_REFUSALS = ("merge conflict in", "unresolved conflicts in")  # how a merge refused for a conflict begins


def refused_for_a_conflict(message: str) -> bool:
    """Whether a merge's one line (:attr:`MergeResult.message`, also as a client gets it from the
    server) says it was refused for a conflict — with the base branch, or one the session left:
    sending it back to the session is the way on."""
    return message.startswith(CONFLICT_REFUSALS)


def git(*args: str, cwd: str | Path, env: dict | None = None, check: bool = True, timeout: float = 120) -> str:
    """Run git (never a repository hook: :data:`NO_HOOKS`); stdout as text. Raises WorktreeError
    (with git's first error line) when it fails."""
    full_env = {**os.environ, **_GIT_ENV, **(env or {})}
    if not Path(cwd).is_dir():  # else subprocess says "no such file" and it reads as "git missing"
        raise WorktreeError(f"{cwd} no longer exists (deleted by hand?)")
    try:
        proc = subprocess.run(["git", *NO_HOOKS, *args], cwd=str(cwd), env=full_env, capture_output=True,
                              text=True, timeout=timeout, errors="replace")
    except FileNotFoundError:
        raise WorktreeError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise WorktreeError(f"git {args[0]} timed out after {timeout:.0f} s") from None
    if check and proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        raise WorktreeError(f"git {args[0]} failed: {msg[-1] if msg else f'exit {proc.returncode}'}")
    return proc.stdout


def _undo_create(repo: Path, path: Path, branch: str) -> None:
    """What a failed ``worktree add -b`` may have left: the folder, its admin entry, the branch."""
    shutil.rmtree(path, ignore_errors=True)
    git("worktree", "prune", cwd=repo, check=False)
    git("branch", "-D", branch, cwd=repo, check=False)


def is_bare(workspace: Path | str) -> bool:
    """True when ``workspace`` is (inside) a bare repository: no working tree to start from."""
    try:
        return git("rev-parse", "--is-bare-repository", cwd=workspace).strip() == "true"
    except WorktreeError:
        return False


def is_repository(workspace: Path | str) -> bool:
    """True when ``workspace`` is (inside) a git repository, with or without a commit yet."""
    try:
        git("rev-parse", "--git-dir", cwd=workspace)
        return True
    except WorktreeError:
        return False


def placement_of(workspace: Path | str, use_worktree: bool = True) -> tuple[str, str]:
    """Where a session in ``workspace`` will work, before it starts: (``"worktree"`` | ``"in place"``
    | ``"refused"``, one line for the user). Blocks (runs git)."""
    if not Path(workspace).is_dir():
        return "refused", f"{workspace} is not a folder"
    if is_bare(workspace):
        return "refused", (f"{workspace} is a bare git repository (no working tree): "
                           "start the session in a clone or a worktree of it")
    if find_repo(workspace) is None:
        if is_repository(workspace):  # (a worktree needs a commit to start from)
            return "in place", "in place: a git repository with no commit yet (edits your files directly)"
        return "in place", "in place: not a git repository (edits your files directly)"
    if not use_worktree:
        return "in place", "in place: own git worktree off (edits your checkout directly)"
    return "worktree", "own git worktree on a new branch (your checkout is not touched)"


def find_repo(workspace: Path | str) -> tuple[Path, str, str | None] | None:
    """(repository root, HEAD commit, current branch or None) for a folder inside a repository
    with at least one commit; None otherwise (not a repository, no commit, no git)."""
    try:
        top = git("rev-parse", "--show-toplevel", cwd=workspace).strip()
        head = git("rev-parse", "--verify", "-q", "HEAD", cwd=workspace).strip()
    except WorktreeError:
        return None
    if not top or not head:
        return None
    branch = git("symbolic-ref", "-q", "--short", "HEAD", cwd=workspace, check=False).strip() or None
    return Path(top).resolve(), head, branch


def slugify(task: str, limit: int = 30) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", task.lower()).strip("-")
    return (slug[:limit].rstrip("-") or "task")


def repo_folder(root_dir: Path, repo: Path) -> Path:
    digest = hashlib.sha1(str(repo).encode()).hexdigest()[:8]
    return Path(root_dir) / f"{slugify(repo.name, 24)}-{digest}"


def create(workspace: Path | str, session_id: str, task: str, root_dir: Path, transcript: str = "") -> WorktreeInfo:
    """A new worktree + branch for a session (see module doc). Raises WorktreeError; returns the
    info, also written to ``<path>.json``."""
    found = find_repo(workspace)
    if found is None:
        raise WorktreeError(f"{workspace} is not inside a git repository with a commit")
    repo, head, base_branch = found
    folder = repo_folder(root_dir, repo)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / session_id
    # its own ref folder: the sandbox lets the session move this one ref only
    branch = f"{BRANCH_PREFIX}{session_id}/{slugify(task)}"
    try:
        git("worktree", "add", "-q", "-b", branch, str(path), head, cwd=repo)
    except WorktreeError:  # half-way (full disk, a checkout error): no branch, no folder left behind
        _undo_create(repo, path, branch)
        raise
    try:
        sub = Path(workspace).resolve().relative_to(repo)
        cwd = path / sub
        cwd.mkdir(parents=True, exist_ok=True)
        included = tuple(copy_included(repo, path))
        info = WorktreeInfo(session_id, str(path), str(cwd), branch, head, base_branch, str(repo), task,
                            transcript, included)
        write_meta(info)
    except BaseException as exc:  # the disk filled after the checkout: the same, nothing left behind
        _undo_create(repo, path, branch)
        with contextlib.suppress(OSError):
            path.with_suffix(".json.tmp").unlink()
        if isinstance(exc, OSError):
            raise WorktreeError(f"could not set up the worktree: {exc.strerror or exc}") from None
        raise
    return info


def write_meta(info: WorktreeInfo) -> None:
    tmp = info.meta_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(asdict(info), indent=1), encoding="utf-8")
    os.replace(tmp, info.meta_path)


def copy_included(repo: Path, dest: Path) -> list[str]:
    """Copy the untracked files that match ``.worktreeinclude`` (gitignore syntax) from ``repo``
    into ``dest``; returns their relative paths. No file → nothing copied."""
    spec = repo / ".worktreeinclude"
    if not spec.is_file():
        return []
    try:
        out = git("ls-files", "--others", "--ignored", "-z", f"--exclude-from={spec}", cwd=repo)
    except WorktreeError as exc:  # an unreadable .worktreeinclude: the session starts without those files
        log.warning("%s: not used: %s", spec, exc)
        return []
    copied = []
    for rel in filter(None, out.split("\0")):
        src = repo / rel
        if src.is_symlink() or not src.is_file():
            continue
        target = dest / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
        except OSError as exc:  # unreadable: skipped, the others are still copied
            log.warning("%s: %s not copied into the worktree: %s", spec, rel, exc.strerror or exc)
            continue
        copied.append(rel)
    return copied


def _temp_index(info: WorktreeInfo) -> str:
    """A copy of the worktree's index (stat data kept, so ``add -A`` rehashes only changed files),
    in a folder of Cockpit's own that no sandbox sees. The index lies in the worktree's admin
    folder, which a session may write: one that is a symbolic link (to a file of the user's that
    the copy would expose) is refused, never followed."""
    # (not `--git-path index`: made absolute, that path has the link resolved already)
    real = os.path.join(git("rev-parse", "--absolute-git-dir", cwd=info.path).strip(), "index")
    fd, tmp = tempfile.mkstemp(prefix="cockpit-index-", dir=_private_tmp())
    os.close(fd)
    try:
        src = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        os.unlink(tmp)
        return tmp
    except OSError as exc:
        os.unlink(tmp)
        raise WorktreeError(f"{real} is not a plain file the session left (a symbolic link?): {exc.strerror}") from None
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode):
            raise WorktreeError(f"{real} is not a plain file: refusing to read it")
        with os.fdopen(src, "rb", closefd=False) as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout)
        # the copy keeps the index's mtime — with a newer one git would take a file edited in the
        # same second at the same size as unchanged ("racy git") and miss the edit
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    except BaseException:
        os.unlink(tmp)
        raise
    finally:
        os.close(src)
    return tmp


def _private_tmp() -> str:
    """Cockpit's own temp folder (0700, under its runtime folder, hidden in every sandbox)."""
    from cockpit.server import paths

    folder = paths.runtime_dir() / "tmp"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return str(folder)


def refuse_planted_repos(info: WorktreeInfo, env: dict | None = None) -> None:
    """A gitlink (a nested repository) in the worktree's index that the base commit does not have
    is refused: comparing it with the files makes git run ``status`` *inside* that repository,
    under its own ``.git/config`` — which the session wrote, and which can name a filter or an
    fsmonitor that would run outside the sandbox. Raises WorktreeError naming it."""
    staged = git("ls-files", "-s", "-z", cwd=info.path, env=env)
    links = {e.split("\t", 1)[1] for e in staged.split("\0") if e.startswith("160000 ") and "\t" in e}
    if not links:
        return
    known = git("ls-tree", "-r", "-z", info.base_commit, cwd=info.path)
    base = {e.split("\t", 1)[1] for e in known.split("\0") if e.startswith("160000 ") and "\t" in e}
    planted = sorted(links - base)
    if planted:
        raise WorktreeError(f"the session added a nested git repository at {', '.join(planted[:5])}: Cockpit "
                            "runs no git inside it (its own config could run commands outside the sandbox); "
                            "remove it from the index (git rm --cached) or discard the session")


def _common_dir(cwd: str | Path, check: bool = True) -> str:
    """The repository's common git folder (``.git`` of the main checkout), absolute and resolved;
    "" when git cannot say and ``check`` is False."""
    common = git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=cwd, check=check).strip()
    return os.path.realpath(common) if common else ""


PLANTED_SCAN_MAX = 300_000  # entries of a worktree looked at for planted repositories


def planted_repos(tree: str | Path) -> list[str]:
    """Git repositories below the worktree's root that git did not make (relative paths): a
    ``.git`` folder, a ``.git`` file that points anywhere but the repository's own submodule store
    (``<common>/modules``: the session's admin folder is writable in its sandbox), or a folder
    shaped like a bare repository (``HEAD``, ``objects/``, ``refs/``: git finds it when you cd in).
    The user's git — a shell prompt showing the branch, ``git status`` run there — works inside
    them under their own config, which the session wrote and which can name an fsmonitor, a pager
    or a filter that runs unconfined. A last entry ``…`` says the walk stopped before the end."""
    root = os.path.realpath(tree)
    common = _common_dir(root, check=False)
    stores = [os.path.join(common, "modules")] if common else []
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        seen += len(dirs) + len(files)
        for name in dirs:  # a link to a folder: os.walk does not follow it, a user's cd does
            path = os.path.join(folder, name)
            if os.path.islink(path) and _leads_to_a_repository(path, root, common):
                found.append(os.path.relpath(path, root))
        if folder == root and ".git" in dirs:
            dirs.remove(".git")  # the worktree's own (a file in a linked worktree)
        if folder != root and ".git" in dirs + files:
            where = os.path.join(folder, ".git")
            if ".git" in dirs or not _points_into(where, stores):
                found.append(os.path.relpath(folder, root))
            if ".git" in dirs:
                dirs.remove(".git")
        elif folder != root and "HEAD" in files and "objects" in dirs and "refs" in dirs:
            found.append(os.path.relpath(folder, root))  # a bare repository's shape
        if seen > PLANTED_SCAN_MAX:
            return [*sorted(found), "…"]
    return sorted(found)


def _leads_to_a_repository(link: str, root: str, common: str) -> bool:
    """Whether the folder ``link`` (a symbolic link in the worktree) leads into the repository's
    git folder (the session's admin folder is writable in its sandbox), or to a repository (a
    ``.git`` in it or above it, outside the worktree, or a bare repository's shape)."""
    target = os.path.realpath(link)
    if common and (target + "/").startswith(common.rstrip("/") + "/"):
        return True
    if (target + "/").startswith(root.rstrip("/") + "/"):
        return False  # inside the worktree: the walk sees what is there
    if all(os.path.exists(os.path.join(target, part)) for part in ("HEAD", "objects", "refs")):
        return True
    here = target
    while here and here != os.path.dirname(here):
        if os.path.exists(os.path.join(here, ".git")):
            return True
        here = os.path.dirname(here)
    return False


def _points_into(dotgit: str, stores: list[str]) -> bool:
    """Whether the ``.git`` file ``dotgit`` says ``gitdir: X`` with X inside one of ``stores``."""
    try:
        with open(dotgit, encoding="utf-8", errors="replace") as f:
            line = f.readline(4096).strip()
    except OSError:
        return False
    if not line.startswith("gitdir:"):
        return False
    target = os.path.realpath(os.path.join(os.path.dirname(dotgit), line[len("gitdir:"):].strip()))
    return any(target.startswith(store.rstrip("/") + "/") for store in stores)


def _with_temp_index(info: WorktreeInfo, *args: str) -> str:
    refuse_planted_repos(info)
    tmp = _temp_index(info)
    env = {"GIT_INDEX_FILE": tmp}
    try:
        git("add", "-A", cwd=info.path, env=env)
        return git(*args, cwd=info.path, env=env)
    finally:
        for p in (tmp, tmp + ".lock"):
            try:
                os.unlink(p)
            except OSError:
                pass


def diff_stat(info: WorktreeInfo) -> DiffStat:
    """Files changed and lines +/- against the base commit (pending changes included)."""
    return diff(info, patches=False).stat


def merge_view(info: WorktreeInfo, state: str | None = None) -> tuple[str, str] | None:
    """``(base tree, merged tree)``: the base branch's tree and the tree merging the session's
    current state (``state``: its :func:`snapshot`) into it gives (``git merge-tree``: nothing
    moves) — the review diff between them is what a merge does to the base branch, whatever the
    branch's history (a conflict resolved by dropping base-branch lines, a merge of the base branch
    left uncommitted, a base branch reset or rewritten behind the session, criss-cross merges).
    None when there is no base branch, or the merge would conflict (it is refused then)."""
    return _view(_merged(info, state or snapshot(info)))


def _view(merged: tuple[str, str | None, tuple[str, ...]] | None) -> tuple[str, str] | None:
    """:func:`merge_view`'s answer from :func:`_merged`'s."""
    if merged is None:
        return None
    base, tree, conflicts = merged
    return (base, tree) if tree and not conflicts else None


def _merged(info: WorktreeInfo, state: str) -> tuple[str, str | None, tuple[str, ...]] | None:
    """(the base branch's tree, the tree merging ``state`` into it or None, the conflicting
    paths); None when there is no base branch."""
    if not info.base_branch or not Path(info.repo).is_dir():
        return None
    base = git("rev-parse", "--verify", "-q", f"refs/heads/{info.base_branch}^{{tree}}", cwd=info.repo,
               check=False).strip()
    if not base:
        return None
    tree, conflicts = preview_merge(info, state)
    return base, tree, conflicts


def diff_base(info: WorktreeInfo, state: str | None = None) -> str:
    """Where the review diff starts when the merge would conflict (see :func:`merge_view`): where
    the session's current state (``state``: its :func:`snapshot`, a merge of the base branch it
    began included) and its base branch last met; the base commit when there is no base branch."""
    if not info.base_branch or not Path(info.repo).is_dir():
        return info.base_commit
    met = git("merge-base", f"refs/heads/{info.base_branch}", state or snapshot(info), cwd=info.repo,
              check=False).strip()
    return met or info.base_commit


def diff(info: WorktreeInfo, patches: bool = True, extra_protected: Iterable[str] = ()) -> Diff:
    """The session's change as a merge would bring it to its base branch (:func:`merge_view`;
    from :func:`diff_base` when the merge would conflict, or the base commit when there is no base
    branch), file by file (see module doc); submodule pointers included; each file's ``protected``
    says why its path is protected (``extra_protected``: the config's globs)."""
    if not Path(info.path).is_dir() and Path(info.repo).is_dir() and _checked_out_at(info.repo, info.branch):
        raise WorktreeError(f"{info.path} no longer exists (deleted by hand?)")  # not a kept branch
    if not Path(info.repo).is_dir():
        raise WorktreeError(f"{info.repo} no longer exists (deleted by hand?)")
    state = snapshot(info)
    merged = _merged(info, state)
    view = _view(merged)
    start, end = view if view is not None else (diff_base(info, state), state)

    def run(*args: str) -> str:
        cut = args.index("--") if "--" in args else len(args)
        # (core.quotePath off: a name that is not ASCII reads as itself in the patch's header)
        return git("-c", "core.quotePath=false", "diff", "-M", "--ignore-submodules=none", *args[:cut], start, end,
                   *args[cut:], cwd=info.repo)

    num = run("--numstat", "-z")
    kinds, link_blobs = _parse_raw(run("--raw", "--no-abbrev", "-z"))
    links = {path: git("cat-file", "blob", blob, cwd=info.repo).strip() for path, blob in link_blobs.items()}
    changed = list(_parse_numstat(num))
    hooks = hooks_path_of(info.path if Path(info.path).is_dir() else info.repo) if changed else None
    files = []
    room = MAX_DIFF_CHARS
    for path, old, added, removed in changed:
        patch = ""
        if patches:
            paths = [path] if old is None else [old, path]
            patch = _capped(run("--", *paths), min(MAX_PATCH_CHARS, room))
            room = max(0, room - len(patch))
        why = protected_reason(path, hooks, extra_protected) or protected_reason(old or "", hooks, extra_protected)
        files.append(FileChange(path, kinds.get(path, "M"), added, removed, patch, old, why, links.get(path, "")))
    conflicts: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    if patches and files and view is None and merged is not None:
        conflicts = merged[2]
    elif patches and files and view is not None:
        unresolved = _markers_added(info, start, end)
    return Diff(tuple(files), conflicts, unresolved)


def _capped(patch: str, limit: int) -> str:
    """``patch`` cut at a line end within ``limit`` characters, with a line saying what is left out."""
    if len(patch) <= limit:
        return patch
    cut = patch.rfind("\n", 0, limit) + 1
    return (patch[:cut] + f"[… {len(patch) - cut:,} more characters of this patch not shown; "
            "git diff in the worktree shows all]\n")


def _parse_numstat(out: str):
    items = out.split("\0")
    i = 0
    while i < len(items):
        head = items[i]
        if not head:
            i += 1
            continue
        a, r, rest = head.split("\t", 2)
        added = None if a == "-" else int(a)
        removed = None if r == "-" else int(r)
        if rest == "":  # rename: old and new paths follow
            old, new = items[i + 1], items[i + 2]
            yield new, old, added, removed
            i += 3
        else:
            yield rest, None, added, removed
            i += 1


def _parse_raw(out: str) -> tuple[dict[str, str], dict[str, str]]:
    """``git diff --raw --no-abbrev -z`` → (path → status letter, path → blob of a file the change
    leaves a symbolic link: new mode 120000)."""
    items = out.split("\0")
    kinds: dict[str, str] = {}
    links: dict[str, str] = {}
    i = 0
    while i < len(items):
        meta = items[i]
        if not meta.startswith(":"):
            i += 1
            continue
        fields = meta[1:].split()  # old mode, new mode, old blob, new blob, status
        code = fields[4] if len(fields) > 4 else "M"
        path = items[i + 2] if code[0] in "RC" else items[i + 1]
        i += 3 if code[0] in "RC" else 2
        kinds[path] = code[0]
        if fields[1] == "120000":
            links[path] = fields[3]
    return kinds, links


def _identity(cwd: str) -> tuple[str, ...]:
    email = git("config", "user.email", cwd=cwd, check=False).strip()
    return () if email else FALLBACK_IDENTITY


def drop_other_refs(info: WorktreeInfo) -> list[str]:
    """Delete every ref in the session's own ref folder (``refs/heads/cockpit/<id>/``, writable in
    its sandbox) but its branch: one it made there points at objects never taken in (``git log
    --all`` and ``gc`` then fail) or parks a branch beyond the session. The refs deleted."""
    if "/" not in info.branch or not Path(info.repo).is_dir():
        return []
    parent = info.branch.rsplit("/", 1)[0]
    common = _common_dir(info.repo, check=False)
    folder = os.path.join(common, "refs", "heads", parent)
    others = []
    # the files themselves (a sandbox writes loose refs only): git's own listing stops at a ref
    # whose object is missing, which is the case to catch
    for top, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            path = os.path.join(top, name)
            ref = "refs/heads/" + os.path.relpath(path, os.path.join(common, "refs", "heads")).replace(os.sep, "/")
            if ref != f"refs/heads/{info.branch}":
                others.append(ref)
    for ref in others:
        git("update-ref", "--no-deref", "-d", ref, cwd=info.repo, check=False)
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(common, *ref.split("/")))
    return others


class AbsorbRefused(WorktreeError):
    """The session's new commits failed their check: the caller, with nothing of the session
    running any more, puts its branch back with :func:`reset_branch`."""


def absorb_objects(info: WorktreeInfo) -> int:
    """Take the objects a sandboxed session wrote into its own store (``cockpit-objects`` in its
    worktree's admin folder: the shared store is read-only in the sandbox) into the repository's,
    each one checked: ``pack-objects`` reads what the session's branch adds, and ``index-pack``
    recomputes every hash, so an object stored under a name that is not its content's never
    enters the repository (the merge then fails on the missing object instead). Returns how many
    objects were taken in. Raises WorktreeError."""
    drop_other_refs(info)
    admin = git("rev-parse", "--absolute-git-dir", cwd=info.path).strip()
    private = os.path.join(admin, "cockpit-objects")
    if not os.path.isdir(private) or not any(os.scandir(private)):
        return 0
    for name in ("alternates", "http-alternates"):  # the session's store may not lead into another
        try:
            os.unlink(os.path.join(private, "info", name))
        except (FileNotFoundError, NotADirectoryError):
            pass
    for root, dirs, files in os.walk(private, followlinks=False):
        for name in dirs + files:
            if os.path.islink(os.path.join(root, name)):
                os.unlink(os.path.join(root, name))
    env = {**os.environ, **_GIT_ENV, "GIT_ALTERNATE_OBJECT_DIRECTORIES": private}
    base = ["git", *NO_HOOKS]
    tip = git("rev-parse", "--verify", "-q", f"refs/heads/{info.branch}", cwd=info.repo, check=False).strip()
    if not tip or subprocess.run([*base, "cat-file", "-e", f"{tip}^{{commit}}"], cwd=info.repo,
                                 capture_output=True, timeout=60).returncode == 0:
        return 0  # the repository holds the branch's tip (and, checked when it came in, all below it)
    try:
        listed = subprocess.run([*base, "rev-list", "--objects", f"refs/heads/{info.branch}", "--not",
                                 info.base_commit], cwd=info.path, env=env, capture_output=True, timeout=300)
        if listed.returncode != 0:
            raise WorktreeError(f"the session's branch {info.branch} cannot be read: "
                                f"{listed.stderr.decode(errors='replace').strip()[:200]}")
        if not listed.stdout.strip():
            return 0
        plain = {**os.environ, **_GIT_ENV}
        plain.pop("GIT_ALTERNATE_OBJECT_DIRECTORIES", None)
        plain.pop("GIT_OBJECT_DIRECTORY", None)
        # streamed from one to the other (a huge object never sits in Cockpit's memory), capped
        with tempfile.TemporaryFile() as errs:
            packer = subprocess.Popen([*base, "pack-objects", "--stdout"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=errs, cwd=info.path, env=env)
            indexer = subprocess.Popen([*base, "index-pack", "--stdin", "--fix-thin", "--strict",
                                        f"--max-input-size={MAX_ABSORB_BYTES}"], stdin=packer.stdout,
                                       stdout=subprocess.DEVNULL, stderr=errs, cwd=info.repo, env=plain)
            assert packer.stdin is not None and packer.stdout is not None
            packer.stdout.close()
            try:
                packer.stdin.write(listed.stdout)
                packer.stdin.close()
            except BrokenPipeError:
                pass
            try:
                rc = (packer.wait(timeout=600), indexer.wait(timeout=600))
            except subprocess.TimeoutExpired:
                packer.kill()
                indexer.kill()
                raise
            if rc != (0, 0):
                errs.seek(0)
                why = errs.read().decode(errors="replace").strip()[-300:]
                raise AbsorbRefused(f"the session's new commits failed their check and were not taken in ({why}); "
                                    f"its branch is back at its base, its files stay in the worktree")
    except subprocess.TimeoutExpired:
        raise WorktreeError("taking in the session's git objects timed out") from None
    return listed.stdout.count(b"\n")


# files git leaves in a worktree's admin folder between commands: one the session planted would
# steer Cockpit's own commit (MERGE_HEAD adds a parent of its choosing)
_STATE_FILES = ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "CHERRY_PICK_HEAD", "REVERT_HEAD", "SQUASH_MSG",
                "BISECT_LOG", "BISECT_START", "BISECT_TERMS", "BISECT_NAMES", "BISECT_EXPECTED_REV", "AUTO_MERGE",
                "REBASE_HEAD", "index.lock", "HEAD.lock")


def sanitize_admin(info: WorktreeInfo) -> None:
    """Before Cockpit's own git runs on a session's worktree: no symbolic link anywhere in its
    admin folder or its branch's ref and reflog folders (git would write ``COMMIT_EDITMSG``, a
    reflog line or a ref *through* it, outside the sandbox: over any file of the user's), and no
    merge/cherry-pick/bisect state the session left (it would steer the commit)."""
    admin = git("rev-parse", "--absolute-git-dir", cwd=info.path).strip()
    _unlink_links([admin, *_branch_folders(_common_dir(info.path), info.branch)])
    keep: set[str] = set()
    merging = os.path.join(admin, "MERGE_HEAD")
    if os.path.isfile(merging) and _merging_base(info, merging):  # the session merging its base in
        keep = {"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE"}
    for name in _STATE_FILES:
        if name in keep:
            continue
        try:
            os.unlink(os.path.join(admin, name))
        except FileNotFoundError:
            pass


MAX_ABSORB_BYTES = 2 * 1024**3  # what one take-in of a session's new objects may add to the repository


def reset_branch(info: WorktreeInfo) -> None:
    """The session's branch back at its base commit (its new commits could not be taken in: the
    repository must not keep a branch whose objects it lacks). Only once nothing of the session
    runs: git appends a reflog line, and no link in its ref or reflog folder is followed."""
    _unlink_links(_branch_folders(_common_dir(info.repo), info.branch))
    git("update-ref", "--no-deref", f"refs/heads/{info.branch}", info.base_commit, cwd=info.repo, check=False)


def _branch_folders(common: str, branch: str) -> list[str]:
    """The folders of ``branch``'s ref and reflog (a session may write there: its own branch's)."""
    parent = branch.rsplit("/", 1)[0] if "/" in branch else ""
    return [os.path.join(common, "refs", "heads", parent), os.path.join(common, "logs", "refs", "heads", parent)] \
        if parent else []


def _unlink_links(folders: list[str]) -> None:
    """No symbolic link (nor FIFO or device) anywhere in ``folders``: git writes only plain files
    there, and would write *through* a link, outside the sandbox."""
    for folder in folders:
        if os.path.islink(folder):
            raise WorktreeError(f"{folder} is a symbolic link (the session made it): refusing to run git there")
        for root, dirs, files in os.walk(folder, followlinks=False):
            for name in dirs + files:
                path = os.path.join(root, name)
                if os.path.islink(path) or (not os.path.isdir(path) and not os.path.isfile(path)):
                    os.unlink(path)


def _merging_base(info: WorktreeInfo, merge_head_file: str) -> str:
    """The commit a merge the session began merges in (its ``MERGE_HEAD``), when that is a commit of
    the base branch (a conflict sent back: `git merge main`, also when main moved on since) — the
    one merge Cockpit's commit may record; "" for anything else (another branch, several heads, a
    made-up id: its content would reach the base branch through a second parent)."""
    if not info.base_branch:
        return ""
    try:
        with open(merge_head_file, encoding="ascii", errors="replace") as f:
            heads = f.read().split()
    except OSError:
        return ""
    if len(heads) != 1 or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", heads[0]):
        return ""
    return heads[0] if _is_ancestor(info.repo, heads[0], f"refs/heads/{info.base_branch}") else ""


def _is_ancestor(repo: str, commit: str, of: str) -> bool:
    """``commit`` is ``of`` or in its history (``git merge-base --is-ancestor``)."""
    return subprocess.run(["git", *NO_HOOKS, "merge-base", "--is-ancestor", commit, of], cwd=repo,
                          env={**os.environ, **_GIT_ENV}, capture_output=True).returncode == 0


def ensure_on_branch(info: WorktreeInfo) -> None:
    """Point the worktree's HEAD back at the session's own branch when the session moved it (its
    sandbox lets it write HEAD in the worktree's admin folder: ``git symbolic-ref HEAD
    refs/heads/main``), so Cockpit's own commit — outside the sandbox — never lands on another
    branch. The files stay as they are; what differs from the branch is what gets committed."""
    want = f"refs/heads/{info.branch}"
    alias = git("symbolic-ref", "-q", want, cwd=info.path, check=False).strip()
    if alias:  # the branch made a symbolic ref (to main): a commit "on it" would move that branch
        raise WorktreeError(f"the session made its branch {info.branch} point at {alias}: nothing was "
                            "committed; repair or discard it")
    head = git("symbolic-ref", "-q", "HEAD", cwd=info.path, check=False).strip()
    if head != want:
        log.warning("session %s had moved its worktree's HEAD to %s; back to %s", info.session_id,
                    head or "a detached commit", want)
        git("symbolic-ref", "HEAD", want, cwd=info.path)


def commit_pending(info: WorktreeInfo, message: str) -> str | None:
    """Commit everything pending in the worktree on the session branch; the new commit or None
    when nothing was pending."""
    if not Path(info.path).is_dir():
        return None
    if not Path(info.repo).is_dir():
        raise WorktreeError(f"its repository {info.repo} is gone (moved or deleted?): nothing was committed; the "
                            f"change stays in {info.path}")
    if not branch_exists(info):  # (a commit "on" it would start an unrelated history holding the whole tree)
        raise WorktreeError(f"the session branch {info.branch} no longer exists (deleted by hand?): nothing was "
                            "committed; discard the session, or recreate the branch")
    sanitize_admin(info)
    ensure_on_branch(info)
    refuse_planted_repos(info)
    try:
        absorb_objects(info)
    except AbsorbRefused:  # (its caller made sure nothing of the session runs)
        reset_branch(info)
        raise
    if not git("status", "--porcelain", "--ignore-submodules=all", cwd=info.path).strip():
        return None
    git("add", "-A", cwd=info.path)
    git(*_identity(info.path), "commit", "-q", "--no-verify", "-m", message, cwd=info.path)
    return git("rev-parse", "HEAD", cwd=info.path).strip()


def _checked_out_at(repo: str, branch: str) -> str | None:
    out = git("worktree", "list", "--porcelain", cwd=repo)
    path = None
    for line in out.splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree "):]
        elif line == f"branch refs/heads/{branch}":
            return path
    return None


def _operation_in_progress(checkout: str) -> str | None:
    """"merge", "rebase", "cherry-pick" or "revert" when ``checkout`` is in the middle of one (or
    has unmerged paths: "merge"), else None. A merge into it must not start, nor abort the user's."""
    for name, what in (("MERGE_HEAD", "merge"), ("rebase-merge", "rebase"), ("rebase-apply", "rebase"),
                       ("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        where = git("rev-parse", "--path-format=absolute", "--git-path", name, cwd=checkout, check=False).strip()
        if where and Path(where).exists():
            return what
    if git("ls-files", "--unmerged", cwd=checkout, check=False).strip():
        return "merge"
    return None


def merge(info: WorktreeInfo, message: str, merge_message: str | None = None) -> MergeResult:
    """Commit pending changes, then merge the session branch into ``info.base_branch``. On
    success the worktree and the (merged) branch are removed. Never forces: a conflict or a
    dirty target checkout is reported and everything stays as it was. An empty merge (the branch
    adds nothing to the base: no commit, every commit already in it, or the same change already
    made there) is reported, never committed. ``merge_message``: the merge commit's message
    (default ``Merge <branch>: <task>``)."""
    if info.base_branch is None:
        return MergeResult(False, f"the session started from a detached HEAD: nothing to merge into; "
                                  f"its branch {info.branch} is kept")
    if branch_exists(info) and (stuck := leftover_conflicts(info)):  # (a merge it began, left or claimed done)
        return MergeResult(False, f"unresolved conflicts in {', '.join(stuck)} (unmerged, or conflict markers "
                                  f"left in): nothing was merged; the branch {info.branch} is kept", conflicts=stuck)
    commit_pending(info, message)
    ahead = int(git("rev-list", "--count", f"{info.base_commit}..{info.branch}", cwd=info.repo).strip() or 0)
    if ahead == 0:
        return MergeResult(False, "no changes to merge")
    if not git("rev-parse", "--verify", "-q", f"refs/heads/{info.base_branch}", cwd=info.repo, check=False).strip():
        return MergeResult(False, f"the base branch {info.base_branch} no longer exists: nothing was merged; "
                                  f"the changes are kept on the branch {info.branch}")
    if empty := _adds_nothing(info):
        return MergeResult(False, f"nothing new to merge: {empty}; nothing was committed, "
                                  f"the branch {info.branch} is kept (discard it?)")
    _tree, clash = preview_merge(info)  # a conflict is found before the user's checkout is touched
    if clash:
        return MergeResult(False, f"merge conflict in {', '.join(clash)}: nothing was merged; "
                                  f"the branch {info.branch} is kept", conflicts=clash)
    target = _checked_out_at(info.repo, info.base_branch)
    temp: str | None = None
    if target is not None and (busy := _operation_in_progress(target)):
        return MergeResult(False, f"{target} is in the middle of a {busy}: finish or abort it first; nothing "
                                  f"was merged, the branch {info.branch} is kept")
    if target is None:
        temp = tempfile.mkdtemp(prefix="cockpit-merge-")
        os.rmdir(temp)
        git("worktree", "add", "-q", temp, info.base_branch, cwd=info.repo)
        target = temp
    try:
        proc = subprocess.run(
            ["git", *NO_HOOKS, *_identity(target), "merge", "--no-edit", "-m",
             merge_message or f"Merge {info.branch}: {info.task[:60]}", info.branch],
            cwd=target, env={**os.environ, **_GIT_ENV}, capture_output=True, text=True, errors="replace",
        )
        if proc.returncode != 0:
            conflicts = git("diff", "--name-only", "--diff-filter=U", cwd=target, check=False).split()
            if _operation_in_progress(target) == "merge":  # ours began (none was before): undo it
                git("merge", "--abort", cwd=target, check=False)
            text = [ln.strip() for ln in (proc.stderr.strip() or proc.stdout).splitlines()
                     if ln.strip() and ln.strip() != "Aborting"]
            if conflicts:
                return MergeResult(False, f"merge conflict in {', '.join(conflicts)}: nothing was merged; "
                                          f"the branch {info.branch} is kept", conflicts=tuple(conflicts))
            why = " ".join(text)[:300] if text else "git merge failed"  # git's reason and the files it names
            return MergeResult(False, f"merge refused: {why}; nothing was merged, the branch {info.branch} is kept")
        head = git("rev-parse", "HEAD", cwd=target).strip()
    finally:
        if temp is not None:
            git("worktree", "remove", "--force", temp, cwd=info.repo, check=False)
    how = "fast-forward" if "Fast-forward" in proc.stdout else "merge commit"
    # -D: the base branch has every commit of it now, but ``-d`` asks whether the checkout's HEAD
    # has them — a base branch not checked out (a session started on another branch) kept it, and
    # the next list showed it as a kept branch a second merge would bring into HEAD's branch
    _remove(info, delete_branch="-D")
    return MergeResult(True, f"merged {info.branch} into {info.base_branch} ({how}, {head[:10]})", head)


_MARKER_LINE = re.compile(r"^(.+):\d+: leftover conflict marker$")


def leftover_conflicts(info: WorktreeInfo) -> tuple[str, ...]:
    """The files whose conflict the session left unresolved — a merge it began (or claimed done)
    with ``<<<<<<<`` / ``=======`` / ``>>>>>>>`` lines left in: the lines merging its current state
    into the base branch would add (``git diff --check``, the session's own attributes: a file meant
    to hold such lines says so with git's ``conflict-marker-size``). An unmerged path whose file no
    longer holds markers is resolved: Cockpit's commit takes the file as it is."""
    view = merge_view(info)
    return _markers_added(info, *view) if view is not None else ()


def _markers_added(info: WorktreeInfo, start: str, end: str) -> tuple[str, ...]:
    """The files to which going from ``start`` to ``end`` adds conflict-marker lines (``git diff
    --check``, with the session's own attributes when it has a worktree)."""
    where = info.path if Path(info.path).is_dir() else info.repo
    out = git("diff", "--check", start, end, cwd=where, check=False)
    return tuple(dict.fromkeys(m.group(1) for line in out.splitlines() if (m := _MARKER_LINE.match(line))))


def _adds_nothing(info: WorktreeInfo) -> str:
    """Why merging the branch into its base would change nothing ("" when it would): every commit
    already in the base, or the merged tree equal to the base's."""
    base = f"refs/heads/{info.base_branch}"
    if _is_ancestor(info.repo, info.branch, base):
        return f"{info.base_branch} already has every commit of {info.branch}"
    tree, conflicts = preview_merge(info)
    if tree and not conflicts and tree == git("rev-parse", f"{base}^{{tree}}", cwd=info.repo).strip():
        return f"{info.base_branch} already has the same change"
    return ""


def preview_merge(info: WorktreeInfo, commit: str | None = None) -> tuple[str | None, tuple[str, ...]]:
    """Merge ``commit`` (default: the session branch) into the base branch without touching any
    checkout or ref (``git merge-tree --write-tree``): (the merged tree or None, conflicting paths)."""
    base = f"refs/heads/{info.base_branch}" if info.base_branch else info.base_commit
    proc = subprocess.run(["git", *NO_HOOKS, "merge-tree", "--write-tree", "--name-only", "--no-messages",
                           base, commit or info.branch], cwd=info.repo, env={**os.environ, **_GIT_ENV},
                          capture_output=True, text=True, errors="replace")
    lines = proc.stdout.splitlines()
    if proc.returncode not in (0, 1) or not lines:
        return None, ()
    return lines[0].strip(), tuple(dict.fromkeys(ln for ln in lines[1:] if ln.strip()))


def ahead_behind(info: WorktreeInfo) -> tuple[int, int]:
    """(commits on the branch not in the base branch, commits on the base branch not in it); the
    base commit stands in for a base branch that is gone or was never (a detached start)."""
    base = info.base_commit
    if info.base_branch and git("rev-parse", "--verify", "-q", f"refs/heads/{info.base_branch}",
                                cwd=info.repo, check=False).strip():
        base = f"refs/heads/{info.base_branch}"
    out = git("rev-list", "--left-right", "--count", f"{info.branch}...{base}", cwd=info.repo).split()
    return (int(out[0]), int(out[1])) if len(out) == 2 else (0, 0)


def branch_exists(info: WorktreeInfo) -> bool:
    return bool(Path(info.repo).is_dir() and git("rev-parse", "--verify", "-q", f"refs/heads/{info.branch}",
                                                  cwd=info.repo, check=False).strip())


def kept_path(info: WorktreeInfo) -> Path:
    """The record of a kept branch (its worktree removed): ``<session-id>.kept`` beside where the
    worktree was, so ``cockpit worktrees`` lists it after the session (and the server) ended."""
    return Path(info.path).with_suffix(".kept")


def keep(info: WorktreeInfo, message: str) -> str:
    """Commit pending changes to the session branch and remove the worktree; the branch stays
    (recorded in :func:`kept_path`: listed, merged, checked, pushed later). Returns a one-line message."""
    commit_pending(info, message)
    _remove(info, delete_branch=None)
    try:
        kept_path(info).write_text(json.dumps(asdict(info), indent=1), encoding="utf-8")
    except OSError as exc:
        log.warning("kept branch %s not recorded: %s", info.branch, exc)
    return f"kept branch {info.branch}"


def discard(info: WorktreeInfo) -> str:
    """Remove the worktree and delete its branch, changes included."""
    had_tree = Path(info.path).exists()  # a kept branch has none left
    pushed = pushed_to(info)  # (a pull request's push): that copy is not this machine's to delete
    _remove(info, delete_branch="-D")
    said = f"discarded {info.branch} and its worktree" if had_tree else f"discarded the kept branch {info.branch}"
    if pushed:
        said += (f"; the branch pushed to {', '.join(pushed)} stays there, with any pull request opened for it "
                 f"(git push {pushed[0].split('/', 1)[0]} --delete {info.branch} removes it)")
    return said


def pushed_to(info: WorktreeInfo) -> list[str]:
    """The remote-tracking copies of the session's branch (``origin/<branch>``): it was pushed."""
    if not Path(info.repo).is_dir():
        return []
    out = git("for-each-ref", "--format=%(refname:short)", "refs/remotes/", cwd=info.repo, check=False)
    return [ref for ref in out.split() if ref.split("/", 1)[-1] == info.branch]


def _remove(info: WorktreeInfo, delete_branch: str | None) -> None:
    if not Path(info.repo).is_dir():  # the repository is gone: only our folder and record are left
        shutil.rmtree(info.path, ignore_errors=True)
        info.meta_path.unlink(missing_ok=True)
        return
    if Path(info.path).exists():
        # twice: a worktree locked (a `locked` file the session wrote in its admin folder) is removed too
        git("worktree", "remove", "--force", "--force", info.path, cwd=info.repo, check=False)
        if Path(info.path).exists():
            shutil.rmtree(info.path, ignore_errors=True)
    admin = _admin_of(info)
    if admin is not None:  # else prune keeps a locked entry, and the branch it holds cannot be deleted
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(admin, "locked"))
    git("worktree", "prune", cwd=info.repo, check=False)
    drop_other_refs(info)
    if delete_branch:
        git("branch", delete_branch, info.branch, cwd=info.repo, check=False)
    for record in (info.meta_path, kept_path(info)):
        try:
            record.unlink()
        except OSError:
            pass


def _admin_of(info: WorktreeInfo) -> str | None:
    """The admin folder git keeps for the session's worktree (``<common>/worktrees/<name>``), by
    its ``gitdir`` file pointing at the worktree; None when there is none."""
    common = _common_dir(info.repo, check=False)
    folder = os.path.join(common, "worktrees") if common else ""
    if not folder or not os.path.isdir(folder):
        return None
    want = os.path.realpath(os.path.join(info.path, ".git"))
    for entry in os.scandir(folder):
        try:
            with open(os.path.join(entry.path, "gitdir"), encoding="utf-8") as f:
                if os.path.realpath(f.read().strip()) == want:
                    return entry.path
        except OSError:
            continue
    return None


def remove_if_unchanged(info: WorktreeInfo) -> bool:
    """Remove worktree and branch when the session changed nothing; True when removed."""
    try:
        if diff_stat(info).files:
            return False
        ahead = int(git("rev-list", "--count", f"{info.base_commit}..{info.branch}", cwd=info.repo).strip() or 0)
        if ahead:
            return False
    except WorktreeError:
        return False
    _remove(info, delete_branch="-D")
    return True


def load_meta(path: Path) -> WorktreeInfo | None:
    """The worktree recorded in ``path``; None when it is missing, not JSON, or one of the fields
    that name it (session, folder, branch, base commit, repository) is not text (a hand edit,
    another version); the others, when damaged, are taken as unknown."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        data["included"] = tuple(x for x in data.get("included") or () if isinstance(x, str))
        info = WorktreeInfo(**data)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    if not all(isinstance(t, str) and t for t in (info.session_id, info.path, info.branch, info.base_commit,
                                                  info.repo)):
        return None
    # what can be told without them: the session works at the root, no task or transcript known
    return replace(info, cwd=info.cwd if isinstance(info.cwd, str) and info.cwd else info.path,
                   task=info.task if isinstance(info.task, str) else "",
                   transcript=info.transcript if isinstance(info.transcript, str) else "",
                   base_branch=info.base_branch if isinstance(info.base_branch, str) else None)


def list_all(root_dir: Path) -> list[WorktreeInfo]:
    """Every Cockpit worktree recorded under ``root_dir`` (oldest first)."""
    out = []
    for meta in sorted(Path(root_dir).glob("*/*.json")):
        info = load_meta(meta)
        if info is not None:
            out.append(info)
    return out


def list_kept(root_dir: Path) -> list[WorktreeInfo]:
    """Kept branches: ``cockpit/*`` branches with no worktree, of every repository Cockpit has
    worked in (a keep's record, or a branch with none — its base then the repository's current
    branch). A record whose branch is gone (merged or deleted by hand) is dropped."""
    out: list[WorktreeInfo] = []
    seen: set[tuple[str, str]] = set()
    repos: dict[str, Path] = {}
    for record in sorted(Path(root_dir).glob("*/*.kept")):
        info = load_meta(record)
        if info is None:
            continue
        repos.setdefault(info.repo, record.parent)
        if not branch_exists(info):
            record.unlink(missing_ok=True)
            continue
        if Path(info.path).is_dir():  # a worktree again (resumed): listed as one
            continue
        out.append(info)
        seen.add((info.repo, info.branch))
    for info in list_all(root_dir):
        repos.setdefault(info.repo, Path(info.path).parent)
        seen.add((info.repo, info.branch))
    for repo, folder in repos.items():
        if not Path(repo).is_dir():
            continue
        refs = git("for-each-ref", "--format=%(refname:short)", f"refs/heads/{BRANCH_PREFIX}", cwd=repo,
                   check=False).split()
        if not refs:
            continue
        checked = git("worktree", "list", "--porcelain", cwd=repo, check=False)
        current = git("symbolic-ref", "-q", "--short", "HEAD", cwd=repo, check=False).strip() or None
        for branch in refs:
            if (repo, branch) in seen or f"branch refs/heads/{branch}\n" in checked + "\n":
                continue
            sid = branch[len(BRANCH_PREFIX):].split("/", 1)[0]
            base = git("merge-base", branch, current or "HEAD", cwd=repo, check=False).strip()
            if not base:
                continue
            out.append(WorktreeInfo(sid, str(folder / sid), str(folder / sid), branch, base, current, repo))
    return out


def candidates(root_dir: Path, query: str) -> list[WorktreeInfo]:
    """The worktrees (and kept branches) a typed session id names: the exact id, else every one
    whose id it prefixes or ends (at least :data:`cockpit.runtime.ids.MIN_QUERY` characters — as
    the server resolves ids)."""
    from cockpit.runtime.ids import matches

    every = list_all(root_dir) + list_kept(root_dir)
    exact = [w for w in every if w.session_id == query.strip().lower()]
    return exact or [w for w in every if matches(query, w.session_id)]


def find(root_dir: Path, session_id: str) -> WorktreeInfo | None:
    """The one worktree (or kept branch) :func:`candidates` gives; None when none or several."""
    found = candidates(root_dir, session_id)
    return found[0] if len(found) == 1 else None


# -- tests before merge ---------------------------------------------------------------------------
CHECK_TAIL_CHARS = 4000  # the output's tail kept in a check's result


@dataclass(frozen=True)
class CheckResult:
    """A check command's run on the session's change merged onto the current base (:func:`check`).
    ``state``: passed | failed | conflict (the change does not merge: not run) | error (could not
    run); ``output``: the tail of its output (stdout and stderr together); ``onto``: the base
    commit it ran on; ``sandboxed``: whether it ran inside the OS sandbox (network off)."""

    state: str
    command: str
    exit_code: int | None = None
    output: str = ""
    seconds: float = 0.0
    sandboxed: bool = False
    onto: str = ""
    conflicts: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.state == "passed"

    def line(self) -> str:
        """One line: what ran and how it ended."""
        where = f" on {self.onto[:10]}" if self.onto else ""
        box = ", sandboxed" if self.sandboxed else ""
        if self.state == "passed":
            return f"check passed: `{self.command}`{where} ({self.seconds:.1f} s{box})"
        if self.state == "failed":
            code = "timed out" if self.exit_code is None else f"exit {self.exit_code}"
            return f"check failed: `{self.command}`{where} ({code}, {self.seconds:.1f} s{box})"
        if self.state == "conflict":
            return f"check not run: the change conflicts with the base in {', '.join(self.conflicts)}"
        return f"check could not run: {self.output.strip().splitlines()[-1] if self.output.strip() else '?'}"


def snapshot(info: WorktreeInfo) -> str:
    """A commit of the session's current state that moves no ref, made as :func:`commit_pending`
    will make Cockpit's commit: the worktree's files (pending changes included) on the session
    branch's last commit — whatever the session did to its HEAD — with a merge of the base branch it
    began as a second parent (:func:`_merging_base`); the branch head when nothing is pending, or
    when there is no worktree (a kept branch)."""
    tip = git("rev-parse", "--verify", "-q", f"refs/heads/{info.branch}^{{commit}}", cwd=info.repo,
              check=False).strip()
    if not tip:
        raise WorktreeError(f"the session branch {info.branch} no longer exists (deleted by hand?)")
    if not Path(info.path).is_dir():
        return tip
    tree = _with_temp_index(info, "write-tree").strip()
    if not git("diff", "--name-only", "--ignore-submodules=all", tip, tree, cwd=info.repo).strip():
        return tip  # nothing pending that Cockpit's commit takes (it leaves a pointer change alone)
    parents = ["-p", tip]
    admin = git("rev-parse", "--absolute-git-dir", cwd=info.path).strip()
    merging = _merging_base(info, os.path.join(admin, "MERGE_HEAD"))
    if merging:
        parents += ["-p", merging]
    return git(*_identity(info.path), "commit-tree", tree, *parents, "-m", "cockpit: the session's current state",
               cwd=info.path).strip()


def check(info: WorktreeInfo, command: str, wrap=None, timeout: float = 900.0) -> CheckResult:
    """Run ``command`` (``bash -c``) on the session's change merged onto the base branch's current
    head, in a scratch worktree removed afterwards; nothing of the user's or the session's moves.
    ``wrap(tree, argv) -> argv`` puts it in a sandbox (None: run as is). Blocks."""
    import signal
    import time

    start = time.monotonic()
    try:
        commit = snapshot(info)
    except WorktreeError as exc:
        return CheckResult("error", command, output=str(exc))
    base = info.base_commit
    if info.base_branch and git("rev-parse", "--verify", "-q", f"refs/heads/{info.base_branch}",
                                cwd=info.repo, check=False).strip():
        base = f"refs/heads/{info.base_branch}"
    onto = git("rev-parse", base, cwd=info.repo).strip()
    _tree, conflicts = preview_merge(info, commit)
    if conflicts:
        return CheckResult("conflict", command, onto=onto, conflicts=conflicts)
    scratch = tempfile.mkdtemp(prefix="cockpit-check-")
    os.rmdir(scratch)
    sandboxed = wrap is not None
    try:
        git("worktree", "add", "--detach", "-q", scratch, onto, cwd=info.repo)
        git(*_identity(scratch), "merge", "-q", "--no-edit", "-m", f"cockpit check of {info.branch}", commit,
            cwd=scratch)
        argv = ["bash", "-c", command]
        if wrap is not None:
            argv = wrap(scratch, argv)
        proc = subprocess.Popen(argv, cwd=scratch, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            out, _ = proc.communicate()
            code = None
            out += f"\n[cockpit: the check timed out after {timeout:.0f} s]\n".encode()
        text = out.decode("utf-8", "replace")
        tail = text[-CHECK_TAIL_CHARS:]
        state = "passed" if code == 0 else "failed"
        return CheckResult(state, command, code, tail, time.monotonic() - start, sandboxed, onto)
    except (WorktreeError, OSError) as exc:
        return CheckResult("error", command, output=str(exc), seconds=time.monotonic() - start, onto=onto)
    finally:
        git("worktree", "remove", "--force", scratch, cwd=info.repo, check=False)
        shutil.rmtree(scratch, ignore_errors=True)
        git("worktree", "prune", cwd=info.repo, check=False)


# -- push and pull request ------------------------------------------------------------------------
def remote_of(repo: str) -> str | None:
    """The remote to push to: ``origin`` when there is one, else the first; None when none."""
    names = git("remote", cwd=repo, check=False).split()
    return "origin" if "origin" in names else (names[0] if names else None)


def push(info: WorktreeInfo, message: str, remote: str | None = None) -> tuple[str, str]:
    """Commit what is pending, push the session branch to ``remote`` (default :func:`remote_of`)
    under the same name. Returns (remote, its URL). Raises WorktreeError (no remote, push refused)."""
    remote = remote or remote_of(info.repo)
    if remote is None:
        raise WorktreeError(f"{info.repo} has no remote to push {info.branch} to (git remote add origin …)")
    commit_pending(info, message)
    git("push", "-q", remote, f"refs/heads/{info.branch}:refs/heads/{info.branch}", cwd=info.repo, timeout=300)
    url = git("remote", "get-url", remote, cwd=info.repo, check=False).strip()
    return remote, url


def compare_url(remote_url: str, base: str, branch: str) -> str | None:
    """GitHub's "open a pull request" page for ``branch`` against ``base`` when the remote is on
    github.com (``git@github.com:o/r.git``, ``https://github.com/o/r``, ``ssh://git@github.com/o/r``);
    None otherwise."""
    m = re.match(r"^(?:git@github\.com:|(?:https?|ssh|git)://(?:[^@/]+@)?github\.com/)([^/]+)/(.+?)(?:\.git)?/?$",
                 remote_url.strip())
    if not m:
        return None
    return f"https://github.com/{m.group(1)}/{m.group(2)}/compare/{base}...{branch}?expand=1"
