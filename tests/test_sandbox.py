"""The OS sandbox around a session's shell (bubblewrap): what a command inside can and cannot do.

Each test runs real commands in a real session worktree through :class:`BashSession` with the
sandbox the session would get, and checks the effect on disk or on the host. CI installs
bubblewrap (``.ci/run``); where it cannot run these tests skip and say why.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from cockpit.runtime import sandbox as sb
from cockpit.runtime import worktree as wt
from cockpit.runtime.bash import BashSession, session_env
from cockpit.runtime.config import worktrees_dir
from tests.helpers import FETCH_THROUGH_PROXY, HELLO, git, make_repo

AVAIL = sb.detect()
pytestmark = pytest.mark.skipif(AVAIL.backend is None, reason=f"no sandbox here: {AVAIL.reason}")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME with secrets in it, so hiding them is observable."""
    h = tmp_path / "home"
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    (h / ".aws").mkdir()
    (h / ".aws" / "credentials").write_text("aws_secret=AWS-SECRET\n")
    (h / ".netrc").write_text("machine x password NETRC-SECRET\n")
    monkeypatch.setenv("HOME", str(h))
    return h


@pytest.fixture
async def boxed(tmp_path, home):
    """(worktree info, a sandboxed shell in it, its confinement)."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    info = await asyncio.to_thread(wt.create, repo, "s1", "try the sandbox", worktrees_dir())
    tmp = sb.session_tmp()
    conf = await asyncio.to_thread(sb.confinement_for, info.path, info.cwd, tmp, sb.SandboxSettings(),
                                   info.branch)
    backend = AVAIL.backend
    assert backend is not None
    shell = BashSession(info.cwd, session_env(dict(os.environ)), timeout=30,
                        wrap=lambda argv: backend.command(conf, argv))
    yield info, shell, conf
    await shell.close()


async def test_the_tree_and_tmpdir_are_writable_the_rest_is_not(boxed, tmp_path):
    info, shell, conf = boxed
    r = await shell.run("echo made > new.txt && cat new.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"")
    assert r.exit_code == 0 and r.output.split() == ["made", "t"]
    assert (Path(info.path) / "new.txt").read_text() == "made\n"
    outside = tmp_path / "repo" / "evil.txt"  # the user's own checkout
    r = await shell.run(f"echo x > {outside}")
    assert r.exit_code != 0 and "Read-only file system" in r.output and not outside.exists()
    r = await shell.run("touch /usr/local/evil-cockpit || touch /etc/evil-cockpit")
    assert r.exit_code != 0 and not Path("/etc/evil-cockpit").exists()


async def test_secrets_are_hidden(boxed, home):
    _, shell, _ = boxed
    r = await shell.run(f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials {home}/.netrc; ls -a {home}/.ssh")
    assert "PRIVATE-KEY-MATERIAL" not in r.output and "AWS-SECRET" not in r.output
    assert "NETRC-SECRET" not in r.output
    assert (home / ".ssh" / "id_ed25519").read_text() == "PRIVATE-KEY-MATERIAL\n"  # outside: untouched


async def test_run_as_root_the_hosts_own_keys_are_hidden(boxed):
    """Root inside (Cockpit run by root) has no capability but still owns root's 0600 files: the
    ssh host keys (and the other ROOT_SECRETS) are hidden."""
    import glob

    keys = glob.glob("/etc/ssh/ssh_host_*_key")
    if os.geteuid() != 0 or not keys:
        pytest.skip("not root, or no ssh host key here")
    _, shell, _ = boxed
    r = await shell.run(f"head -c 40 {keys[0]}")
    assert "PRIVATE KEY" not in r.output, r.output


async def test_the_server_socket_and_other_sessions_are_hidden(boxed, tmp_path):
    from cockpit.server import paths

    info, shell, _ = boxed
    sock_path = paths.socket_path()
    sock_path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(1)
    other = await asyncio.to_thread(wt.create, tmp_path / "repo", "s2", "another session", worktrees_dir())
    (Path(other.path) / "theirs.txt").write_text("OTHER-SESSION\n")
    try:
        r = await shell.run(f"python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{sock_path}\")'"
                            f" && echo CONNECTED; cat {other.path}/theirs.txt; ls {Path(other.path).parent}")
        assert "CONNECTED" not in r.output and "OTHER-SESSION" not in r.output
        assert "s2" not in r.output.split()
    finally:
        server.close()


async def test_a_new_pid_namespace_hides_the_server_and_setsid_dies_with_the_session(boxed):
    _, shell, _ = boxed
    marker = "COCKPIT_TEST_MARKER_PID"
    os.environ[marker] = "visible-outside-only"
    try:
        r = await shell.run("cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c COCKPIT_TEST_MARKER_PID; "
                            "ls /proc | grep -c '^[0-9]'")
        found, count = r.output.split()[:2]
        assert found == "0" and int(count) < 10  # only the session's own few processes
        r = await shell.run("setsid sleep 4242.5 >/dev/null 2>&1 & echo started")
        assert "started" in r.output
        for _ in range(200):  # the background job execs sleep in its own time
            if _running("4242.5"):
                break
            await asyncio.sleep(0.02)
        assert _running("4242.5")
    finally:
        del os.environ[marker]
    await shell.close()
    for _ in range(200):  # wait on the condition: the namespace's processes die with it
        if not _running("4242.5"):
            break
        await asyncio.sleep(0.05)
    assert not _running("4242.5")


def _running(needle: str) -> bool:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if needle.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return True
            except OSError:
                pass
    return False


async def test_network_is_off_inside(boxed):
    _, shell, _ = boxed
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        r = await shell.run(f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3)' "
                            "&& echo CONNECTED")
        assert "CONNECTED" not in r.output and r.exit_code != 0
    finally:
        server.close()


async def test_git_commits_on_its_own_branch_only(boxed, tmp_path):
    info, shell, _ = boxed
    repo = tmp_path / "repo"
    main_before = git(repo, "rev-parse", "main").strip()
    r = await shell.run("echo two >> a.txt && git add -A && git -c user.name=s -c user.email=s@x commit -qm work "
                        "&& git log --oneline | wc -l")
    assert r.exit_code == 0 and r.output.strip() == "2"
    # its objects are in its own store until Cockpit takes them in, each hash checked
    assert await asyncio.to_thread(wt.absorb_objects, info) >= 3
    assert git(repo, "log", "--oneline", info.branch).count("\n") == 2  # the commit is on its branch
    r = await shell.run("git update-ref refs/heads/main HEAD")
    assert r.exit_code != 0
    r = await shell.run("git config core.hooksPath .evil; git config --get core.hooksPath || echo unset")
    assert "unset" in r.output
    assert git(repo, "rev-parse", "main").strip() == main_before
    r = await shell.run(f"echo evil > {repo}/.git/hooks/post-merge")
    assert r.exit_code != 0 and not (repo / ".git" / "hooks" / "post-merge").exists()


async def test_protected_paths_in_the_tree_stay_read_only(tmp_path, home):
    repo = make_repo(tmp_path / "repo", {"a.txt": "x\n", ".envrc": "export A=1\n", "CLAUDE.md": "rules\n",
                                         ".githooks/pre-commit": "#!/bin/sh\n"})
    info = await asyncio.to_thread(wt.create, repo, "s3", "protected", worktrees_dir())
    conf = await asyncio.to_thread(sb.confinement_for, info.path, info.cwd, sb.session_tmp(), sb.SandboxSettings(),
                                   info.branch)
    backend = AVAIL.backend
    assert backend is not None
    shell = BashSession(info.cwd, session_env(dict(os.environ)), timeout=30,
                        wrap=lambda argv: backend.command(conf, argv))
    try:
        r = await shell.run("echo evil >> .envrc; echo evil >> CLAUDE.md; echo evil > .githooks/pre-commit; "
                            "echo ok > fine.txt && echo wrote")
        assert "wrote" in r.output
        assert (Path(info.path) / ".envrc").read_text() == "export A=1\n"
        assert (Path(info.path) / "CLAUDE.md").read_text() == "rules\n"
        assert (Path(info.path) / ".githooks" / "pre-commit").read_text() == "#!/bin/sh\n"
    finally:
        await shell.close()


async def test_blocked_commands_are_named():
    assert "read-only" in sb.blocked_by("bash: x: Read-only file system", "off")
    assert "network" in sb.blocked_by("curl: (6) Could not resolve host: pypi.org", "off")
    assert "allowlist" in sb.blocked_by("Tunnel connection failed: 403 Forbidden (cockpit sandbox: host not on the "
                                        "allowlist)", "allow")
    assert sb.blocked_by("all fine", "off") == ""


async def test_unavailable_sandbox_says_why(monkeypatch):
    monkeypatch.setenv("COCKPIT_BWRAP", "/nonexistent/bwrap")
    why = sb.Bubblewrap().unavailable()
    assert why and "COCKPIT_BWRAP=/nonexistent/bwrap is not an executable" in why


def test_the_proxy_socket_fits_and_is_hidden_however_deep_the_data_folder(tmp_path, monkeypatch):
    """A Unix socket's path has a length limit: the proxy's folder is chosen to fit it, and lies in
    a folder every sandbox hides (CI once failed with "AF_UNIX path too long")."""
    from cockpit import places

    for depth in (1, 6, 20):
        monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path / "/".join(["deep-folder"] * depth)))
        sock = os.path.join(sb.proxy_dir(), "proxy.sock")
        assert len(os.fsencode(sock)) <= places.SOCKET_MAX, sock
        assert any(sock.startswith(h.rstrip("/") + "/") for h in sb.cockpit_folders()), sock


async def test_network_allow_lets_through_only_the_allowlist(tmp_path, home, monkeypatch, hello_ports):
    """network = allow: the proxy outside is the only way out, and it passes listed hosts only —
    with a data folder deep enough that a socket beside the session's temp folder would not fit."""
    from cockpit.runtime.netproxy import AllowlistProxy

    monkeypatch.setenv("COCKPIT_DATA_DIR", str(tmp_path / "/".join(["deep-folder"] * 6)))
    allowed, other = hello_ports
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    info = await asyncio.to_thread(wt.create, repo, "s9", "network", worktrees_dir())
    tmp = sb.session_tmp()
    sock = os.path.join(sb.proxy_dir(), "proxy.sock")
    proxy = AllowlistProxy((f"127.0.0.1:{allowed}",), sock)
    await proxy.start()
    settings = sb.SandboxSettings(network="allow", allow_hosts=(f"127.0.0.1:{allowed}",))
    conf = await asyncio.to_thread(sb.confinement_for, info.path, info.cwd, tmp, settings, info.branch, sock)
    backend = AVAIL.backend
    assert backend is not None
    shell = BashSession(info.cwd, session_env(dict(os.environ)), timeout=30,
                        wrap=lambda argv: backend.command(conf, argv))
    try:
        r = await shell.run(FETCH_THROUGH_PROXY.format(port=allowed))
        assert HELLO in r.output, r.output
        r = await shell.run(FETCH_THROUGH_PROXY.format(port=other))
        assert HELLO not in r.output and "403" in r.output
        assert sb.blocked_by(r.output, "allow")
        # around the proxy: no route at all
        r = await shell.run(f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {other}), 3)\" "
                            "&& echo CONNECTED")
        assert "CONNECTED" not in r.output
        assert proxy.blocked == [f"127.0.0.1:{other}"]
        r = await shell.run(f"mv {sock} {sock}.x; ln -s /tmp/x {sock}; ls -la {sock}*; "
                            "grep -h Dumpable /proc/[0-9]*/status 2>/dev/null | sort | uniq -c; "
                            "cat /proc/1/cmdline | tr '\\0' ' '")
        assert os.path.exists(sock) and not os.path.islink(sock)  # read-only where it lives
        assert "bwrap" not in r.output.split("\n")[-1]  # no unfiltered bwrap init as pid 1
    finally:
        await shell.close()
        await proxy.close()


def test_allowlist_matching():
    from cockpit.runtime.netproxy import host_allowed

    allow = ("pypi.org", "*.npmjs.org", "127.0.0.1:8080")
    assert host_allowed("pypi.org", 443, allow) and host_allowed("PyPI.org.", 80, allow)
    assert not host_allowed("evil-pypi.org", 443, allow) and not host_allowed("pypi.org", 22, allow)
    assert host_allowed("registry.npmjs.org", 443, allow) and not host_allowed("npmjs.org", 443, allow)
    assert not host_allowed("npmjs.org.evil.com", 443, allow)
    assert host_allowed("127.0.0.1", 8080, allow) and not host_allowed("127.0.0.1", 443, allow)


async def test_a_session_that_points_head_at_main_cannot_make_cockpit_commit_there(boxed, tmp_path):
    """The admin folder is writable inside (git needs it): HEAD can be moved there, so Cockpit's
    own commit outside the sandbox first puts HEAD back on the session's branch."""
    info, shell, _ = boxed
    repo = tmp_path / "repo"
    main_before = git(repo, "rev-parse", "main").strip()
    r = await shell.run("git symbolic-ref HEAD refs/heads/main && echo change >> a.txt && echo moved")
    assert "moved" in r.output
    commit = await asyncio.to_thread(wt.commit_pending, info, "session work")
    assert commit is not None
    assert git(repo, "rev-parse", "main").strip() == main_before  # main did not move
    assert git(repo, "rev-parse", info.branch).strip() == commit  # the work is on the session's branch


async def test_the_shared_object_store_is_read_only_and_a_forged_object_never_enters_it(boxed, tmp_path):
    """The red team replaced a blob of main in place and deleted the store; now the store is
    read-only inside, and an object written under a name that is not its content's is refused
    when Cockpit takes the session's objects in."""
    info, shell, _ = boxed
    repo = tmp_path / "repo"
    objects = repo / ".git" / "objects"
    before = sorted(str(p) for p in objects.rglob("*") if p.is_file())
    r = await shell.run(f"find {objects} -type f -delete; echo x > {objects}/info/alternates; echo done")
    assert "done" in r.output
    assert sorted(str(p) for p in objects.rglob("*") if p.is_file()) == before
    assert git(repo, "cat-file", "-p", "main:a.txt") == "one\n"
    # forge: a commit on the branch whose tree names a blob stored under a false name
    r = await shell.run(
        "echo evil > a.txt && git add a.txt && git -c user.name=s -c user.email=s@x commit -qm forged "
        "&& B=$(git rev-parse HEAD:a.txt) && F=$GIT_OBJECT_DIRECTORY/${B:0:2}/${B:2} "
        "&& chmod u+w $F && printf 'blob 5\\0good\\n' | python3 -c "
        "'import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))' > $F && echo forged")
    assert "forged" in r.output, r.output
    with pytest.raises(wt.WorktreeError):
        await asyncio.to_thread(wt.absorb_objects, info)
    assert git(repo, "cat-file", "-p", "main:a.txt") == "one\n"


async def test_a_refused_take_in_writes_no_reflog_line_through_a_link_the_session_keeps_planting(boxed, tmp_path):
    """New commits that fail their check put the branch back at its base — a ref update, and git
    appends a reflog line. The session made its reflog a link to a file outside and a job keeps
    planting it: nothing is written while it runs (take-in only refuses), and the reset, once its
    shell ended, removes the link first."""
    info, shell, _ = boxed
    repo = tmp_path / "repo"
    victim = tmp_path / "victim.txt"
    victim.write_text("ORIGINAL\n")
    r = await shell.run(
        "echo evil > a.txt && git add a.txt && git -c user.name=s -c user.email=s@x commit -qm forged "
        "&& B=$(git rev-parse HEAD:a.txt) && F=$GIT_OBJECT_DIRECTORY/${B:0:2}/${B:2} "
        "&& chmod u+w $F && printf 'blob 5\\0good\\n' | python3 -c "
        "'import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))' > $F "
        "&& L=$(git rev-parse --git-common-dir)/logs/$(git symbolic-ref HEAD) "
        f"&& (while :; do ln -sfn {victim} $L; sleep 0.01; done) >/dev/null 2>&1 & sleep 0.2; echo planted")
    assert "planted" in r.output, r.output
    with pytest.raises(wt.AbsorbRefused):
        await asyncio.to_thread(wt.absorb_objects, info)
    assert victim.read_text() == "ORIGINAL\n"
    await shell.close()  # as the session does before the reset: its job ends with its sandbox
    await asyncio.to_thread(wt.reset_branch, info)
    assert victim.read_text() == "ORIGINAL\n"
    assert git(repo, "rev-parse", f"refs/heads/{info.branch}").strip() == info.base_commit


async def test_a_ref_the_session_parks_beside_its_branch_never_outlives_it(boxed, tmp_path):
    """Its ref folder is writable inside: a second ref there points at an object only its own store
    holds (gone with the worktree: `git log --all` and `gc` would fail). It is dropped when
    Cockpit takes the session's objects in, and with the worktree."""
    info, shell, _ = boxed
    repo = tmp_path / "repo"
    r = await shell.run("REF=$(git symbolic-ref HEAD); D=$(dirname $REF); echo secret > p.txt; git add p.txt; "
                        "C=$(git commit-tree $(git write-tree) -p HEAD -m persisted); git update-ref $D/persist $C; "
                        "git rm -q --cached p.txt; rm p.txt; echo parked")
    assert "parked" in r.output, r.output
    heads = repo / ".git" / "refs" / "heads"
    parked = heads / info.branch.rsplit("/", 1)[0] / "persist"
    assert parked.is_file()  # (git's own listing fails on it: its object is missing here)
    await asyncio.to_thread(wt.absorb_objects, info)
    assert not parked.exists() and (heads / info.branch).is_file()  # its own branch stays
    await shell.run("git update-ref $(dirname $(git symbolic-ref HEAD))/again HEAD")
    await shell.close()
    await asyncio.to_thread(wt.discard, info)
    assert sorted(p.relative_to(heads).as_posix() for p in heads.rglob("*") if p.is_file()) == ["main"]
    git(repo, "fsck", "--no-progress")  # a sound repository
    git(repo, "log", "--all", "--oneline")


async def test_a_branch_made_a_symbolic_ref_to_main_is_refused(boxed, tmp_path):
    info, shell, _ = boxed
    repo = tmp_path / "repo"
    main_before = git(repo, "rev-parse", "main").strip()
    r = await shell.run("B=$(git symbolic-ref HEAD); echo 'ref: refs/heads/main' > "
                        "$(git rev-parse --git-common-dir)/$B && echo change >> a.txt && echo aliased")
    assert "aliased" in r.output
    with pytest.raises(wt.WorktreeError, match="point at"):
        await asyncio.to_thread(wt.commit_pending, info, "work")
    assert git(repo, "rev-parse", "main").strip() == main_before


async def test_no_unix_socket_and_no_capabilities_inside(boxed, tmp_path):
    """A Unix socket of a server outside (tmux, Docker, an X server) is no way out: the filter
    refuses AF_UNIX sockets; and nothing inside holds a capability (bwrap run by root keeps them)."""
    _, shell, _ = boxed
    path = tmp_path / "outside.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    try:
        r = await shell.run(f"python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{path}\")' "
                            "&& echo CONNECTED; grep CapEff /proc/self/status; "
                            "python3 -c 'import socket; a, b = socket.socketpair(); print(\"pair ok\")'; "
                            "python3 -c 'import socket; socket.socketpair(type=socket.SOCK_DGRAM)' "
                            "|| echo dgram-refused")
        assert "CONNECTED" not in r.output and "Operation not permitted" in r.output
        assert "CapEff:\t0000000000000000" in r.output
        assert "pair ok" in r.output  # pipes between processes still work
        assert "dgram-refused" in r.output  # a datagram pair could sendto() a socket path outside
    finally:
        server.close()


async def test_the_kernel_keyring_is_out_of_reach(boxed):
    """The kernel keyring is not namespaced (run as root, the host's user keyring): add_key,
    request_key and keyctl are refused inside."""
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("the probe calls x86-64 system call numbers")
    _, shell, _ = boxed
    probe = ("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
             "print('add_key', libc.syscall(248, b'user', b'cockpit-probe', b'x', 1, -4), ctypes.get_errno()); "
             "print('keyctl', libc.syscall(250, 0, -4, 0), ctypes.get_errno()); "
             "print('request_key', libc.syscall(249, b'user', b'cockpit-probe', None, 0), ctypes.get_errno())")
    r = await shell.run(f"python3 -c \"{probe}\"")
    for call in ("add_key", "keyctl", "request_key"):
        assert f"{call} -1 1" in r.output, r.output  # -1, EPERM


async def test_a_nested_repository_the_session_planted_runs_nothing_in_cockpits_git(boxed, tmp_path):
    """A gitlink to a nested repository whose own .git/config names a clean filter: git status
    outside would descend into it and run the filter — Cockpit's own git never does."""
    info, shell, _ = boxed
    marker = tmp_path / "PWNED"
    n = "env -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES"
    r = await shell.run(
        f"{n} git init -q m && {n} git -C m config filter.x.clean \"sh -c 'touch {marker}; cat'\" "
        f"&& echo '* filter=x' > m/.gitattributes && echo hi > m/f.txt && (cd m && {n} git add -A && {n} git "
        "-c user.email=a@b -c user.name=a commit -qm m) && touch -d '1 hour ago' m/f.txt && "
        f"git update-index --add --cacheinfo 160000,$(cd m && {n} git rev-parse HEAD),m && echo planted")
    assert "planted" in r.output, r.output
    assert not marker.exists()  # (inside, the filter could not write there)
    for step in (lambda: wt.diff(info), lambda: wt.diff_stat(info), lambda: wt.commit_pending(info, "work")):
        with pytest.raises(wt.WorktreeError, match="nested git repository at m"):
            await asyncio.to_thread(step)
    assert not marker.exists()


async def test_links_and_merge_state_planted_in_the_admin_folder_never_steer_cockpits_commit(boxed, tmp_path, home):
    """COMMIT_EDITMSG or the reflog made links to a user's file, MERGE_HEAD naming another commit:
    Cockpit's own commit (outside the sandbox) writes through none of them and takes no parent
    from them."""
    info, shell, _ = boxed
    repo = tmp_path / "repo"
    victim = home / "victim.txt"
    victim.write_text("mine\n")
    other = git(repo, "commit-tree", "-m", "other", git(repo, "rev-parse", "main^{tree}").strip()).strip()
    r = await shell.run(f"A=$(git rev-parse --absolute-git-dir); ln -sf {victim} $A/COMMIT_EDITMSG; "
                        f"rm -f $A/logs/HEAD; ln -s {victim} $A/logs/HEAD; echo {other} > $A/MERGE_HEAD; "
                        "echo change >> a.txt; echo planted")
    assert "planted" in r.output
    commit = await asyncio.to_thread(wt.commit_pending, info, "work")
    assert victim.read_text() == "mine\n"
    parents = git(repo, "rev-list", "--parents", "-n", "1", commit).split()
    assert other not in parents and len(parents) == 2  # one parent: the session's branch


async def test_a_per_worktree_config_never_runs_a_program_in_cockpits_git(tmp_path, home):
    """With extensions.worktreeConfig on (``git sparse-checkout`` sets it), git reads the admin
    folder's ``config.worktree`` — Cockpit's own git too, outside the sandbox. A session cannot
    write one there (nor a link in its place), so the clean filter it names never runs when
    Cockpit diffs and commits the session's change."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "one\n"})
    git(repo, "config", "extensions.worktreeConfig", "true")
    info = await asyncio.to_thread(wt.create, repo, "s1", "try the sandbox", worktrees_dir())
    conf = await asyncio.to_thread(sb.confinement_for, info.path, info.cwd, sb.session_tmp(), sb.SandboxSettings(),
                                   info.branch)
    backend = AVAIL.backend
    assert backend is not None
    shell = BashSession(info.cwd, session_env(dict(os.environ)), timeout=30, wrap=lambda argv: backend.command(conf, argv))
    marker = tmp_path / "PWNED"
    r = await shell.run(
        "A=$(git rev-parse --absolute-git-dir); ln -sf \"$PWD/mine\" $A/config.worktree; rm -f $A/config.worktree; "
        f"git config --worktree filter.x.clean \"sh -c 'touch {marker}; cat'\"; "
        "git config --worktree core.attributesFile \"$PWD/attrs\"; "
        "echo '* filter=x' > attrs; echo '* filter=x' > .gitattributes; echo change >> a.txt; echo planted")
    assert "planted" in r.output, r.output
    admin = git(info.path, "rev-parse", "--absolute-git-dir").strip()
    config = Path(admin) / "config.worktree"
    assert config.is_file() and not config.is_symlink() and config.read_text() == ""
    try:
        for step in (lambda: wt.diff(info), lambda: wt.commit_pending(info, "work")):
            await asyncio.to_thread(step)
    finally:
        await shell.close()
    assert not marker.exists()


def test_a_link_or_folder_left_as_config_worktree_is_replaced_by_an_empty_file(tmp_path):
    """What an unconfined run (or an older version) left at ``config.worktree`` — a link to a file
    the session writes, a folder — becomes an empty plain file before it is bound read-only."""
    target = tmp_path / "theirs"
    target.write_text("[filter \"x\"]\n\tclean = touch /tmp/x\n")
    for make in (lambda p: p.symlink_to(target), lambda p: p.mkdir()):
        path = tmp_path / "config.worktree"
        make(path)
        sb._plain_file(str(path))
        assert path.is_file() and not path.is_symlink() and path.read_text() == ""
        path.unlink()
    assert target.read_text().startswith("[filter")  # the link's target left alone


@pytest.mark.parametrize("name", [
    "client_secret_123.apps.googleusercontent.com.json", "terraform.tfstate", "prod.tfstate.backup", "prod.tfvars",
    "prod.tfvars.json", "token.json", ".dev.vars", "database.yml", "secrets.yml", "vault.kdbx", ".htpasswd", ".env",
])
def test_secret_file_names_are_known(name):
    assert sb.SECRET_FILE.match(name)


@pytest.mark.parametrize("name", ["main.tf", "README.md", "tokens.py", "database.py", "state.json"])
def test_ordinary_file_names_are_not_secret(name):
    assert not sb.SECRET_FILE.match(name)


def test_secret_files_are_found_six_levels_deep_shallowest_first_and_home_paths_listed(tmp_path, monkeypatch):
    deep = tmp_path / "services" / "api" / "config" / "prod" / "eu"  # services/api/config/prod/eu/.env: six levels
    (deep / "x").mkdir(parents=True)
    (deep / ".env").write_text("DB_PASSWORD=x\n")
    (deep / "x" / "too-deep.tfvars").write_text("")
    (tmp_path / "node_modules" / "pkg").mkdir(parents=True)
    (tmp_path / "node_modules" / "pkg" / "key.pem").write_text("")
    found = sb._secret_files(str(tmp_path))
    assert str(deep / ".env") in found
    assert not any(f.endswith(("too-deep.tfvars", "key.pem")) for f in found)
    # past the cap, environment and credential files first, then the shallowest (a thousand test
    # fixtures' keys in a/ do not push b/.env out)
    fixtures = tmp_path / "a"
    fixtures.mkdir(parents=True)
    for i in range(30):
        (fixtures / f"cert{i}.pem").write_text("")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".env").write_text("TOKEN=x\n")
    (tmp_path / ".env").write_text("TOKEN=x\n")
    monkeypatch.setattr(sb, "SECRET_SCAN_MAX", 10)
    found = sb._secret_files(str(tmp_path))
    assert len(found) == 10 and found[:2] == [str(tmp_path / ".env"), str(tmp_path / "b" / ".env")]
    for p in (".config/glab-cli", ".composer/auth.json", ".config/composer/auth.json", ".pulumi", ".ngrok2",
              ".config/ngrok", ".config/rclone", ".config/sops", ".sops", ".age", ".config/age", ".bash_aliases",
              ".local/share/fish/fish_history", ".dbt/profiles.yml", ".config/pypoetry/auth.toml", ".yarnrc",
              ".m2/settings-security.xml", ".histfile", ".sqlite_history", ".psql_history", ".mysql_history",
              ".node_repl_history", ".lesshst", ".viminfo", ".zlogin", ".local/share/zsh", ".env",
              ".config/environment.d", ".config/io.datasette.llm", ".mozilla", ".config/google-chrome", ".Xauthority",
              ".ollama", ".config/opencode"):
        assert str(Path.home() / p) in sb.secret_paths(), p


async def test_the_repository_config_reads_without_its_credentials(tmp_path, home):
    """actions/checkout leaves the job's token in http.*.extraheader; a remote URL can carry one."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "x\n"})
    git(repo, "config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic SECRET-HEADER")
    git(repo, "remote", "add", "origin", "https://x-access-token:SECRET-URL-TOKEN@github.com/acme/calc.git")
    git(repo, "config", "credential.helper", "store --file /tmp/SECRET-HELPER")
    (repo / ".git" / "inc.cfg").write_text("[gitlab]\n\tprivate-token = SECRET-INCLUDED\n")
    git(repo, "config", "include.path", "inc.cfg")  # inlined in the copy, and the file itself hidden
    info = await asyncio.to_thread(wt.create, repo, "s7", "config", worktrees_dir())
    conf = await asyncio.to_thread(sb.confinement_for, info.path, info.cwd, sb.session_tmp(), sb.SandboxSettings(),
                                   info.branch)
    backend = AVAIL.backend
    assert backend is not None
    shell = BashSession(info.cwd, session_env(dict(os.environ)), timeout=30,
                        wrap=lambda argv: backend.command(conf, argv))
    try:
        r = await shell.run("git config -l; cat $(git rev-parse --git-common-dir)/config; git remote -v; "
                            "cat $(git rev-parse --git-common-dir)/inc.cfg")
        assert "SECRET" not in r.output and "github.com/acme/calc.git" in r.output
    finally:
        await shell.close()
    assert "SECRET-HEADER" in (repo / ".git" / "config").read_text()  # the user's own file as it was


def test_credentials_in_any_spelling_git_accepts_leave_the_config_copy(tmp_path):
    """A key on its section's line, a value continued over lines, credential keys of other names,
    an included file: git reads them all, so the copy is rebuilt from what git parses."""
    extra = tmp_path / "extra.cfg"
    extra.write_text("[gitlab]\n\tprivate-token = INCLUDED-SECRET\n[user]\n\tname = Dev\n")
    config = tmp_path / "config"
    config.write_text(
        "[core]\n\tbare = false\n\tlogallrefupdates\n[http] extraheader = AUTHORIZATION: basic ONE-LINE-SECRET\n"
        '[remote "origin"]\n\turl = https://x-access-token:\\\nghp_CONTINUED_SECRET@github.com/o/r\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n[sendemail]\n\tsmtpPass = SMTP-SECRET\n"
        "[credential] helper = store --file=/x/HELPER-SECRET\n[http]\n\tcookieFile = /home/me/.gitcookies\n"
        f'[include]\n\tpath = {extra}\n[alias]\n\tlg = log --graph "--format=%h %s"\n')
    clean = tmp_path / "clean"
    clean.write_text(sb.sanitized_git_config(str(config)))
    assert "SECRET" not in clean.read_text() and "gitcookies" not in clean.read_text()
    listed = git(tmp_path, "config", "-f", str(clean), "--list")
    assert "remote.origin.url=https://github.com/o/r" in listed and "user.name=Dev" in listed
    assert "alias.lg=log --graph --format=%h %s" in listed and "core.bare=false" in listed
    assert git(tmp_path, "config", "-f", str(clean), "--bool", "core.logallrefupdates").strip() == "true"
    assert sb.sanitized_git_config(str(tmp_path / "missing")) == ""


async def test_your_own_git_config_reads_without_its_credentials(tmp_path, home, monkeypatch):
    """~/.gitconfig and $XDG_CONFIG_HOME/git/config often carry a token (url.*.insteadOf, a
    credential helper's file): read through a sanitized copy; your name and aliases still work."""
    from cockpit.runtime import scratch

    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    (home / ".gitconfig.local").write_text("[github]\n\ttoken = INCLUDEDSECRET\n")
    (home / ".my-creds").write_text("https://u:STORESECRET@github.com\n")
    (home / ".gitconfig").write_text('[user]\n\tname = Dev\n\temail = d@x\n[url "https://ghp_HOMESECRET@github.com/"]\n'
                                     '\tinsteadOf = https://github.com/\n[credential]\n\thelper = store --file ~/.my-creds\n'
                                     '[include]\n\tpath = ~/.gitconfig.local\n')
    alt = tmp_path / "alt.gitconfig"  # $GIT_CONFIG_GLOBAL: git reads it instead
    alt.write_text("[user]\n\tname = Alt\n[hub]\n\toauthtoken = GLOBALENVSECRET\n")
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("[alias]\n\tst = status\n[sendemail]\n\tsmtpPass = XDGSECRET\n")
    repo = make_repo(tmp_path / "repo", {"a.txt": "x\n"})
    info = await asyncio.to_thread(wt.create, repo, "s8", "config", worktrees_dir())
    tmp = sb.session_tmp()
    conf = await asyncio.to_thread(sb.confinement_for, info.path, info.cwd, tmp, sb.SandboxSettings(), info.branch)
    backend = AVAIL.backend
    assert backend is not None
    shell = BashSession(info.cwd, session_env(dict(os.environ)), timeout=30, wrap=lambda argv: backend.command(conf, argv))
    try:
        r = await shell.run("git config --global -l; cat ~/.gitconfig ~/.config/git/config ~/.gitconfig.local "
                            "~/.my-creds; git config alias.st")
        assert "SECRET" not in r.output and "user.name=Dev" in r.output and r.output.strip().endswith("status"), r.output
    finally:
        await shell.close()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(alt))
    conf = await asyncio.to_thread(sb.confinement_for, info.path, info.cwd, sb.session_tmp(), sb.SandboxSettings(),
                                   info.branch)
    shell = BashSession(info.cwd, session_env(dict(os.environ)), timeout=30, wrap=lambda argv: backend.command(conf, argv))
    try:
        r = await shell.run(f"git config --global -l; cat {alt}")
        assert "SECRET" not in r.output and "user.name=Alt" in r.output, r.output
    finally:
        await shell.close()
    assert "HOMESECRET" in (home / ".gitconfig").read_text()  # yours as it was
    assert {suffix for suffix, _ in sb.USER_GIT_CONFIGS} <= set(scratch.COMPANIONS)  # removed with the temp folder


@pytest.mark.parametrize("git_repo", [True, False])
async def test_a_session_in_place_sees_none_of_the_folders_secret_files(tmp_path, home, git_repo):
    """In place (--no-worktree, or a folder outside git) the tree is your own: its .env and keys
    are hidden there as a worktree session's checkout's are."""
    folder = make_repo(tmp_path / "repo", {"a.txt": "x\n"}) if git_repo else tmp_path / "plain"
    folder.mkdir(exist_ok=True)
    (folder / ".env").write_text("DB_PASSWORD=IN-PLACE-SECRET\n")
    (folder / "config").mkdir()
    (folder / "config" / "deploy.pem").write_text("PEM-SECRET\n")
    for name in ("prod.env", ".env-prod", ".envrc", ".secrets", "secret_key.txt", "key.ppk", "local.settings.json",
                 ".git-credentials", "id_ed25519_sk"):
        (folder / name).write_text(f"{name} SECRET\n")
    conf = await asyncio.to_thread(sb.confinement_for, str(folder), str(folder), sb.session_tmp(), sb.SandboxSettings())
    backend = AVAIL.backend
    assert backend is not None
    shell = BashSession(str(folder), session_env(dict(os.environ)), timeout=30,
                        wrap=lambda argv: backend.command(conf, argv))
    try:
        r = await shell.run("cat .env config/deploy.pem prod.env .env-prod .envrc .secrets secret_key.txt key.ppk "
                            "local.settings.json .git-credentials id_ed25519_sk; echo stolen > .env; "
                            "cat a.txt 2>/dev/null; echo done")
        assert "SECRET" not in r.output and "done" in r.output, r.output
    finally:
        await shell.close()
    assert (folder / ".env").read_text() == "DB_PASSWORD=IN-PLACE-SECRET\n"


def test_cockpits_default_folders_are_hidden_whatever_the_data_folder():
    """With COCKPIT_DATA_DIR set (as in every test), another run's transcripts and worktrees in the
    default folders stay hidden too."""
    import platformdirs

    folders = sb.cockpit_folders()
    assert os.environ["COCKPIT_DATA_DIR"] in folders
    for default in (platformdirs.user_data_path("cockpit"), platformdirs.user_cache_path("cockpit")):
        assert str(default) in folders


async def test_the_allowlist_proxy_bounds_what_one_session_can_make_it_hold(tmp_path, monkeypatch):
    """It runs in the server: refused hosts are remembered distinct and bounded (a flood of 60 kB
    names grew the server by 590 MB), and open tunnels are capped (3,000 held used 2,000 files)."""
    from cockpit.runtime import netproxy
    from cockpit.runtime.netproxy import AllowlistProxy

    held: list[asyncio.StreamWriter] = []

    async def hold(reader, writer):
        held.append(writer)
        await reader.read()

    upstream = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    sock = str(tmp_path / "p.sock")
    proxy = AllowlistProxy((f"127.0.0.1:{port}",), sock)
    await proxy.start()

    async def ask(target: str) -> tuple[bytes, asyncio.StreamWriter]:
        r, w = await asyncio.open_unix_connection(sock)
        w.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        await w.drain()
        return await asyncio.wait_for(r.readline(), 10), w

    try:
        for i in range(300):
            line, w = await ask(f"{i}{'x' * 20_000}.example:443")
            assert b"403" in line
            w.close()
        assert proxy.refusals == 300 and len(proxy.blocked) == netproxy.MAX_BLOCKED
        assert all(len(b) <= netproxy.MAX_HOST + 4 for b in proxy.blocked)
        monkeypatch.setattr(netproxy, "MAX_TUNNELS", 3)
        open_ = [await ask(f"127.0.0.1:{port}") for _ in range(3)]
        assert all(b"200" in line for line, _ in open_)
        line, w = await ask(f"127.0.0.1:{port}")
        assert b"503" in line and b"too many open connections" in line
        w.close()
        # and the server's cap over every session's proxy together
        monkeypatch.setattr(netproxy, "MAX_TUNNELS", 10)
        monkeypatch.setattr(netproxy, "MAX_TUNNELS_ALL", 3)
        line, w = await ask(f"127.0.0.1:{port}")
        assert b"503" in line
        w.close()
        for _, w in open_:
            w.close()
    finally:
        await proxy.close()
        for w in held:
            w.close()
        upstream.close()
