"""A Unix socket relay a test (or a bench script) can cut and restore: what a broken SSH link
does to a client of a remote server, without stopping that server."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path


class Relay:
    """A Unix socket at ``path`` relaying to the server at ``target``; :meth:`cut` drops every
    connection and stops listening (the host is unreachable), :meth:`restore` listens again."""

    def __init__(self, path: Path, target: Path):
        self.path, self.target = path, target
        self.server: asyncio.AbstractServer | None = None
        self.pipes: set[asyncio.StreamWriter] = set()

    async def restore(self) -> None:
        self.server = await asyncio.start_unix_server(self._serve, str(self.path))

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self.pipes):
            writer.transport.abort()
        self.pipes.clear()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(str(self.target), limit=1 << 24)
        self.pipes |= {writer, up_writer}

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        with contextlib.suppress(asyncio.CancelledError):  # the test's loop ends
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
