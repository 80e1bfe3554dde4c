"""What a remote host costs: connecting through ssh and the bridge, and a request over it, against
this machine's own socket. The "host" is a test-owned sshd on a loopback port (tests/sshd.py) in
front of this same checkout with a data folder of its own, so the figures are ssh's and the
bridge's overhead, not a network's.

    python bench/ssh_bench.py [--rounds 10]

Prints the median and worst of: a connection (ssh handshake, bridge, its hello), one ``list``
round trip on an open connection, and ``cockpit ls --host`` end to end; and the same request over
the Unix socket.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def _stats(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:7.1f} ms · worst {max(xs) * 1000:7.1f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    import sshd

    why = sshd.available()
    if why:
        print(f"cannot run: {why}")
        return 2
    with tempfile.TemporaryDirectory() as tmp, sshd.SshHost(Path(tmp) / "ssh") as host:
        local, remote = Path(tmp) / "local", Path(tmp) / "remote"
        local.mkdir()
        remote.mkdir()
        command = f"env COCKPIT_DATA_DIR={shlex.quote(str(remote))} COCKPIT_PREWARM=0 {sys.executable} -m cockpit"
        (local / "config.toml").write_text(f'[hosts.box]\nssh = "remote"\ncommand = {json.dumps(command)}\n')
        os.environ.update(COCKPIT_DATA_DIR=str(local), COCKPIT_SSH_COMMAND=host.ssh_command)
        from cockpit.runtime.config import host_entry
        from cockpit.server.client import BlockingClient
        from cockpit.server.ssh import SshTransport

        tr = SshTransport(host_entry("box"))
        start = time.perf_counter()
        BlockingClient.over(tr).close()  # the first one starts box's server
        first = time.perf_counter() - start
        connects, calls, clis, socket_calls = [], [], [], []
        for _ in range(args.rounds):
            t = time.perf_counter()
            c = BlockingClient.over(tr)
            connects.append(time.perf_counter() - t)
            for _ in range(5):
                t = time.perf_counter()
                c.call("list")
                calls.append(time.perf_counter() - t)
            c.close()
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "cockpit", "ls", "--host", "box"], check=True, capture_output=True)
            clis.append(time.perf_counter() - t)
        with BlockingClient(remote / "run" / "server.sock") as c:
            for _ in range(args.rounds * 5):
                t = time.perf_counter()
                c.call("list")
                socket_calls.append(time.perf_counter() - t)
            c.call("server.stop")
        print(f"first connection (starts box's server): {first * 1000:.0f} ms")
        print(f"connect through ssh + bridge hello:      {_stats(connects)}")
        print(f"list over the ssh connection:            {_stats(calls)}")
        print(f"list over the Unix socket:               {_stats(socket_calls)}")
        print(f"cockpit ls --host box (process, end to end): {_stats(clis)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
