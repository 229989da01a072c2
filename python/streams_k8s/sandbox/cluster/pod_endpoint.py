"""An HTTP endpoint a simulated pod serves on its host address, closed whatever stops it.

The listening socket is bound here, before aiohttp sees it, and `PodEndpoint.close` closes it
itself: a start cancelled half-way (the kubelet's worker stopped while the pod comes up) would
otherwise leave asyncio's server listening with nothing holding it. Such a socket outlives the
simulation and its event loop; the next simulation that gives a pod the same address cannot bind
it, and its scrapers connect to the dead one and wait for an answer that never comes.
"""

from __future__ import annotations

import asyncio
import socket

from aiohttp import web


class PodEndpoint:
    """``app`` served on ``address:port``; `close` stops it and frees the address."""

    def __init__(self, app: web.Application, address: str, port: int) -> None:
        """Binds at once (an ``OSError`` when the address is taken); `start` serves."""
        self.address, self.port = address, port
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((address, port))
            self._socket.setblocking(False)
        except OSError:
            self._socket.close()
            raise
        self._runner = web.AppRunner(app, access_log=None)

    async def start(self) -> None:
        await self._runner.setup()
        await web.SockSite(self._runner, self._socket).start()

    async def close(self) -> None:
        try:
            await self._runner.cleanup()
        finally:
            if self._socket.fileno() != -1:  # a start cut short leaves it listening, unowned
                asyncio.get_running_loop().remove_reader(self._socket)
                self._socket.close()
