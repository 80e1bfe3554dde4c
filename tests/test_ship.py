"""From a session to a merged change (issue #22): the check before merge, a way through conflicts,
empty merges, kept branches, push and pull request, commit style, bare repositories and a
worktree creation failing half-way. Real git in temporary repositories; the model is the stand-in."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import CALC, fake_gh, git, make_repo, with_remote
from standin import Reply, ToolUse

from cockpit.cli import main
from cockpit.events import SessionStatus as S
from cockpit.runtime import RuntimeConfig, SessionManager, ship
from cockpit.runtime import worktree as wt
from cockpit.runtime.config import config_path, load_config, worktrees_dir
from cockpit.runtime.pricing import ModelPrice, PricingTable
from cockpit.runtime.spawn import SpawnSpec

EDIT = "str_replace_based_edit_tool"


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", {"calc.py": CALC, "test_calc.py": "from calc import add\n"
                                         "assert add(2, 2) == 4, 'add is wrong'\nprint('ok')\n"})


def make_mgr(api, tmp_path, **cfg) -> SessionManager:
    base = dict(api_key="test-key", base_url=api.base_url, interactive=True, max_retries=0, timeout=10.0,
                model="test-model", worktrees_dir=worktrees_dir())
    base.update(cfg)
    price = ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3, context_window=200_000)
    return SessionManager(None, RuntimeConfig(**base), pricing=PricingTable({"test-model": price}, source="t", date="d"))


def tree_digest(path: Path) -> dict[str, str]:
    """Every file of a checkout (``.git`` included) → its content's hash: byte-identical or not."""
    out = {}
    skip = (".git/objects/", ".git/worktrees/", ".git/refs/heads/cockpit/", ".git/logs/refs/heads/cockpit/")
    for p in sorted(path.rglob("*")):
        if p.is_file() and not str(p.relative_to(path)).startswith(skip):
            out[str(p.relative_to(path))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def edit_calc(new: str = "a + b") -> Reply:
    """The model's turn that fixes add (``a - b`` → ``new``) with the editor."""
    return Reply("", [ToolUse(EDIT, {"command": "str_replace", "path": "calc.py", "old_str": "a - b", "new_str": new})])


async def fixed_then_main_moved(api, repo: Path, tmp_path: Path):
    """(manager, session): a session that fixed add and waits; then main fixed the same line its
    own way (the two conflict)."""
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions")
    s = await mgr.spawn(SpawnSpec("fix add", workspace=repo))
    assert await mgr.wait_idle(timeout=30) and s.status == S.WAITING
    (repo / "calc.py").write_text(CALC.replace("a - b", "b + a  # fixed on main"))
    git(repo, "commit", "-q", "-am", "a fix on main")
    return mgr, s


def fixed(info: wt.WorktreeInfo) -> None:
    (Path(info.path) / "calc.py").write_text(CALC.replace("a - b", "a + b"))


# -- the review diff after a conflict resolved --------------------------------------------------
@pytest.mark.parametrize("kept", [False, True])
def test_the_diff_of_a_branch_that_merged_its_base_shows_what_the_merge_would_drop(repo, kept):
    """A conflict resolved in the worktree by keeping the session's side (`git merge main`,
    `checkout --ours`): the merge into main is then a fast-forward that drops main's line. The diff
    showed only the session's own line (against the old base commit); it now shows the deletion."""
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    wt.commit_pending(info, "fix add")
    (repo / "calc.py").write_text(CALC + "# main: keep me\n")
    git(repo, "commit", "-qam", "main keeps a line")
    assert not wt.merge(info, "m").ok  # a conflict: nothing merged
    work = Path(info.path)
    subprocess.run(["git", "merge", "-q", "main"], cwd=work, capture_output=True)  # conflicts
    git(work, "checkout", "--ours", "calc.py")
    git(work, "-c", "user.name=x", "-c", "user.email=x@example.com", "commit", "-qam", "resolved: ours")
    (work / "NOTES.txt").write_text("pending\n")  # a pending change is still in the diff
    if kept:
        assert wt.keep(info, "kept").startswith("kept branch")
    d = wt.diff(info)
    calc = next(f for f in d.files if f.path == "calc.py")
    assert "-# main: keep me" in calc.patch and "+    return a + b" in calc.patch
    assert calc.removed == 2 and calc.added == 1
    assert {f.path for f in d.files} == {"calc.py", "NOTES.txt"}


def _changed_lines(patch: str) -> list[str]:
    return [ln for ln in patch.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def _shows_what_the_merge_does(repo: Path, info: wt.WorktreeInfo) -> None:
    """The review diff, then the merge: the base branch changed by exactly what the diff showed."""
    shown = {f.path: (f.added, f.removed, _changed_lines(f.patch)) for f in wt.diff(info).files}
    before = git(repo, "rev-parse", "main").strip()
    assert wt.merge(info, "session work").ok
    after = git(repo, "rev-parse", "main").strip()
    done = {}
    for line in git(repo, "diff", "--numstat", before, after).splitlines():
        added, removed, path = line.split("\t")
        done[path] = (int(added), int(removed), _changed_lines(git(repo, "diff", before, after, "--", path)))
    assert shown == done


def _session_git(work: Path, *args: str) -> None:
    git(work, "-c", "user.name=s", "-c", "user.email=s@example.com", *args)


def test_an_uncommitted_merge_of_main_that_drops_a_line_shows_the_drop(repo):
    """The session begins `git merge main`, resolves by dropping main's line, and leaves the merge
    uncommitted: Cockpit's commit of it makes a merge commit, and the merge is a fast-forward."""
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    wt.commit_pending(info, "fix add")
    (repo / "calc.py").write_text(CALC.replace("a - b", "a - b  # main's own") + "# main: keep me\n")
    git(repo, "commit", "-qam", "main changes")
    work = Path(info.path)
    subprocess.run(["git", "merge", "-q", "main"], cwd=work, capture_output=True)  # conflicts
    (work / "calc.py").write_text(CALC.replace("a - b", "a + b") + "# resolved\n")  # main's lines dropped
    git(work, "add", "calc.py")  # resolved, not committed
    d = wt.diff(info)
    assert "-# main: keep me" in d.files[0].patch
    _shows_what_the_merge_does(repo, info)


def test_a_base_branch_reset_behind_the_session_shows_what_the_merge_brings_back(repo):
    (repo / ".env").write_text("SECRET=hunter2\n")
    git(repo, "add", ".env")
    git(repo, "commit", "-qm", "oops: .env")
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    git(repo, "reset", "-q", "--hard", "HEAD~1")  # the user removed that commit after the session began
    assert ".env" in {f.path for f in wt.diff(info).files}  # the merge would bring it back: shown
    _shows_what_the_merge_does(repo, info)


def test_a_criss_cross_history_shows_what_the_merge_does(repo):
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    work = Path(info.path)
    fixed(info)
    wt.commit_pending(info, "fix add")
    s1 = git(work, "rev-parse", "HEAD").strip()
    (repo / "news.txt").write_text("news\n")
    git(repo, "add", "news.txt")
    git(repo, "commit", "-qm", "news")
    _session_git(work, "merge", "-q", "--no-edit", "main")
    git(repo, "merge", "-q", "--no-edit", s1)  # main takes the session's first commit
    (work / "calc.py").write_text(CALC)  # the session puts the line back …
    (work / "z.txt").write_text("z\n")  # … and adds a file
    _shows_what_the_merge_does(repo, info)


def test_a_merge_begun_then_main_reverted_shows_what_the_merge_brings_back(repo):
    """The session begins merging main (not committed); the user then reverts a commit on main. The
    merge's second parent is dropped (main moved past it? no: it is still main's), and the diff
    is built as Cockpit's commit will be — so what comes back to main is shown."""
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    work = Path(info.path)
    fixed(info)
    wt.commit_pending(info, "fix add")
    (repo / ".env").write_text("SECRET=hunter2\n")
    git(repo, "add", ".env")
    git(repo, "commit", "-qm", "oops")
    _session_git(work, "merge", "--no-ff", "--no-commit", "main")
    git(repo, "revert", "--no-edit", "HEAD")  # the user takes the secret out of main
    (work / "notes.txt").write_text("n\n")
    _shows_what_the_merge_does(repo, info)


def test_a_merge_of_main_left_uncommitted_survives_main_moving_on(repo):
    """The sent-back flow: the session merges main and resolves without committing; the user then
    commits something unrelated on main. The merge is kept (it was dropped: every merge after it
    conflicted again) and the diff is what the merge then does."""
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    work = Path(info.path)
    fixed(info)
    wt.commit_pending(info, "fix add")
    (repo / "calc.py").write_text(CALC.replace("a - b", "b + a  # fixed on main"))
    git(repo, "commit", "-qam", "a fix on main")
    subprocess.run(["git", "merge", "-q", "main"], cwd=work, capture_output=True)  # conflicts
    (work / "calc.py").write_text(CALC.replace("a - b", "a + b") + "# resolved\n")
    git(work, "add", "calc.py")  # resolved, not committed
    (repo / "NEWS").write_text("later\n")
    git(repo, "add", "NEWS")
    git(repo, "commit", "-qm", "unrelated, on main")
    _shows_what_the_merge_does(repo, info)
    assert (repo / "NEWS").exists() and "# resolved" in (repo / "calc.py").read_text()


def test_a_submodule_pointer_the_session_committed_is_in_the_diff(repo, tmp_path):
    """A submodule of the repository (a gitlink at the base): the session moving its pointer was
    left out of the diff (`diff.ignoreSubmodules`) and merged unseen."""
    first = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{first},vendor/lib")
    git(repo, "commit", "-qm", "a submodule")
    info = wt.create(repo, "s1", "bump", worktrees_dir())
    work = Path(info.path)
    other = git(repo, "rev-parse", "HEAD").strip()
    git(work, "update-index", "--cacheinfo", f"160000,{other},vendor/lib")
    _session_git(work, "commit", "-qm", "point vendor/lib somewhere else")
    d = wt.diff(info)
    assert [f.path for f in d.files] == ["vendor/lib"] and "Subproject commit" in d.files[0].patch
    _shows_what_the_merge_does(repo, info)


def test_a_submodule_pointer_only_staged_is_neither_shown_nor_merged(repo):
    """Cockpit's commit leaves a pointer change alone when nothing else is pending (it runs no git
    inside a nested repository): the diff does not show it either."""
    first = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{first},vendor/lib")
    git(repo, "commit", "-qm", "a submodule")
    info = wt.create(repo, "s1", "bump", worktrees_dir())
    git(Path(info.path), "update-index", "--cacheinfo", f"160000,{git(repo, 'rev-parse', 'HEAD').strip()},vendor/lib")
    assert wt.diff(info).files == ()
    assert wt.merge(info, "m").message == "no changes to merge"


def test_a_session_branch_deleted_by_hand_is_said_in_one_line(repo):
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    git(Path(info.path), "checkout", "-q", "--detach")
    git(repo, "branch", "-D", info.branch)
    with pytest.raises(wt.WorktreeError, match=f"the session branch {info.branch} no longer exists"):
        wt.diff(info)
    with pytest.raises(wt.WorktreeError, match="no longer exists .*nothing was committed"):
        wt.merge(info, "m")  # it made a root commit holding the whole tree, then "unrelated histories"
    assert info.branch not in git(repo, "branch", "--list")


def test_the_diff_base_stays_the_base_commit_when_main_only_moved_on(repo):
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    (repo / "NEWS").write_text("later\n")
    git(repo, "add", "NEWS")
    git(repo, "commit", "-qm", "news")
    assert wt.diff_base(info) == info.base_commit
    assert [f.path for f in wt.diff(info).files] == ["calc.py"]  # main's own commit is not the session's


# -- tests before merge ---------------------------------------------------------------------------
def test_the_check_passes_on_the_change_merged_onto_the_current_base(repo):
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)  # pending, not committed: the check sees it
    (repo / "NEWS").write_text("later commit on main\n")
    git(repo, "add", "NEWS")
    git(repo, "commit", "-q", "-m", "news")
    res = wt.check(info, "test -f NEWS && python3 test_calc.py")  # the base's new commit is there too
    assert res.state == "passed" and res.ok and "ok" in res.output
    assert res.onto == git(repo, "rev-parse", "main").strip()
    # nothing moved: the session branch, main, the worktree's pending change; no scratch worktree left
    assert git(repo, "rev-parse", info.branch).strip() == info.base_commit
    assert "a + b" in (Path(info.path) / "calc.py").read_text()
    assert len(git(repo, "worktree", "list").splitlines()) == 2


def test_the_check_fails_with_the_outputs_tail(repo):
    info = wt.create(repo, "s1", "touch nothing useful", worktrees_dir())
    (Path(info.path) / "other.py").write_text("x = 1\n")
    res = wt.check(info, "python3 test_calc.py")
    assert res.state == "failed" and res.exit_code == 1 and "add is wrong" in res.output
    assert "check failed" in res.line() and "exit 1" in res.line()
    assert "add is wrong" in ship.check_report(res)


def test_the_check_runs_in_the_sandbox_without_network_when_there_is_one(repo):
    from cockpit.runtime import sandbox

    if sandbox.detect().backend is None:
        pytest.skip("no sandbox here")
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    res = ship.run_check(info, "python3 test_calc.py && echo $COCKPIT_SANDBOX && cat /proc/net/dev",
                         load_config())
    assert res.ok and res.sandboxed and "bubblewrap" in res.output
    assert "eth0" not in res.output  # its own network namespace: loopback only
    assert not list((worktrees_dir() / ".sandbox-tmp").iterdir())  # its temp folder (and .gitconfig) gone


def test_the_check_command_comes_from_config_then_a_note(repo, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    assert ship.check_command(RuntimeConfig(), notes)[0] is None
    (notes / "test-command.md").write_text("---\nname: test-command\ndescription: how to test\n---\n"
                                           "Run the suite:\n\n```bash\npython3 test_calc.py\n```\n")
    assert ship.check_command(RuntimeConfig(), notes) == ("python3 test_calc.py", f"note {notes / 'test-command.md'}")
    config_path().write_text('[worktrees]\ncheck_command = "make check"\n')
    cfg = load_config()
    assert cfg.check_command == "make check" and cfg.worktrees is True
    assert ship.check_command(cfg, notes) == ("make check", "config")
    config_path().write_text('check_command = 3\n')
    with pytest.raises(ValueError, match="check_command"):
        load_config()


def test_cli_check_and_merge_with_check(repo, capsys, tmp_path):
    config_path().write_text('check_command = "python3 test_calc.py"\n')
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    (Path(info.path) / "other.py").write_text("x = 1\n")
    assert main(["worktrees", "check", "s1"]) == 1
    assert "add is wrong" in capsys.readouterr().out
    assert main(["worktrees", "merge", "s1", "--check"]) == 1  # not a terminal: a failed check refuses
    assert "not merged" in capsys.readouterr().out and not (repo / "other.py").exists()
    fixed(info)
    assert main(["worktrees", "check", "s1"]) == 0
    assert "check passed" in capsys.readouterr().out
    assert main(["worktrees", "merge", "s1", "--check"]) == 0
    assert "a + b" in (repo / "calc.py").read_text()


def test_check_with_no_check_command_is_not_a_failed_check(repo, capsys):
    """`worktrees check` with no check command set exited 1, as a failed check does."""
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    assert main(["worktrees", "check", "s1"]) == 2
    assert "no check command: set check_command" in capsys.readouterr().err


def test_a_note_command_is_shown_and_confirmed_once(repo, capsys, monkeypatch, tmp_path):
    (repo / "notes").mkdir()
    (repo / "notes" / "test-command.md").write_text("Use `python3 test_calc.py` to test.\n")
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    assert main(["worktrees", "check", "s1"]) == 1  # not a terminal, no --yes: refused
    asked = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "y")
    assert main(["worktrees", "check", "s1"]) == 0
    assert "python3 test_calc.py" in capsys.readouterr().out and len(asked) == 1
    assert main(["worktrees", "check", "s1"]) == 0 and len(asked) == 1  # confirmed once


# -- conflicts and empty merges -------------------------------------------------------------------
def conflicting(repo: Path, sid: str = "s1") -> wt.WorktreeInfo:
    info = wt.create(repo, sid, "fix add", worktrees_dir())
    fixed(info)
    (repo / "calc.py").write_text(CALC.replace("a - b", "b + a  # fixed on main"))
    git(repo, "commit", "-q", "-am", "a fix on main")
    return info


def test_the_diff_of_a_conflicting_change_says_so_and_what_it_is_against(repo, capsys):
    """`worktrees diff` of a change that conflicts with main said "against main" with no word of
    the conflict (its `-` lines were not main's); the app's diff screen said both."""
    conflicting(repo)
    assert main(["worktrees", "diff", "s1"]) == 0
    out = capsys.readouterr().out
    assert "⚠ conflicts with main in calc.py — a merge would refuse it" in out
    assert "send-back s1" in out and "against where it last met main: 1 file changed" in out


def test_a_conflict_aborted_leaves_the_checkout_byte_identical(repo, capsys):
    info = conflicting(repo)
    (repo / "scratch.txt").write_text("untracked\n")
    before = tree_digest(repo)
    assert main(["worktrees", "merge", "s1"]) == 1
    out = capsys.readouterr().out
    assert "merge conflict in calc.py" in out and "send it back" in out and "cockpit shell s1" in out
    assert tree_digest(repo) == before
    assert Path(info.path).is_dir() and wt.branch_exists(info)


@pytest.mark.parametrize("left", ["unmerged", "markers committed", "markers pending"])
def test_a_conflict_the_session_left_unresolved_is_never_merged(repo, capsys, left):
    """The session ran `git merge main`, it conflicted, and it said it was done: its files hold
    conflict markers (git's unmerged paths, or markers it committed / left as they were). The
    merge is refused and names the file, main untouched; the CLI says how to send it back."""
    info = conflicting(repo)
    wt.commit_pending(info, "fix add")
    work = Path(info.path)
    subprocess.run(["git", "merge", "-q", "main"], cwd=work, capture_output=True)  # conflicts
    assert "<<<<<<<" in (work / "calc.py").read_text()
    if left == "markers committed":
        _session_git(work, "commit", "-qam", "merged main")
    elif left == "markers pending":
        git(work, "add", "calc.py")  # "resolved" as it was
    head = git(repo, "rev-parse", "main").strip()
    before = tree_digest(repo)
    assert wt.leftover_conflicts(info) == ("calc.py",)
    assert main(["worktrees", "merge", "s1"]) == 1
    out = capsys.readouterr().out
    assert "unresolved conflicts in calc.py" in out and "nothing was merged" in out and "send-back s1" in out
    assert git(repo, "rev-parse", "main").strip() == head and tree_digest(repo) == before
    # resolved for real (the file, whether or not the session ran `git add`): merged
    (work / "calc.py").write_text(CALC.replace("a - b", "a + b  # both"))
    assert wt.leftover_conflicts(info) == ()
    assert wt.merge(info, "fix add").ok
    assert "<<<<<<<" not in (repo / "calc.py").read_text()


def test_conflict_marker_lines_main_already_had_or_a_file_declares_are_not_flagged(repo):
    """Only lines the change adds count; a file meant to hold marker-like lines says so with
    git's conflict-marker-size attribute."""
    marker_doc = "<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n"
    (repo / "doc.txt").write_text(marker_doc)
    git(repo, "add", "doc.txt")
    git(repo, "commit", "-qm", "a doc showing markers")
    info = wt.create(repo, "s1", "docs", worktrees_dir())
    (Path(info.path) / "doc.txt").write_text(marker_doc + "more\n")
    assert wt.leftover_conflicts(info) == ()
    (Path(info.path) / "fixture.txt").write_text(marker_doc)
    assert wt.leftover_conflicts(info) == ("fixture.txt",)
    (Path(info.path) / ".gitattributes").write_text("fixture.txt conflict-marker-size=32\n")
    assert wt.leftover_conflicts(info) == ()


def test_a_worktree_the_session_locked_is_discarded_whole(repo):
    """A `locked` file the session wrote in its admin folder kept the branch and the worktree's
    entry while discard said it removed them."""
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    admin = Path(git(Path(info.path), "rev-parse", "--absolute-git-dir").strip())
    (admin / "locked").write_text("mine\n")
    assert "discarded" in wt.discard(info)
    assert info.branch not in git(repo, "branch", "--list") and info.path not in git(repo, "worktree", "list")
    assert not Path(info.path).exists()


def test_a_merge_into_a_base_branch_not_checked_out_deletes_the_branch_too(repo, capsys):
    """A session started on `feature`, merged while `main` is checked out: the merge went into
    `feature`, but the session's branch stayed (``git branch -d`` asks HEAD, not the base), was
    then listed as a kept branch, and a second merge brought feature's work into main."""
    git(repo, "checkout", "-q", "-b", "feature")
    info = wt.create(repo, "s1", "fix add on feature", worktrees_dir())
    assert info.base_branch == "feature"
    fixed(info)
    git(repo, "checkout", "-q", "main")
    main_before = git(repo, "rev-parse", "main").strip()
    assert main(["worktrees", "merge", "s1"]) == 0
    assert "into feature" in capsys.readouterr().out
    assert "a + b" in git(repo, "show", "feature:calc.py")
    assert info.branch not in git(repo, "branch", "--list")
    assert wt.list_kept(worktrees_dir()) == [] and main(["worktrees"]) == 0
    assert "s1" not in capsys.readouterr().out
    assert git(repo, "rev-parse", "main").strip() == main_before


def test_a_session_of_another_repository_says_which_in_the_list_and_before_a_merge(repo, tmp_path, capsys,
                                                                                  monkeypatch):
    """Typed in repo A, `cockpit worktrees` listed B's sessions "on main" as if A's, and `merge`
    of one landed in B's main with nothing naming B."""
    other = make_repo(tmp_path / "other", {"calc.py": CALC})
    mine = wt.create(repo, "s1", "fix add here", worktrees_dir())
    theirs = wt.create(other, "s2", "fix add there", worktrees_dir())
    fixed(mine)
    fixed(theirs)
    monkeypatch.chdir(repo)
    assert main(["worktrees"]) == 0
    out = capsys.readouterr().out
    real = str(Path(theirs.repo).resolve())
    assert f"on main in {real}" in out or f"on main in {theirs.repo}" in out
    assert out.count(" in /") == 1  # this repository's own row names none
    assert main(["worktrees", "merge", "s2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"session s2 is a session in {theirs.repo}\n") and "into main" in out
    assert "a + b" in (other / "calc.py").read_text() and "a - b" in (repo / "calc.py").read_text()
    assert main(["worktrees", "merge", "s1"]) == 0
    assert "is a session in" not in capsys.readouterr().out


def test_the_diff_names_a_symbolic_links_target_and_non_ascii_names_as_they_are(repo, tmp_path, capsys):
    """A link to /etc/passwd the session added showed as `A link-out +1 -0`, like a text file (a
    merge puts it in the user's checkout); a name that is not ASCII was quoted git-style in the
    patch header (`"b/spaced name \\303\\274.txt"`) while the file list said `spaced name ü.txt`."""
    info = wt.create(repo, "s1", "links", worktrees_dir())
    os.symlink("/etc/passwd", Path(info.path) / "link-out")
    (Path(info.path) / "spaced name ü.txt").write_text("x\n")
    diff = wt.diff(info)
    link = next(f for f in diff.files if f.path == "link-out")
    assert link.link == "/etc/passwd" and next(f for f in diff.files if f.path != "link-out").link == ""
    assert main(["worktrees", "diff", "s1"]) == 0
    out = capsys.readouterr().out
    assert "A link-out  +1 -0  → /etc/passwd (a symbolic link)" in out
    assert "+++ b/spaced name ü.txt" in out and "\\303" not in out
    from cockpit import wire

    again = wire.diff_from_json({"files": [{**wire.to_plain(link), "a key of a newer server": 1}]})
    assert again.files[0].link == "/etc/passwd"


def test_an_empty_merge_is_reported_not_committed(repo):
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b"))  # the same change, made on main
    git(repo, "commit", "-q", "-am", "same fix")
    head = git(repo, "rev-parse", "main").strip()
    res = wt.merge(info, "m")
    assert not res.ok and "nothing new to merge" in res.message and "same change" in res.message
    assert git(repo, "rev-parse", "main").strip() == head
    info2 = wt.create(repo, "s2", "noop", worktrees_dir())
    git(info2.path, "merge", "-q", "main")  # only main's commits: nothing of its own
    git(repo, "commit", "-q", "--allow-empty", "-m", "later")
    res = wt.merge(info2, "m")
    assert not res.ok and ("no changes to merge" in res.message or "nothing new" in res.message)


async def test_conflict_sent_back_to_the_session_then_the_merge_succeeds(api, repo, tmp_path):
    api.script(
        edit_calc(),
        Reply("Fixed add."),
        # the follow-up naming calc.py: merge main, resolve, commit
        Reply("", [ToolUse("bash", {"command": "git add -A && git commit -qm 'fix add'; git merge main; "
                                               "printf 'def add(a, b):\\n    return a + b\\n' > calc.py && "
                                               "git add calc.py && git commit -qm 'merge main' && git status --short"})]),
        Reply("Merged main into my branch and resolved calc.py."),
    )
    mgr, s = await fixed_then_main_moved(api, repo, tmp_path)
    before = tree_digest(repo)
    res = await mgr.review(s.id, "merge")
    assert not res.ok and "conflict in calc.py" in res.message and tree_digest(repo) == before
    back = await mgr.review(s.id, "send-back")
    assert back.ok and back.action == "send-back" and "calc.py" in back.message
    assert await mgr.wait_idle(timeout=30)
    followup = api.message_requests[2]["messages"][-1]["content"]
    text = followup if isinstance(followup, str) else " ".join(b.get("text", "") for b in followup)
    assert "calc.py" in text and "git merge main" in text
    assert s.status == S.WAITING, s.detail
    res = await mgr.review(s.id, "merge")
    assert res.ok, res.message
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    await mgr.aclose()


async def test_a_merge_the_session_claimed_but_left_in_conflict_is_sent_back_to_resolve(api, repo, tmp_path):
    """A model that answers "merged" too early: its worktree holds the conflict. Merge is refused
    (main untouched) and send-back gives the session a follow-up naming the file to resolve."""
    api.script(
        edit_calc(),
        Reply("Fixed add."),
        Reply("", [ToolUse("bash", {"command": "git add -A && git commit -qm 'fix add'; git merge main; "
                                               "git status --short"})]),
        Reply("I merged main."),  # it did not resolve anything
        Reply("Resolved."),
    )
    mgr, s = await fixed_then_main_moved(api, repo, tmp_path)
    assert not (await mgr.review(s.id, "merge")).ok
    assert (await mgr.review(s.id, "send-back")).ok
    assert await mgr.wait_idle(timeout=30)
    head = git(repo, "rev-parse", "main").strip()
    res = await mgr.review(s.id, "merge")
    assert not res.ok and "unresolved conflicts in calc.py" in res.message
    assert git(repo, "rev-parse", "main").strip() == head
    back = await mgr.review(s.id, "send-back")
    assert back.ok and "resolve what is left unresolved in calc.py" in back.message, back.message
    assert await mgr.wait_idle(timeout=30)
    followup = api.message_requests[-1]["messages"][-1]["content"]
    text = followup if isinstance(followup, str) else " ".join(b.get("text", "") for b in followup)
    assert "calc.py" in text and "conflict marker" in text
    await mgr.aclose()


async def test_a_send_back_that_resumes_an_ended_session_says_both_ids_and_a_review_ends_both(api, repo,
                                                                                                  tmp_path):
    api.script(
        edit_calc(),
        Reply("Fixed add."),
        Reply("On it."),  # the resumed session's answer to the follow-up
    )
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions", interactive=False)
    s = await mgr.spawn(SpawnSpec("fix add", workspace=repo))
    assert await mgr.wait_idle(timeout=30) and s.status == S.DONE
    (repo / "calc.py").write_text(CALC.replace("a - b", "b + a  # fixed on main"))
    git(repo, "commit", "-q", "-am", "a fix on main")
    back = await mgr.review(s.id, "send-back")
    resumed = next(x for x in mgr.sessions if x.id != s.id)
    assert back.ok and back.message.startswith(f"sent back to session {s.id} (resumed as {resumed.id}; "
                                               f"review it as {s.id}): merge main")
    assert await mgr.wait_idle(timeout=30) and resumed.status == S.WAITING
    gone = await mgr.review(s.id, "discard")  # by the first id: the resumed session goes with its worktree
    assert gone.ok and not Path(s.worktree.path).exists()
    assert resumed.status.is_final  # it was left waiting in a worktree that is gone
    await mgr.aclose()


async def test_a_kept_branch_of_a_session_still_waiting_is_merged_through_the_runtime(api, repo, tmp_path):
    api.script(edit_calc(), Reply("Fixed add."))
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions")
    s = await mgr.spawn(SpawnSpec("fix add", workspace=repo))
    assert await mgr.wait_idle(timeout=30) and s.status == S.WAITING
    wt.keep(s.worktree, "kept by hand")  # as `cockpit worktrees keep --no-server` does, the session waiting
    res = await mgr.review(s.id, "merge")
    assert res.ok, res.message
    assert "a + b" in (repo / "calc.py").read_text() and s.status.is_final
    await mgr.aclose()


async def test_check_through_the_manager_reports_pass_and_fail(api, repo, tmp_path):
    api.script(Reply("", [ToolUse(EDIT, {"command": "create", "path": "x.py", "file_text": "x = 1\n"})]),
               Reply("Done."))
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions", check_command="python3 test_calc.py",
                   sandbox=False)
    s = await mgr.spawn(SpawnSpec("add x", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    res = await mgr.review(s.id, "check")
    assert res.action == "check" and not res.ok and "add is wrong" in res.message
    fixed(s.worktree)
    res = await mgr.review(s.id, "check")
    assert res.ok and "check passed" in res.message
    draft = await mgr.draft_pull_request(s.id)
    assert "check passed" in draft.body and "add x" in draft.body and draft.title == "add x"
    assert "## What the session did\n\nDone." in draft.body  # waiting, not ended: its last answer
    await mgr.aclose()


# -- kept branches --------------------------------------------------------------------------------
async def test_a_kept_branch_is_listed_after_the_session_and_a_new_manager_then_merged(api, repo, tmp_path,
                                                                                        capsys):
    api.script(edit_calc(), Reply("Fixed."))
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions")
    s = await mgr.spawn(SpawnSpec("fix add", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    assert (await mgr.review(s.id, "keep")).ok
    branch = s.worktree.branch
    await mgr.aclose()
    mgr2 = make_mgr(api, tmp_path)  # as after a server restart: only what is on disk
    await mgr2.aclose()
    git(repo, "commit", "-q", "--allow-empty", "-m", "later on main")
    assert main(["worktrees"]) == 0
    out = capsys.readouterr().out
    assert branch in out and "kept branch, 1 ahead / 1 behind, 1 file +1 -1" in out and "(no worktree)" in out
    assert main(["worktrees", "--json"]) == 0
    import json

    kept = json.loads(capsys.readouterr().out)["kept"]
    assert [k["branch"] for k in kept] == [branch] and kept[0]["ahead"] == 1
    assert main(["worktrees", "diff", s.id]) == 0
    assert "+    return a + b" in capsys.readouterr().out
    assert main(["worktrees", "merge", s.id]) == 0
    assert "merged" in capsys.readouterr().out and "a + b" in (repo / "calc.py").read_text()
    assert branch not in git(repo, "branch", "--list")
    assert main(["worktrees"]) == 0 and "no session worktrees" in capsys.readouterr().out


async def test_a_second_merge_says_the_change_was_merged_already(api, repo, tmp_path, capsys):
    """Merging twice said "no session worktree 's1'" while `cockpit ls` said "merged into main"."""
    api.script(edit_calc(), Reply("Fixed."))
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions")
    s = await mgr.spawn(SpawnSpec("fix add", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    merged = await mgr.review(s.id, "merge")
    assert merged.ok
    await mgr.aclose()
    capsys.readouterr()
    assert main(["worktrees", "merge", s.id]) == 2
    assert f"session {s.id}'s change was dealt with already — {merged.message}" in capsys.readouterr().err


def test_a_cockpit_branch_with_no_record_is_listed_too(repo, capsys):
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    wt.keep(info, "kept")
    wt.kept_path(info).unlink()  # a record lost: the branch is still found in the repository
    info2 = wt.create(repo, "s2", "other", worktrees_dir())  # the repository is known by its worktree
    assert [k.branch for k in wt.list_kept(worktrees_dir())] == [info.branch]
    assert main(["worktrees", "discard", "s1", "--yes"]) == 0
    assert info.branch not in git(repo, "branch", "--list") and Path(info2.path).is_dir()


# -- push and pull request ------------------------------------------------------------------------




def test_pr_with_gh_gets_the_task_and_the_check_result(repo, tmp_path, monkeypatch, capsys):
    import json

    remote = with_remote(repo, tmp_path)
    record = fake_gh(tmp_path, monkeypatch)
    config_path().write_text('check_command = "python3 test_calc.py"\n')
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    assert main(["worktrees", "pr", "s1", "--check"]) == 0
    assert "pull request opened: https://github.com/acme/calc/pull/7" in capsys.readouterr().out
    args = json.loads(record.read_text())
    assert args[:2] == ["pr", "create"]
    body = args[args.index("--body") + 1]
    assert args[args.index("--title") + 1] == "fix add" and args[args.index("--head") + 1] == info.branch
    assert "## Task\n\nfix add" in body and "check passed: `python3 test_calc.py`" in body
    assert git(remote, "rev-parse", info.branch).strip() == git(repo, "rev-parse", info.branch).strip()


def test_pr_without_gh_pushes_and_gives_the_compare_url_or_says_pushed(repo, tmp_path, monkeypatch, capsys):
    remote = with_remote(repo, tmp_path)
    monkeypatch.setattr("shutil.which", lambda name: None)
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    assert main(["worktrees", "pr", "s1"]) == 0
    assert f"pushed {info.branch} to origin ({remote})" in capsys.readouterr().out
    assert "a + b" in git(remote, "show", f"{info.branch}:calc.py")
    assert wt.compare_url("git@github.com:acme/calc.git", "main", "cockpit/s1/x") == \
        "https://github.com/acme/calc/compare/main...cockpit/s1/x?expand=1"
    assert wt.compare_url("https://github.com/acme/calc", "main", "b") == \
        "https://github.com/acme/calc/compare/main...b?expand=1"
    assert wt.compare_url("https://gitlab.com/acme/calc.git", "main", "b") is None


def test_pr_asks_as_merge_does_for_protected_paths_and_a_failed_check(repo, tmp_path, monkeypatch, capsys):
    """`pr` pushed a change to .github/workflows (it runs on the forge's CI with the repository's
    secrets) where `merge` refused it without --yes; and `pr --check` opened the pull request with
    rc 0 when the check failed, where `merge --check` refused."""
    remote = with_remote(repo, tmp_path)
    record = fake_gh(tmp_path, monkeypatch)
    info = wt.create(repo, "s1", "add ci", worktrees_dir())
    fixed(info)
    (Path(info.path) / ".github" / "workflows").mkdir(parents=True)
    (Path(info.path) / ".github" / "workflows" / "ci.yml").write_text("on: push\njobs: {}\n")
    assert main(["worktrees", "pr", "s1"]) == 1  # not a terminal, no --yes
    out = capsys.readouterr().out
    assert ".github/workflows/ci.yml" in out and "--yes pushes anyway" in out and "not pushed" in out
    assert not record.exists() and info.branch not in git(remote, "branch", "--list")
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["worktrees", "pr", "s1"]) == 1 and not record.exists()
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert main(["worktrees", "pr", "s1"]) == 0 and record.exists()
    assert "pull request opened" in capsys.readouterr().out
    import json

    body = json.loads(record.read_text())[json.loads(record.read_text()).index("--body") + 1]
    assert "## ⚠ Protected paths" in body and "- `.github/workflows/ci.yml` — .github" in body  # the forge's reviewers see it

    record.unlink()
    config_path().write_text('check_command = "python3 test_calc.py"\n')
    info2 = wt.create(repo, "s2", "other", worktrees_dir())
    (Path(info2.path) / "other.py").write_text("x = 1\n")  # add is still wrong: the check fails
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["worktrees", "pr", "s2", "--check"]) == 1
    out = capsys.readouterr().out
    assert "add is wrong" in out and "not pushed (the check did not pass; --yes pushes anyway)" in out
    assert not record.exists() and info2.branch not in git(remote, "branch", "--list")
    assert main(["worktrees", "pr", "s2", "--check", "--yes"]) == 0
    assert "pushing anyway (--yes)" in capsys.readouterr().out and record.exists()


def test_pr_again_updates_the_pull_request_already_open(repo, tmp_path, monkeypatch, capsys):
    """A second `pr` (after more work) said "gh pr create failed: <url>", rc 1: gh refuses a
    second pull request for the branch, and the push has already updated the open one."""
    remote = with_remote(repo, tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text("#!/bin/sh\necho 'a pull request for branch \"x\" into branch \"main\" already exists:' >&2\n"
                  "echo 'https://github.com/acme/calc/pull/7' >&2\nexit 1\n")
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    assert main(["worktrees", "pr", "s1"]) == 0
    out = capsys.readouterr().out
    assert "the pull request already open for it has the change: https://github.com/acme/calc/pull/7" in out
    assert "a + b" in git(remote, "show", f"{info.branch}:calc.py")


def test_a_discard_after_a_push_says_the_pushed_branch_stays(repo, tmp_path, monkeypatch, capsys):
    """Discard after `pr` said "discarded … and its worktree" (the app: "the changes are deleted"):
    the pushed branch and its pull request were left, unmentioned."""
    remote = with_remote(repo, tmp_path)
    fake_gh(tmp_path, monkeypatch)
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    assert main(["worktrees", "pr", "s1"]) == 0
    capsys.readouterr()
    assert main(["worktrees", "discard", "s1", "--yes"]) == 0
    out = capsys.readouterr().out
    assert f"the branch pushed to origin/{info.branch} stays there, with any pull request opened for it" in out
    assert f"git push origin --delete {info.branch}" in out
    assert info.branch in git(remote, "branch", "--list")  # not this machine's to delete
    other = wt.create(repo, "s2", "other", worktrees_dir())
    fixed(other)
    assert main(["worktrees", "discard", "s2", "--yes"]) == 0
    assert "pushed" not in capsys.readouterr().out


def test_pr_without_a_remote_says_so(repo, capsys):
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    fixed(info)
    assert main(["worktrees", "pr", "s1"]) == 1
    assert "no remote" in capsys.readouterr().out


def test_a_conventional_commits_note_shapes_the_merge_message(repo, capsys):
    (repo / "notes").mkdir()
    (repo / "notes" / "commit-style.md").write_text("We write Conventional Commits.\n")
    git(repo, "add", "notes")
    git(repo, "commit", "-q", "-m", "notes")
    info = wt.create(repo, "s1", "Fix add in calc", worktrees_dir())
    fixed(info)
    (repo / "README").write_text("diverge\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "diverge")
    assert main(["worktrees", "merge", "s1"]) == 0
    assert git(repo, "log", "-1", "--format=%s").strip() == "fix: fix add in calc"
    info2 = wt.create(repo, "s2", "add a multiply function", worktrees_dir())
    assert ship.merge_message(info2, repo / "notes").startswith("feat: add a multiply function")


@pytest.mark.parametrize("style", ["conventional", "none"])
def test_a_fast_forward_gives_main_a_whole_subject_the_task_and_the_session_as_a_trailer(repo, style):
    """The usual merge fast-forwards: what lands on main is Cockpit's own commit of the session's
    work. Its subject is the task (Conventional Commits when a note says so), cut at a word; the
    whole task is its body; the session id is a trailer, not the subject."""
    if style == "conventional":
        (repo / "notes").mkdir()
        (repo / "notes" / "commit-style.md").write_text("We write Conventional Commits.\n")
        git(repo, "add", "notes")
        git(repo, "commit", "-q", "-m", "notes")
    task = ("Fix Cart.total: apply the discount once on the subtotal and round half-up to cents, "
            "never per line\n\nSee the money-decimal note.")
    info = wt.create(repo, "s1", task, worktrees_dir())
    fixed(info)
    assert main(["worktrees", "merge", "s1"]) == 0
    subject, body = git(repo, "log", "-1", "--format=%s"), git(repo, "log", "-1", "--format=%b")
    assert git(repo, "log", "-1", "--format=%P").strip().count(" ") == 0  # a fast-forward: the session's commit
    want = "fix: fix Cart.total: apply the discount once" if style == "conventional" else "Fix Cart.total: apply"
    assert subject.startswith(want) and subject.strip().endswith("…") and len(subject.strip()) <= 72, subject
    assert "s1" not in subject and "cockpit session" not in subject
    assert "never per line" in body and "See the money-decimal note." in body
    assert body.strip().endswith("Cockpit-Session: s1")
    short = wt.create(repo, "s2", "add a multiply function", worktrees_dir())
    assert ship.commit_message(short, None) == "add a multiply function\n\nCockpit-Session: s2"


def test_the_commit_names_only_the_notes_given_not_those_the_block_only_listed(repo, tmp_path):
    """The merge commit said "Notes given: staging-stack, error-format", counting a note the block
    only named under "may be relevant" (score 0.01) as given."""
    from cockpit import events as ev
    from cockpit.runtime.transcript import TranscriptWriter

    transcript = tmp_path / "t.jsonl"
    w = TranscriptWriter(transcript)
    w.write(ev.SessionSpawned("s1", "fix add", "m", str(repo), str(transcript), True))
    w.write(ev.Preseeded("s1", (ev.InjectedNote("staging-stack", 0.54, True),
                                ev.InjectedNote("error-format", 0.01, False, kind="index")), 40, "block"))
    w.close()
    info = replace(wt.create(repo, "s1", "fix add", worktrees_dir()), transcript=str(transcript))
    message = ship.commit_message(info, None)
    assert "Notes given: staging-stack" in message and "error-format" not in message


# -- where a session will work --------------------------------------------------------------------
async def test_a_bare_repository_is_refused(api, tmp_path, repo):
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert wt.placement_of(bare)[0] == "refused" and "bare" in wt.placement_of(bare)[1]
    assert wt.placement_of(repo)[0] == "worktree"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert wt.placement_of(plain) == ("in place", "in place: not a git repository (edits your files directly)")
    unborn = tmp_path / "unborn"
    git(tmp_path, "init", "-q", str(unborn))  # (the spawn dialog called it "not a git repository")
    assert wt.placement_of(unborn) == ("in place", "in place: a git repository with no commit yet "
                                                   "(edits your files directly)")
    mgr = make_mgr(api, tmp_path)
    with pytest.raises(wt.WorktreeError, match="bare git repository"):
        await mgr.spawn(SpawnSpec("fix", workspace=bare))
    await mgr.aclose()


def test_a_worktree_creation_failing_half_way_leaves_no_branch(repo, monkeypatch):
    real = wt.git

    def failing(*args, **kw):
        if args[:2] == ("worktree", "add"):
            real(*args, **kw)  # the branch and the folder exist; then the disk is full
            raise wt.WorktreeError("git worktree failed: No space left on device")
        return real(*args, **kw)

    monkeypatch.setattr(wt, "git", failing)
    with pytest.raises(wt.WorktreeError, match="No space"):
        wt.create(repo, "s1", "fix add", worktrees_dir())
    monkeypatch.setattr(wt, "git", real)
    assert "cockpit/" not in git(repo, "branch", "--list")
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not (wt.repo_folder(worktrees_dir(), repo.resolve()) / "s1").exists()


def test_a_full_disk_after_the_checkout_leaves_no_branch_either(repo, monkeypatch):
    import errno

    def full(_info):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(wt, "write_meta", full)
    with pytest.raises(wt.WorktreeError, match="No space left"):
        wt.create(repo, "s2", "fix add", worktrees_dir())
    assert "cockpit/" not in git(repo, "branch", "--list")
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    folder = wt.repo_folder(worktrees_dir(), repo.resolve())
    assert not (folder / "s2").exists() and not (folder / "s2.json").exists()


def test_shell_opens_in_the_worktree(repo, monkeypatch, tmp_path):
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    out = tmp_path / "pwd"
    monkeypatch.setenv("SHELL", "/bin/sh")
    ran = []
    import subprocess

    monkeypatch.setattr(subprocess, "call", lambda argv, cwd, env=None: ran.append((argv, cwd)) or 0)
    assert main(["shell", "s1"]) == 0
    assert ran == [(["/bin/sh"], info.cwd)]
    monkeypatch.setenv("EDITOR", "nano -w")
    assert main(["shell", "s1", "--edit", "calc.py"]) == 0
    assert ran[-1] == (["nano", "-w", "calc.py"], info.cwd)
    del out
    asyncio.get_event_loop_policy()  # (keeps the asyncio import used by the async tests' fixtures)


def test_no_shell_opens_over_a_git_repository_the_session_planted(repo, monkeypatch, capsys, tmp_path):
    """A session turns a folder (or an empty submodule folder) into a repository of its own with
    core.fsmonitor set: the user's prompt or `git status` inside it would run that unconfined. The
    shell is not opened until it is removed (or --force) — a .git folder, a .git file pointing into
    the session's own (writable) admin folder, a bare repository's shape; the shell's git runs no
    fsmonitor and no bare repository it only finds."""
    import subprocess

    lib = make_repo(tmp_path / "lib", {"lib.txt": "lib\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "a submodule")
    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    tree = Path(info.path)
    assert wt.planted_repos(tree) == []
    admin = Path(git(tree, "rev-parse", "--absolute-git-dir").strip())
    (tree / "vendor" / "lib").rmdir()
    (admin / "modules").mkdir()
    git(tree, "init", "-q", f"--separate-git-dir={admin / 'modules' / 'lib'}", "vendor/lib")  # the bypass
    for where in ("tools/x", "vendor/lib/inner"):
        (tree / where).mkdir(parents=True)
        git(tree / where, "init", "-q")
        git(tree / where, "config", "core.fsmonitor", "touch /tmp/never")
    git(tmp_path, "init", "-q", "--bare", str(tree / "docs" / "bare"))
    git(tmp_path, "init", "-q", str(admin / "plant"))  # a repository in the admin folder, reached by a link
    (tree / "linked").symlink_to(admin / "plant", target_is_directory=True)
    (tmp_path / "plain").mkdir()
    (tree / "elsewhere").symlink_to(tmp_path / "plain", target_is_directory=True)  # a plain folder: fine
    assert wt.planted_repos(tree) == ["docs/bare", "linked", "tools/x", "vendor/lib", "vendor/lib/inner"]
    ran = []
    monkeypatch.setattr(subprocess, "call", lambda argv, cwd, env=None: ran.append((argv, cwd, env)) or 0)
    assert main(["shell", "s1"]) != 0
    err = capsys.readouterr().err
    assert "git repositories of its own at docs/bare, linked, tools/x, vendor/lib, vendor/lib/inner" in err
    assert f"rm -rf {tree / 'docs' / 'bare'} {tree / 'linked'} {tree / 'tools' / 'x' / '.git'}" in err
    assert "cockpit shell --force s1" in err and ran == []
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.name")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "Me")
    assert main(["shell", "--force", "s1"]) == 0 and len(ran) == 1
    env = ran[0][2]
    assert env["GIT_CONFIG_COUNT"] == "6" and env["GIT_CONFIG_KEY_0"] == "user.name"
    assert (env["GIT_CONFIG_KEY_1"], env["GIT_CONFIG_VALUE_1"]) == ("core.fsmonitor", "false")
    assert (env["GIT_CONFIG_KEY_2"], env["GIT_CONFIG_VALUE_2"]) == ("safe.bareRepository", "explicit")
    assert (env["GIT_CONFIG_KEY_3"], env["GIT_CONFIG_VALUE_3"]) == ("diff.ignoreSubmodules", "all")
    monkeypatch.setattr(wt, "PLANTED_SCAN_MAX", 3)
    assert wt.planted_repos(tree)[-1] == "…"


def test_cockpit_shell_ends_a_live_sessions_jobs_through_the_server_first(repo, monkeypatch, capsys):
    """The session is the server's and waits for you: `quiesce` is asked for before the shell
    opens; while it works the shell is refused, saying why; --force opens it as it is."""
    import subprocess

    from cockpit import worktrees_cli
    from cockpit.server import client as server_client

    info = wt.create(repo, "s1", "fix add", worktrees_dir())
    calls: list[tuple] = []
    answer: dict = {"error": None}

    class FakeClient:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def call(self, method, **params):
            calls.append((method, params))
            if answer["error"]:
                raise server_client.RemoteError(2, answer["error"])
            return {}

    monkeypatch.setattr(worktrees_cli, "_server_rows", lambda asked_not_to=False: [("s1", "waiting for you", info.path)])
    monkeypatch.setattr(server_client, "BlockingClient", FakeClient)
    ran = []
    monkeypatch.setattr(subprocess, "call", lambda argv, cwd, env=None: ran.append(cwd) or 0)
    assert main(["shell", "s1"]) == 0
    assert calls == [("quiesce", {"id": "s1"})] and ran == [info.cwd]
    answer["error"] = "session s1 is working: wait until it waits for you"
    assert main(["shell", "s1"]) != 0
    assert "no shell opened: session s1 is working" in capsys.readouterr().err and len(ran) == 1
    calls.clear()
    assert main(["shell", "--force", "s1"]) == 0 and calls == [] and len(ran) == 2


# -- conflict radar -------------------------------------------------------------------------------
async def test_conflict_radar_two_sessions_editing_one_file(api, repo, tmp_path):
    from cockpit import events as ev
    from cockpit.tui.model import SessionView, overlaps
    from cockpit.tui.widgets.strip import changes_markup
    from cockpit.tui.widgets.totals import radar_markup

    def edit(new: str) -> list[Reply]:
        return [edit_calc(new), Reply("Done.")]

    api.script(*edit("a + b"), *edit("b + a"))
    mgr = make_mgr(api, tmp_path, permission_mode="bypassPermissions")
    sub = mgr.subscribe()
    one = await mgr.spawn(SpawnSpec("fix add", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    two = await mgr.spawn(SpawnSpec("fix add too", workspace=repo))
    assert await mgr.wait_idle(timeout=30)
    views: dict[str, SessionView] = {}
    while True:
        event = await asyncio.wait_for(sub.__anext__(), 10)
        views.setdefault(event.session_id, SessionView(event.session_id)).apply(event)
        if isinstance(event, ev.WorktreeChanged) and event.session_id == two.id:
            assert event.paths == ("calc.py",)
            break
    radar = overlaps(views)
    assert radar == {one.id: {"calc.py": [two.id]}, two.id: {"calc.py": [one.id]}}
    for sid, v in views.items():
        v.overlap = radar.get(sid, {})
    assert "⚠ 1 also in " + two.id in changes_markup(views[one.id])
    assert "calc.py changed by 2 sessions" in radar_markup(list(views.values()))
    assert (await mgr.review(one.id, "discard")).ok
    sub.close()
    await mgr.aclose()
