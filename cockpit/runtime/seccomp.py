"""A seccomp filter for the sandbox: no Unix domain sockets, no io_uring, no kernel keyring.

A network namespace does not cut off path Unix sockets: a read-only bind of ``/tmp`` still lets a
command ``connect()`` to the user's tmux server, Docker, an X server or an ssh-agent socket and
have something outside run a command for it. Claude Code's sandbox on Linux closes that the same
way: ``socket(AF_UNIX, …)`` fails with ``EPERM`` inside (a stream ``socketpair``, which pipes
between processes use, works; a datagram one, which could ``sendto`` any socket path, does not),
so does ``socket(AF_VSOCK, …)``, and so does ``io_uring_setup`` (io_uring can create sockets without
the ``socket`` system call). On 32-bit x86, ``socketcall`` is refused whole (its family cannot be
read by a filter), and x32 system calls are refused. The kernel keyring is not namespaced (run
as root, bwrap makes no user namespace: the host's user keyring, where cached disk passphrases and
Kerberos tickets live, would be the session's): ``add_key``, ``request_key`` and ``keyctl`` fail
with ``EPERM``, as in Docker's and Flatpak's default profiles.

:data:`LAUNCHER` is the Python the sandbox runs first (``python -I -S -c LAUNCHER cmd …``): it sets
``no_new_privs``, loads the filter and ``exec``s the command, so everything the session starts
inherits it and none can lift it. Only the standard library (``ctypes``) is used.
"""

from __future__ import annotations

import struct

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_AARCH64 = 0xC00000B7
RET_ALLOW = 0x7FFF0000
RET_EPERM = 0x00050000 | 1
AF_UNIX = 1
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_AND = 0x54  # BPF_ALU | BPF_AND | BPF_K
AF_VSOCK = 40
SOCK_STREAM = 1


def program() -> bytes:
    """The filter as ``struct sock_filter[]`` (8 bytes an instruction, native order)."""
    # (op, k, jump-if-true label, jump-if-false label); labels name later instructions
    code: list[tuple[str, int, int, str | None, str | None]] = []
    labels: dict[str, int] = {}

    def at(name: str) -> None:
        labels[name] = len(code)

    def ins(op: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        code.append(("", op, k, jt, jf))

    ins(_LD_ABS, 4)  # arch
    ins(_JEQ, AUDIT_ARCH_X86_64, "x86", None)
    ins(_JEQ, AUDIT_ARCH_AARCH64, "arm", None)
    ins(_JEQ, AUDIT_ARCH_I386, "i386", None)
    ins(_RET, RET_ALLOW)
    at("x86")
    ins(_LD_ABS, 0)  # nr
    ins(_JSET, 0x40000000, "deny", None)  # x32
    ins(_JEQ, 425, "deny", None)  # io_uring_setup
    ins(_JEQ, 248, "deny", None)  # add_key
    ins(_JEQ, 249, "deny", None)  # request_key
    ins(_JEQ, 250, "deny", None)  # keyctl
    ins(_JEQ, 41, "family", None)  # socket
    ins(_JEQ, 53, "pair", None)  # socketpair
    ins(_RET, RET_ALLOW)
    at("arm")
    ins(_LD_ABS, 0)
    ins(_JEQ, 425, "deny", None)
    ins(_JEQ, 217, "deny", None)  # add_key
    ins(_JEQ, 218, "deny", None)  # request_key
    ins(_JEQ, 219, "deny", None)  # keyctl
    ins(_JEQ, 198, "family", None)
    ins(_JEQ, 199, "pair", None)
    ins(_RET, RET_ALLOW)
    at("i386")
    ins(_LD_ABS, 0)
    ins(_JEQ, 102, "deny", None)  # socketcall
    ins(_JEQ, 425, "deny", None)
    ins(_JEQ, 286, "deny", None)  # add_key
    ins(_JEQ, 287, "deny", None)  # request_key
    ins(_JEQ, 288, "deny", None)  # keyctl
    ins(_JEQ, 359, "family", None)
    ins(_JEQ, 360, "pair", None)
    ins(_RET, RET_ALLOW)
    at("family")
    ins(_LD_ABS, 16)  # args[0], low 32 bits (little-endian)
    ins(_JEQ, AF_UNIX, "deny", None)
    ins(_JEQ, AF_VSOCK, "deny", None)  # the hypervisor's sockets
    ins(_RET, RET_ALLOW)
    at("pair")  # a datagram pair could sendto() any Unix socket path: stream pairs only (pipes)
    ins(_LD_ABS, 24)  # args[1], the type
    ins(_AND, 0xF)
    ins(_JEQ, SOCK_STREAM, "allow", None)
    ins(_RET, RET_EPERM)
    at("allow")
    ins(_RET, RET_ALLOW)
    at("deny")
    ins(_RET, RET_EPERM)
    out = b""
    for i, (_, op, k, jt, jf) in enumerate(code):
        t = labels[jt] - i - 1 if jt else 0
        f = labels[jf] - i - 1 if jf else 0
        out += struct.pack("=HBBI", op, t, f, k)
    return out


LAUNCHER = r"""
import ctypes, os, struct, sys
prog = bytes.fromhex(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(prog, len(prog))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
    sys.stderr.write("cockpit sandbox: cannot load the seccomp filter (errno %d)\n" % ctypes.get_errno())
    sys.exit(126)
os.execvp(sys.argv[2], sys.argv[2:])
"""
