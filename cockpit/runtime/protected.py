"""Protected paths: files that steer tools, editors, agents or git rather than being the project's code.

A change to one of them can run code later, outside any session's sandbox — a git hook runs at the
user's next commit, ``.envrc`` at the next ``cd``, ``.vscode/tasks.json`` in the editor, a
``CLAUDE.md`` or ``.mcp.json`` in the next agent — so an edit to one asks the user in every
permission mode (Claude Code protects the same kind of paths), the sandbox keeps the existing ones
read-only for the session's commands, and the diff screen flags them.

:func:`protected_reason` takes a path relative to the working tree (``/`` separators) and says why
it is protected, or ``""``. ``hooks_path`` is what ``core.hooksPath`` names (relative to the
tree), ``extra`` the globs from config (``[sandbox] protected``).
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

# folders whose every file is protected, at any depth
PROTECTED_DIRS = (".git", ".githooks", ".husky", ".vscode", ".idea", ".claude", ".codex", ".gemini", ".cursor",
                  ".github", ".gitlab", ".circleci", ".devcontainer", ".gitea", ".forgejo", ".buildkite", ".zed",
                  # other agents' and editors' settings and instructions
                  ".windsurf", ".roo", ".continue", ".kiro", ".junie", ".amazonq", ".opencode", ".helix", ".nvim",
                  ".fleet", ".theia", ".clinerules")
# files protected by how their names end (an editor opens a workspace file's tasks and settings)
PROTECTED_SUFFIXES = (".code-workspace",)
# files protected by name, at any depth
PROTECTED_FILES = (".envrc", ".pre-commit-config.yaml", ".pre-commit-hooks.yaml", "CONVENTIONS.md", ".gitattributes",
                   ".gitmodules", "CLAUDE.md",
                   "CLAUDE.local.md", "AGENTS.md", ".mcp.json",
                   # CI pipelines (run with the project's secrets on the next push)
                   ".gitlab-ci.yml", "Jenkinsfile", "azure-pipelines.yml", ".travis.yml", "bitbucket-pipelines.yml",
                   ".drone.yml",
                   # tool-version managers and editors that run code from the project folder
                   "mise.toml", ".mise.toml", ".tool-versions", ".exrc", ".nvimrc", ".nvim.lua", ".dir-locals.el",
                   # other agents' instructions, package-manager settings (registries, scripts)
                   "GEMINI.md", ".cursorrules", ".windsurfrules", ".clinerules", ".npmrc", ".yarnrc", ".yarnrc.yml",
                   ".aider.conf.yml",
                   # what Cockpit (and Claude Code) copy from the checkout into every new worktree —
                   # untracked files, often the secrets the sandbox hides (.env, *.pem)
                   ".worktreeinclude",
                   # git-hook managers' configs (run at your next commit), git-lfs's endpoint
                   "lefthook.yml", "lefthook.yaml", "lefthook.json", "lefthook.toml", "lefthook-local.yml",
                   "lefthook-local.yaml", ".lefthook.yml", ".lefthook.yaml", ".overcommit.yml", ".huskyrc",
                   "commitlint.config.ts", ".devcontainer.json", ".pdbrc", ".Rprofile",
                   ".simple-git-hooks.json", ".simple-git-hooks.js", "simple-git-hooks.json", ".lintstagedrc",
                   ".lintstagedrc.json", ".lintstagedrc.js", ".lintstagedrc.cjs", ".lintstagedrc.mjs",
                   ".lintstagedrc.yml", ".lintstagedrc.yaml", "lint-staged.config.js", "lint-staged.config.cjs",
                   "lint-staged.config.mjs", "commitlint.config.js", ".lfsconfig",
                   # run by a shell, a package manager or a debugger from the project folder
                   ".rvmrc", ".pnpmfile.cjs", "bunfig.toml", ".lvimrc", ".kakrc", ".gdbinit",
                   # other agents' instructions
                   "AGENT.md", "CRUSH.md", ".crush.json", "opencode.json", ".goosehints", ".rules",
                   ".augment-guidelines")


def protected_reason(rel: str, hooks_path: str | None = None, extra: Iterable[str] = ()) -> str:
    """Why ``rel`` (relative to the working tree) is protected, or ``""`` when it is not."""
    rel = rel.replace("\\", "/").strip("/")
    while rel.startswith("./"):
        rel = rel[2:]
    if not rel:
        return ""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    lowered = [p.lower() for p in parts]
    for d in PROTECTED_DIRS:
        if d.lower() in lowered[:-1] or (d.lower() == lowered[-1]):
            return f"{d} is a protected folder (it steers git, an editor or an agent)"
    name = parts[-1]
    for f in PROTECTED_FILES:
        if name.lower() == f.lower():
            return f"{f} is a protected file (it steers git, a shell or an agent)"
    for suffix in PROTECTED_SUFFIXES:
        if name.lower().endswith(suffix):
            return f"*{suffix} is a protected file (it steers an editor)"
    if hooks_path:
        hp = hooks_path.replace("\\", "/").strip("/")
        while hp.startswith("./"):
            hp = hp[2:]
        if hp and not hp.startswith("/") and (rel == hp or rel.startswith(hp + "/")):
            return f"{hp} is the repository's git hooks folder (core.hooksPath)"
    for pattern in extra:
        p = pattern.strip().strip("/")
        if not p:
            continue
        if fnmatch.fnmatchcase(rel, p) or (p.endswith("/**") and (rel == p[:-3] or rel.startswith(p[:-2]))):
            return f"{pattern} is protected in config.toml ([sandbox] protected)"
    return ""


def hooks_path_of(tree: Path | str) -> str | None:
    """``core.hooksPath`` of the repository at ``tree`` when it names a folder inside the tree
    (relative), else None. Never runs a hook; a missing git or repository is None."""
    try:
        out = subprocess.run(["git", "-C", str(tree), "config", "--get", "core.hooksPath"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    value = out.stdout.strip()
    if out.returncode != 0 or not value:
        return None
    if value.startswith("/"):
        try:
            return Path(value).resolve().relative_to(Path(tree).resolve()).as_posix()
        except (ValueError, OSError):
            return None
    return value


def existing_protected(tree: Path | str, hooks_path: str | None = None, extra: Iterable[str] = (),
                       limit: int = 200) -> list[Path]:
    """The protected files and folders that exist at the top of ``tree`` and one level down (what the
    sandbox binds read-only), at most ``limit``. Never follows a symlink out of the tree."""
    root = Path(tree)
    found: list[Path] = []
    names = set(PROTECTED_DIRS) | set(PROTECTED_FILES)
    if hooks_path:
        names.add(hooks_path.split("/")[0])
    try:
        top = list(root.iterdir())
    except OSError:
        return found
    for entry in top:
        if entry.name in names or protected_reason(entry.name, hooks_path, extra):
            found.append(entry)
        elif entry.is_dir() and not entry.is_symlink() and not entry.name.startswith("."):
            try:
                for sub in entry.iterdir():
                    if sub.name in PROTECTED_FILES or sub.name in PROTECTED_DIRS:
                        found.append(sub)
            except OSError:
                pass
        if len(found) >= limit:
            break
    return found[:limit]


# what Cockpit's own git runs with, on a session's tree (written by the session) above all: no
# repository hook (post-commit, post-merge, post-checkout, reference-transaction…; ``--no-verify``
# skips only some), no fsmonitor command, no descent into a nested repository the session planted
# (its own .git/config could name a filter git would run outside the sandbox), no ext:: transport
NO_HOOKS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "submodule.recurse=false",
            "-c", "diff.ignoreSubmodules=all", "-c", "status.submoduleSummary=false", "-c", "protocol.ext.allow=never",
            "-c", "core.pager=cat")
GIT_SAFE = (*NO_HOOKS, "--literal-pathspecs")
DELETED = "deleted"


class ProtectedCheckError(RuntimeError):
    """git could not list the tree's paths: the protected paths could not be checked."""


def _git(tree: Path | str, *args: str, timeout: int = 60) -> bytes:
    """``git`` (no hook, no fsmonitor) in ``tree``; its output, or :class:`ProtectedCheckError`."""
    try:
        out = subprocess.run(["git", *GIT_SAFE, "-C", str(tree), *args], capture_output=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ProtectedCheckError(f"git {args[0]} did not run ({type(exc).__name__}: {exc})") from None
    if out.returncode != 0:
        err = out.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ProtectedCheckError(f"git {args[0]} failed: {err[-1] if err else f'exit {out.returncode}'}")
    return out.stdout


def tree_base(tree: Path | str) -> tuple[bool, str | None]:
    """(``tree`` is a git working tree, the commit its HEAD names or None when unborn). Never runs
    a hook; a missing git or repository is (False, None)."""
    try:
        inside = _git(tree, "rev-parse", "--is-inside-work-tree", timeout=10).strip() == b"true"
    except ProtectedCheckError:
        return False, None
    if not inside:
        return False, None
    try:
        return True, _git(tree, "rev-parse", "--verify", "-q", "HEAD^{commit}", timeout=10).decode().strip() or None
    except ProtectedCheckError:
        return True, None


def _names(raw: bytes) -> list[str]:
    return [n.decode("utf-8", "surrogateescape") for n in raw.split(b"\0") if n]


def _candidates(tree: Path | str, base: str | None, hooks_path: str | None, extra: Iterable[str]) -> set[str]:
    """Every protected path git knows of in ``tree``: the index's, the untracked ones (ignored ones
    too, so a ``.gitignore`` entry cannot hide one) and the ``base`` commit's (so a deletion or a
    rename counts). Nothing from the index's stat data or flags (``--assume-unchanged``,
    ``--skip-worktree`` hide nothing here: every file is fingerprinted by content)."""
    names = set(_names(_git(tree, "ls-files", "-z")))
    names |= set(_names(_git(tree, "ls-files", "-z", "--others", "--exclude-standard")))
    ignored = _names(_git(tree, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"))
    if base:
        names |= set(_names(_git(tree, "ls-tree", "-r", "-z", "--name-only", base)))
    out = {n for n in names if protected_reason(n, hooks_path, extra)}
    for n in ignored:
        if not n.endswith("/"):
            if protected_reason(n, hooks_path, extra):
                out.add(n)
        elif protected_reason(n.rstrip("/"), hooks_path, extra):  # an ignored protected folder: its files
            out |= set(_walk(tree, n.rstrip("/")))
    return out


def _walk(tree: Path | str, rel: str, limit: int = 5000) -> list[str]:
    """The files under the folder ``rel`` of ``tree`` (never through a symlink), at most ``limit``."""
    found: list[str] = []
    start = os.path.join(str(tree), rel)
    if os.path.islink(start):
        return [rel]
    for top, dirs, files in os.walk(start):
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        dirs[:] = [d for d in dirs if d not in links]
        for f in files + links:
            found.append(os.path.relpath(os.path.join(top, f), str(tree)).replace(os.sep, "/"))
        if len(found) >= limit:
            break
    return found[:limit]


def fingerprint(tree: Path | str, rel: str) -> str:
    """What ``rel`` holds now, by content: ``file[+x]:<sha256>``, ``link:<sha256 of its target>``,
    ``dir``, ``special:<mode>``, ``deleted``, or ``symlinked:…`` when a folder on the way is a
    symlink. Reached one folder at a time without following a symlink; never blocks on a FIFO."""
    import hashlib
    import stat as st

    from cockpit.runtime.workspace import PathRefused, open_dir

    parent, _, name = rel.rpartition("/")
    try:
        fd = open_dir(Path(tree), parent)
    except PathRefused:
        return "symlinked: a folder on the way is a symlink or a file"
    except FileNotFoundError:
        return DELETED
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    try:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return DELETED
        if st.S_ISLNK(info.st_mode):
            return "link:" + hashlib.sha256(os.fsencode(os.readlink(name, dir_fd=fd))).hexdigest()
        if st.S_ISDIR(info.st_mode):
            return "dir"
        if not st.S_ISREG(info.st_mode):
            return f"special:{st.S_IFMT(info.st_mode)}"
        h = hashlib.sha256()
        ffd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        try:
            if not st.S_ISREG(os.fstat(ffd).st_mode):  # swapped meanwhile
                return "special:swapped"
            while chunk := os.read(ffd, 1 << 20):
                h.update(chunk)
        finally:
            os.close(ffd)
        return ("file+x:" if info.st_mode & 0o100 else "file:") + h.hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    finally:
        os.close(fd)


def protected_snapshot(tree: Path | str, hooks_path: str | None = None, extra: Iterable[str] = (),
                       base: str | None = None) -> dict[str, str]:
    """Every protected path git knows of in ``tree`` (see :func:`_candidates`; ``base``: the commit
    the session started from) with a fingerprint of its content (:func:`fingerprint`): two
    snapshots that differ say a command changed a protected path, whatever it did to the index or
    the commits. Never runs a hook. Raises :class:`ProtectedCheckError` when git fails (the caller
    fails closed)."""
    extra = tuple(extra)
    paths = sorted(_candidates(tree, base, hooks_path, extra))
    # what git holds of each too (the index, the branch's tip): a change made only there — a blob
    # written with hash-object and staged, then committed, the file on disk left alone — counts
    staged = _blobs(_git(tree, "ls-files", "-s", "-z"))
    try:
        tip = _blobs(_git(tree, "ls-tree", "-r", "-z", "HEAD"))
    except ProtectedCheckError:  # no commit yet
        tip = {}
    return {rel: f"{fingerprint(tree, rel)}|i:{staged.get(rel, '-')}|h:{tip.get(rel, '-')}" for rel in paths}


PLAIN_SCAN_MAX = 50_000  # entries of a folder outside git looked at for protected paths
_PLAIN_SKIPPED = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".cache", ".npm", ".tox", ".mypy_cache"})


def plain_snapshot(tree: Path | str, hooks_path: str | None = None, extra: Iterable[str] = ()) -> dict[str, str]:
    """Outside git (a session in place in a plain folder): the protected paths found by walking
    ``tree`` — a protected folder and each file in it — with their fingerprints (at most
    :data:`PLAIN_SCAN_MAX` entries; never through a symlink; dependency folders skipped)."""
    extra = tuple(extra)
    root = str(tree)
    found: set[str] = set()
    seen = 0
    for top, dirs, files in os.walk(root):
        rel_top = os.path.relpath(top, root).replace(os.sep, "/")
        rel_top = "" if rel_top == "." else rel_top + "/"
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        dirs[:] = [d for d in dirs if d not in links and d not in _PLAIN_SKIPPED]
        for name in dirs + files + links:
            rel = rel_top + name
            if protected_reason(rel, hooks_path, extra):
                found.add(rel)
        seen += len(dirs) + len(files)
        if seen > PLAIN_SCAN_MAX:
            break
    return {rel: fingerprint(tree, rel) for rel in sorted(found)}


def path_fingerprint(tree: Path | str, rel: str) -> str:
    """One path's entry as :func:`protected_snapshot` writes it (the file, the index, the tip)."""
    spec = f":(literal){rel}"
    staged = _blobs(_git(tree, "ls-files", "-s", "-z", "--", spec))
    try:
        tip = _blobs(_git(tree, "ls-tree", "-r", "-z", "HEAD", "--", spec))
    except ProtectedCheckError:
        tip = {}
    return f"{fingerprint(tree, rel)}|i:{staged.get(rel, '-')}|h:{tip.get(rel, '-')}"


def _blobs(raw: bytes) -> dict[str, str]:
    """path → object id from ``ls-files -s -z`` or ``ls-tree -r -z`` output."""
    out: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        meta, sep, path = entry.partition(b"\t")
        if sep:
            fields = meta.split()
            if len(fields) >= 3:
                oid = fields[1] if len(fields[1]) >= 40 else fields[2]
                out[path.decode("utf-8", "surrogateescape")] = oid.decode("ascii", "replace")
    return out


def changed_paths(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The paths whose fingerprint differs between two snapshots (a missing one is ``deleted``)."""
    return sorted(p for p in set(before) | set(after) if before.get(p, DELETED) != after.get(p, DELETED))


def _remove_emptied_folders(tree: Path | str, rel: str, in_base: set[str]) -> None:
    """After ``rel`` was deleted: its folders the base does not have, now empty (``.github/`` of
    a ``.github/ci.yml`` the command made), deleted too, innermost first — through folder
    descriptors (a symlink on the way is not followed); a folder with anything in it stays."""
    from cockpit.runtime.workspace import PathRefused, open_dir

    kept = {d for path in in_base for d in _parents(path)}
    for folder in _parents(rel):
        if folder in kept:
            return
        parent, _, name = folder.rpartition("/")
        try:
            fd = open_dir(Path(tree), parent)
        except (PathRefused, OSError):
            return
        try:
            os.rmdir(name, dir_fd=fd)
        except OSError:  # not empty (or not a folder): it stays, and so do those around it
            return
        finally:
            os.close(fd)


def _parents(rel: str) -> list[str]:
    """``a/b/c`` → ``["a/b", "a"]``: the folders holding a path, innermost first."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]


def _remove(tree: Path | str, rel: str) -> str:
    """Delete ``rel`` (a file, a symlink or a folder) inside ``tree`` through folder descriptors,
    never following a symlink on the way: ``""`` when done (or already gone), else why not."""
    import shutil
    import stat as st

    from cockpit.runtime.workspace import PathRefused, open_dir

    parent, _, name = rel.rpartition("/")
    if not name or name in (".", ".."):
        return "not a path inside the tree"
    try:
        fd = open_dir(Path(tree), parent)
    except PathRefused:
        return "a folder on the way is a symlink (not followed)"
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return ""
        if st.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=fd)  # the fd-based rmtree: never leaves the folder
        else:
            os.unlink(name, dir_fd=fd)
        return ""
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(fd)


def revert(tree: Path | str, paths: Iterable[str], base: str | None = None, plain: bool = False) -> dict[str, str]:
    """Put protected ``paths`` back as the ``base`` commit has them (HEAD when None): a path the
    base holds is checked out from it (git replaces a symlink on the way, never writes through
    one), any other is deleted without following a symlink. ``plain``: a folder outside git (what
    a command made there is deleted; what was there is read-only in the sandbox). Never runs a
    hook. The paths not put back, each with why."""
    if plain:
        gone = {rel: _remove(tree, rel) for rel in paths}
        return {rel: why for rel, why in gone.items() if why}
    ref = base or "HEAD"
    try:
        in_base = set(_names(_git(tree, "ls-tree", "-r", "-z", "--name-only", ref)))
    except ProtectedCheckError:
        in_base = set()
    skipped: dict[str, str] = {}
    for rel in paths:
        if rel in in_base:
            if fingerprint(tree, rel) == "dir":  # a folder where the base has a file
                why = _remove(tree, rel)
                if why:
                    skipped[rel] = why
                    continue
            for flag in ("--no-skip-worktree", "--no-assume-unchanged"):  # an index flag must not make git skip it
                try:
                    _git(tree, "update-index", flag, "--", rel)
                except ProtectedCheckError:
                    pass  # not in the index
            try:
                _git(tree, "checkout", ref, "--", rel)
            except ProtectedCheckError as exc:
                skipped[rel] = str(exc)
            continue
        why = _remove(tree, rel)
        if why:
            skipped[rel] = why
            continue
        _remove_emptied_folders(tree, rel, in_base)
        try:  # staged too (a blob written straight into the index): out of the index as well
            _git(tree, "rm", "-q", "--cached", "--ignore-unmatch", "--", rel)
        except ProtectedCheckError as exc:
            skipped[rel] = str(exc)
    return skipped
