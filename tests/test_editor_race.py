"""The editor's writes (and reads) cannot be led out of the working tree by a folder swapped for a
symlink between the check (the edit's plan, shown for approval) and the write; a regular edit
is still atomic and keeps the file's line ends and mode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cockpit.runtime import workspace
from cockpit.runtime.tools import ToolRunner
from cockpit.runtime.workspace import PathRefused, read_regular

EDIT = "str_replace_based_edit_tool"
BODY = "print('beta')\n"


@pytest.fixture
async def runner(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "b.py").write_text(BODY)
    (ws / "a.txt").write_text(BODY)
    r = ToolRunner(ws, env={"PATH": "/usr/bin:/bin"}, bash_timeout=5)
    yield r
    await r.close()


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder outside the tree holding a twin of ``sub/b.py`` (so a followed write would pass the
    "unchanged since the plan" check)."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "b.py").write_text(BODY)
    return folder


def swap_for_symlink(folder: Path, target: Path) -> None:
    """What a session's shell can do between the approval and the write."""
    folder.rename(folder.with_name(folder.name + ".moved"))
    folder.symlink_to(target, target_is_directory=True)


def assert_untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["b.py"]
    assert (outside / "b.py").read_text() == BODY


EDITS = [
    {"command": "str_replace", "path": "sub/b.py", "old_str": "beta", "new_str": "pwned"},
    {"command": "insert", "path": "sub/b.py", "insert_line": 0, "insert_text": "import pwned\n"},
    {"command": "create", "path": "sub/b.py", "file_text": "pwned\n"},
    {"command": "create", "path": "sub/new.py", "file_text": "pwned\n"},
]


@pytest.mark.parametrize("data", EDITS, ids=lambda d: f"{d['command']}-{d['path']}")
async def test_a_folder_swapped_for_a_symlink_after_the_plan_is_refused(runner, outside, data):
    root = runner.workspace.root
    call = runner.prepare(EDIT, data)
    assert call.plan is not None
    swap_for_symlink(root / "sub", outside)
    out = await runner.execute(call)
    assert out.is_error and "refused: sub is a symlink now" in out.content, out.content
    assert_untouched(outside)
    assert (root / "sub.moved" / "b.py").read_text() == BODY


@pytest.mark.parametrize("depth", ["newdir/c.py", "newdir/deeper/c.py"])
async def test_create_into_a_new_folder_that_appears_as_a_symlink_is_refused(runner, outside, depth):
    root = runner.workspace.root
    call = runner.prepare(EDIT, {"command": "create", "path": depth, "file_text": "pwned\n"})
    assert call.plan is not None and not (root / "newdir").exists()
    (root / "newdir").symlink_to(outside, target_is_directory=True)
    out = await runner.execute(call)
    assert out.is_error and "refused: newdir is a symlink now" in out.content, out.content
    assert_untouched(outside)


async def test_a_file_swapped_for_a_symlink_after_the_plan_is_refused(runner, outside):
    root = runner.workspace.root
    call = runner.prepare(EDIT, {"command": "str_replace", "path": "a.txt", "old_str": "beta", "new_str": "pwned"})
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(outside / "b.py")
    out = await runner.execute(call)
    assert out.is_error and "refused: a.txt became a symlink" in out.content, out.content
    assert_untouched(outside)
    assert (root / "a.txt").is_symlink()


def test_a_read_through_a_swapped_folder_is_refused(runner, outside):
    root = runner.workspace.root
    path = runner.workspace.resolve("sub/b.py")
    swap_for_symlink(root / "sub", outside)
    with pytest.raises(PathRefused, match="sub is a symlink now"):
        read_regular(root, path, 1000)


async def test_create_still_makes_missing_folders_inside_the_tree(runner):
    root = runner.workspace.root
    out = await runner.run(EDIT, {"command": "create", "path": "x/y/z.py", "file_text": "z = 1\n"})
    assert not out.is_error and (root / "x" / "y" / "z.py").read_text() == "z = 1\n"


async def test_an_edit_keeps_line_ends_and_mode_and_replaces_the_file_whole(runner):
    root = runner.workspace.root
    target = root / "run.sh"
    target.write_bytes(b"#!/bin/sh\r\necho one\r\n")
    target.chmod(0o755)
    os.link(target, root / "old-copy")  # a reader holding the old file keeps the old content, whole
    out = await runner.run(EDIT, {"command": "str_replace", "path": "run.sh", "old_str": "one", "new_str": "two"})
    assert not out.is_error, out.content
    assert target.read_bytes() == b"#!/bin/sh\r\necho two\r\n"
    assert (root / "old-copy").read_bytes() == b"#!/bin/sh\r\necho one\r\n"  # replaced by a rename, not rewritten
    assert target.stat().st_mode & 0o7777 == 0o755
    assert not [p for p in root.iterdir() if p.name.endswith(".cockpit-tmp")]


async def test_a_write_that_fails_leaves_the_file_as_it_was_and_no_temp_file(runner, monkeypatch):
    root = runner.workspace.root

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(workspace.os, "fsync", full_disk)
    out = await runner.run(EDIT, {"command": "str_replace", "path": "a.txt", "old_str": "beta", "new_str": "gamma"})
    assert out.is_error and "No space left on device" in out.content
    assert (root / "a.txt").read_text() == BODY
    assert sorted(p.name for p in root.iterdir()) == ["a.txt", "sub"]


async def test_a_new_file_gets_the_usual_permissions(runner):
    root = runner.workspace.root
    old = os.umask(0o022)
    try:
        out = await runner.run(EDIT, {"command": "create", "path": "n.txt", "file_text": "n\n"})
    finally:
        os.umask(old)
    assert not out.is_error and (root / "n.txt").stat().st_mode & 0o777 == 0o644
