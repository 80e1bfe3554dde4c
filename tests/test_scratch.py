"""Scratch folders a killed process left behind are swept when the next one is made."""

from __future__ import annotations

import os
import subprocess
import sys

from cockpit.runtime import sandbox, scratch


def _made_by_a_process_that_is_gone(root) -> str:
    code = "import sys; from cockpit.runtime import sandbox; print(sandbox.session_tmp(sys.argv[1]))"
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_a_dead_process_folder_is_removed_when_the_next_is_made_and_nothing_else(tmp_path):
    dead = _made_by_a_process_that_is_gone(tmp_path)
    (open(os.path.join(dead, "work.txt"), "w")).close()
    parent = os.path.dirname(dead)
    mine = scratch.make(parent, "s-")  # a live process's folder (this one's)
    old_style = os.path.join(parent, "s-abcd1234")  # an older version's name: no process id
    os.mkdir(old_style)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    os.symlink(outside, os.path.join(parent, "s-999999999-link"))  # a link named like one
    other_prefix = os.path.join(parent, "p-999999999-x")
    os.mkdir(other_prefix)

    new = sandbox.session_tmp(tmp_path)

    assert os.path.basename(new).startswith(f"s-{os.getpid()}-")
    assert not os.path.exists(dead)
    assert all(os.path.isdir(p) for p in (mine, old_style, new, other_prefix))
    assert (outside / "keep.txt").exists() and os.path.islink(os.path.join(parent, "s-999999999-link"))
    assert oct(os.stat(new).st_mode & 0o777) == "0o700"


def test_sweep_keeps_a_live_process_folder(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        live = tmp_path / f"p-{child.pid}-abc"
        live.mkdir()
        assert scratch.sweep(tmp_path, "p-") == []
        assert live.is_dir()
    finally:
        child.communicate(b"")
    assert scratch.sweep(tmp_path, "p-") == [str(live)]
    assert not live.exists()
