"""A farm of PE metric endpoints for bench_flow_scrape (run as a process of its own, so the bench's
process measures the reader's CPU only): ``python flow_pe_farm.py PES SERVERS`` serves /pe/<n> on
SERVERS loopback ports (printed as one JSON line), each answer a PE of six operators whose counters
advance by 500 tuples a reading."""

from __future__ import annotations

import asyncio
import itertools
import sys

import orjson
from aiohttp import web

from flow_expositions import OperatorCounts, pe_text

OPERATORS = 6


def _texts(pe: int) -> list[str]:
    """Readings of one PE, cycled through: counters that only grow."""
    names = [f"main.stage{i}[{pe}]" for i in range(OPERATORS)]
    return [
        pe_text(1, pe, [OperatorCounts(n, 500 * k, 490 * k, queued=10 * k) for n in names], {pe + 1: 5.0})
        for k in range(1, 11)
    ]


async def main(pes: int, servers: int) -> None:
    texts = {pe: itertools.cycle(_texts(pe)) for pe in range(pes)}

    async def handle(request: web.Request) -> web.Response:
        return web.Response(text=next(texts[int(request.match_info["pe"])]), content_type="text/plain")

    ports = []
    for _ in range(servers):
        app = web.Application()
        app.router.add_get("/pe/{pe}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports.append(int(runner.addresses[0][1]))
    sys.stdout.write(orjson.dumps({"ports": ports}).decode() + "\n")
    sys.stdout.flush()
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
