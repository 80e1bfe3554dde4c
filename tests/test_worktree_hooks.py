"""Cockpit's own git commands (create, commit, merge, keep, discard) never run a repository hook:
neither the repository's (``core.hooksPath`` or ``.git/hooks``) nor one a session rewrote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import git, make_repo

from cockpit.runtime import worktree as wt

HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-merge-commit", "post-merge",
         "post-checkout", "post-rewrite", "reference-transaction", "pre-auto-gc")


def hook_script(marker: Path) -> str:
    return f"#!/bin/sh\ntouch '{marker}'\n"


def install_hooks(folder: Path, markers: Path, where: str) -> None:
    """Every hook in ``folder``, each touching ``markers/<where>-<hook>`` when it runs."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        script = folder / name
        script.write_text(hook_script(markers / f"{where}-{name}"))
        script.chmod(0o755)


@pytest.fixture
def markers(tmp_path) -> Path:
    folder = tmp_path / "markers"  # outside the repository and the worktrees
    folder.mkdir()
    return folder


def hooked_repo(tmp_path: Path, markers: Path, hooks_path: str | None) -> Path:
    """A repository whose hooks all leave a marker: in ``.git/hooks`` and, with ``hooks_path``,
    in the (committed) folder ``core.hooksPath`` names."""
    repo = make_repo(tmp_path / "repo", {"calc.py": "a\n"})
    install_hooks(repo / ".git" / "hooks", markers, "git-hooks")
    install_hooks(repo / ".githooks", markers, "githooks")
    git(repo, "-c", "core.hooksPath=/dev/null", "add", ".githooks")
    git(repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "hooks")
    if hooks_path:
        git(repo, "config", "core.hooksPath", hooks_path)
    return repo


def session_changes(info: wt.WorktreeInfo, markers: Path) -> None:
    """What a session may do in its worktree: rewrite a hook, add a file."""
    tree = Path(info.path)
    (tree / ".githooks" / "post-merge").write_text(hook_script(markers / "session-post-merge"))
    (tree / ".githooks" / "post-merge").chmod(0o755)
    (tree / "new.py").write_text("session\n")


def assert_no_hook_ran(markers: Path) -> None:
    assert sorted(os.listdir(markers)) == []


@pytest.mark.parametrize("hooks_path", [".githooks", None])
@pytest.mark.parametrize("diverged", [False, True], ids=["fast-forward", "merge-commit"])
@pytest.mark.parametrize("checked_out", [True, False], ids=["into-checkout", "into-temp-worktree"])
def test_commit_and_merge_run_no_hook(tmp_path, markers, hooks_path, diverged, checked_out):
    repo = hooked_repo(tmp_path, markers, hooks_path)
    info = wt.create(repo, "s1", "fix it", tmp_path / "worktrees")
    session_changes(info, markers)
    if diverged:  # the user committed meanwhile: the merge makes a merge commit
        (repo / "other.py").write_text("user\n")
        git(repo, "-c", "core.hooksPath=/dev/null", "add", "other.py")
        git(repo, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "user")
    if not checked_out:  # the user is on another branch: the merge happens in a temporary worktree
        git(repo, "-c", "core.hooksPath=/dev/null", "checkout", "-q", "-b", "elsewhere")
    assert wt.commit_pending(info, "session work") is not None
    res = wt.merge(info, "session work")
    assert res.ok, res.message
    assert ("merge commit" in res.message) is diverged
    assert git(repo, "show", "main:new.py") == "session\n"
    assert "session-post-merge" in git(repo, "show", "main:.githooks/post-merge")
    assert_no_hook_ran(markers)


@pytest.mark.parametrize("hooks_path", [".githooks", None])
def test_keep_and_discard_run_no_hook(tmp_path, markers, hooks_path):
    repo = hooked_repo(tmp_path, markers, hooks_path)
    kept = wt.create(repo, "s1", "keep it", tmp_path / "worktrees")
    session_changes(kept, markers)
    assert wt.keep(kept, "session work") == f"kept branch {kept.branch}"
    assert git(repo, "show", f"{kept.branch}:new.py") == "session\n" and not Path(kept.path).exists()
    gone = wt.create(repo, "s2", "drop it", tmp_path / "worktrees")
    session_changes(gone, markers)
    assert wt.discard(gone) == f"discarded {gone.branch} and its worktree"
    assert not Path(gone.path).exists() and gone.branch not in git(repo, "branch", "--list")
    assert wt.discard(kept) == f"discarded the kept branch {kept.branch}"  # it had no worktree left
    assert kept.branch not in git(repo, "branch", "--list")
    assert_no_hook_ran(markers)


def test_the_hooks_would_run_for_plain_git(tmp_path, markers):
    """The test's hooks work: the same commit by plain git leaves markers (so the tests above
    pass because Cockpit's git runs no hook, not because the hooks never fire)."""
    repo = hooked_repo(tmp_path, markers, ".githooks")
    (repo / "x.py").write_text("x\n")
    git(repo, "add", "x.py")
    git(repo, "commit", "-q", "-m", "x")
    assert {"githooks-pre-commit", "githooks-post-commit"} <= set(os.listdir(markers))
