"""OS notifications (the desktop's notification centre) when a session needs you while the app is
not focused, through the kept library ``desktop-notifier`` (D-Bus on Linux, the Notification
Center on macOS, WinRT on Windows).

Any failure to notify is silent: no D-Bus session bus, no notification daemon, no permission, a
library error, a backend that hangs (``TIMEOUT_S``). After the first failure this process stops
trying. Off with ``notify_os = false`` in ``config.toml``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

TIMEOUT_S = 5.0


class Notifier(Protocol):
    """What the app needs to raise an OS notification. ``send`` never raises; True when the
    notification was handed to the OS."""

    async def send(self, title: str, message: str) -> bool: ...


class DesktopNotifications:
    """:class:`Notifier` on ``desktop_notifier.DesktopNotifier`` (created on first use)."""

    def __init__(self, app_name: str = "Cockpit", timeout: float = TIMEOUT_S) -> None:
        self.app_name = app_name
        self.timeout = timeout
        self.broken = False  # a send failed: do not try again in this process
        self._notifier: Any = None

    async def send(self, title: str, message: str) -> bool:
        if self.broken:
            return False
        try:
            if self._notifier is None:
                log = logging.getLogger("desktop_notifier")  # its warnings would land on the terminal
                log.addHandler(logging.NullHandler())
                log.propagate = False
                from desktop_notifier import DesktopNotifier

                self._notifier = DesktopNotifier(app_name=self.app_name)
            await asyncio.wait_for(self._notifier.send(title=title, message=message), self.timeout)
            return True
        except asyncio.CancelledError:
            raise
        except Exception:  # silent by design (see the module doc)
            self.broken = True
            return False
