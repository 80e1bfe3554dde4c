"""The API key out of reach of the processes a session starts, in the process that holds it.

A session's shell is a child of the process that runs it: the server, or with ``--no-server`` the
app or ``cockpit run``. It could look for the key there in two places: the environment the
process started with (``/proc/<pid>/environ`` shows that block, whatever ``os.environ`` says
since) and the process's memory (``/proc/<pid>/mem``, a debugger). Once the configuration holds
the key, :func:`guard_process`:

- takes :data:`KEY_VARS` out of ``os.environ`` (no child inherits them; :func:`taken` keeps them
  for a later :func:`cockpit.runtime.config.load_config` of this process) and overwrites their
  values in the process's original environment block, which ``/proc/<pid>/environ`` reads;
- makes the process not dumpable (``prctl(PR_SET_DUMPABLE, 0)``, Linux; nothing elsewhere): its
  ``/proc/<pid>/`` files then belong to root, and a process of the same user can read neither
  its ``environ`` nor its ``mem``, nor attach a debugger (no core dump either). A child that
  runs a program (``exec``) is dumpable again, so what the server reads of its shells' ``/proc``
  (their ``cwd``, the ``environ`` that finds a dead server's shells) is unaffected.

Standard library only (a test runs this file as another user, outside the package).
"""

from __future__ import annotations

import ctypes
import os
import sys

KEY_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
            "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")  # (the last three: ACP agents' providers)
PROVIDER_KEY_VARS = KEY_VARS[2:]
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4
_taken: dict[str, str] = {}


def taken() -> dict[str, str]:
    """The variables :func:`take_keys` removed from ``os.environ`` (name → value)."""
    return dict(_taken)


def forget() -> None:
    """Drop what :func:`take_keys` kept (tests: one test's key is not the next one's)."""
    _taken.clear()


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _blank_c_value(libc: ctypes.CDLL, var: str) -> None:
    """Zero the value the C library holds for ``var`` (a copy ``setenv`` made, or the original
    block), before ``unsetenv`` drops the pointer to it."""
    getenv = libc.getenv
    getenv.restype, getenv.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    ptr = getenv(var.encode())
    if ptr:
        strlen = libc.strlen
        strlen.restype, strlen.argtypes = ctypes.c_size_t, [ctypes.c_void_p]
        ctypes.memset(ptr, 0, strlen(ptr))


def _blank_initial_block(names: tuple[str, ...]) -> None:
    """Zero the values of ``names`` in the environment block the process started with (what
    ``/proc/self/environ`` shows). Its address is ``/proc/self/stat``'s ``env_start``/``env_end``;
    nothing is written unless the memory there is byte for byte what ``/proc`` shows."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        rest = stat[stat.rindex(b")") + 2:].split()  # fields from the 3rd (after "pid (comm)")
        start, end = int(rest[50 - 3]), int(rest[51 - 3])
        with open("/proc/self/environ", "rb") as fh:
            shown = fh.read()
    except (OSError, ValueError, IndexError):
        return
    if not 0 < end - start <= 1 << 24 or len(shown) != end - start:
        return
    if ctypes.string_at(start, end - start) != shown:
        return
    for name in names:
        prefix = name.encode() + b"="
        at = 0
        while (at := shown.find(prefix, at)) >= 0:
            if at == 0 or shown[at - 1] == 0:  # a variable's start, not the middle of a value
                value = at + len(prefix)
                stop = shown.find(b"\0", value)
                stop = len(shown) if stop < 0 else stop
                ctypes.memset(start + value, 0, stop - value)
            at += len(prefix)


def take_keys() -> dict[str, str]:
    """Take :data:`KEY_VARS` out of this process's environment (``os.environ``, the C library's
    copy and the original block), keeping their values for :func:`taken`. Returns them."""
    libc = _libc()
    out = {}
    for var in KEY_VARS:
        value = os.environ.get(var)
        if value is None:
            continue
        out[var] = _taken[var] = value
        if libc is not None:
            try:
                _blank_c_value(libc, var)
            except (OSError, AttributeError):
                pass
        os.environ.pop(var, None)
    if libc is not None:
        _blank_initial_block(KEY_VARS)
    return out


def make_undumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)`` on Linux; True when the process is now not dumpable."""
    libc = _libc()
    if libc is None:
        return False
    try:
        prctl = libc.prctl
        prctl.restype = ctypes.c_int
        prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        if prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            return False
        return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0
    except AttributeError:
        return False


def guard_process() -> bool:
    """:func:`take_keys`, then :func:`make_undumpable` (module doc). True when not dumpable."""
    take_keys()
    return make_undumpable()


__all__ = ["KEY_VARS", "PROVIDER_KEY_VARS", "guard_process", "take_keys", "make_undumpable", "taken", "forget"]
