"""Scratch folders a killed process left behind are swept when the next one is made — and only
those: never a live process's, nor one made under another boot or PID namespace."""

from __future__ import annotations

import os
import subprocess
import sys

from cockpit.runtime import sandbox, scratch


def _made_by_a_process_that_is_gone(root) -> str:
    code = ("import sys; from cockpit.runtime import sandbox; p = sandbox.session_tmp(sys.argv[1]); "
            "open(p + '.gitconfig', 'w').close(); print(p)")
    out = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_a_dead_process_folder_is_removed_when_the_next_is_made_and_nothing_else(tmp_path):
    dead = _made_by_a_process_that_is_gone(tmp_path)
    (open(os.path.join(dead, "work.txt"), "w")).close()
    parent = os.path.dirname(dead)
    mine = scratch.make(parent, "s-")  # a live process's folder (this one's)
    old_style = os.path.join(parent, "s-abcd1234")  # an older version's name: no process id
    elsewhere = os.path.join(parent, "s-999999999-0badc0de-x")  # a dead pid, but another namespace's
    os.mkdir(old_style)
    os.mkdir(elsewhere)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    link = os.path.join(parent, f"s-999999999-{scratch.where()}-link")  # a link named like one
    os.symlink(outside, link)
    other_prefix = os.path.join(parent, f"p-999999999-{scratch.where()}-x")
    os.mkdir(other_prefix)

    new = sandbox.session_tmp(tmp_path)

    assert os.path.basename(new).startswith(f"s-{os.getpid()}-{scratch.where()}-")
    assert not os.path.exists(dead) and not os.path.exists(dead + ".gitconfig")  # with its companion
    assert all(os.path.isdir(p) for p in (mine, old_style, elsewhere, new, other_prefix))
    assert (outside / "keep.txt").exists() and os.path.islink(link)
    assert oct(os.stat(new).st_mode & 0o777) == "0o700"


def test_sweep_keeps_a_live_process_folder(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        live = tmp_path / f"p-{child.pid}-{scratch.where()}-abc"
        live.mkdir()
        assert scratch.sweep(tmp_path, "p-") == []
        assert live.is_dir()
    finally:
        child.communicate(b"")
    assert scratch.sweep(tmp_path, "p-") == [str(live)]
    assert not live.exists()


def test_a_killed_servers_proxy_folder_goes_with_the_next_session_of_any_kind(tmp_path):
    code = "from cockpit.runtime import sandbox; print(sandbox.proxy_dir())"
    proxy = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert os.path.isdir(proxy)  # left by a process that is gone
    sandbox.session_tmp(tmp_path)  # a session with no proxy of its own
    assert not os.path.exists(proxy)


def test_the_maker_tag_names_this_boot_and_pid_namespace():
    assert len(scratch.where()) == 8 and scratch.where() == scratch.where()
    code = "from cockpit.runtime import scratch; print(scratch.where())"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == scratch.where()  # the same for every process here


def test_remove_takes_the_companion_file_too(tmp_path):
    folder = scratch.make(tmp_path, "s-")
    open(folder + ".gitconfig", "w").close()
    scratch.remove(folder)
    assert os.listdir(tmp_path) == []
