#!/usr/bin/env python3
"""A TCP proxy that delays every chunk of bytes by a fixed time in each direction: a server on
another machine, for benchmarks on one (docs/postgres.md, "Ordering"; docs/performance.md).

    python3 bench/latency_proxy.py LISTEN_PORT TARGET_PORT DELAY_US

listens on 127.0.0.1:LISTEN_PORT and forwards to 127.0.0.1:TARGET_PORT, each way DELAY_US
microseconds later (500: a 1 ms round trip). Order is kept; bandwidth is not limited. For the
PostgreSQL test server: point the bench's URI at LISTEN_PORT. Stop it with Ctrl-C or kill.
"""
import asyncio
import socket
import sys


class Side(asyncio.Protocol):
    """One connection's end: what it receives is written to its peer DELAY later."""

    def __init__(self, delay, peer=None):
        self.delay = delay
        self.peer = peer
        self.transport = None
        self.held = []  # received before the peer connected

    def connection_made(self, transport):
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data):
        if self.peer is None:
            self.held.append(data)
            return
        asyncio.get_running_loop().call_later(self.delay, self.forward, data)

    def forward(self, data):
        if not self.peer.is_closing():
            self.peer.write(data)

    def connection_lost(self, exc):
        if self.peer is not None:
            asyncio.get_running_loop().call_later(self.delay, self.peer.close)


class Client(Side):
    """The client's end: connects to the target, then forwards both ways."""

    def __init__(self, delay, target_port):
        super().__init__(delay)
        self.target_port = target_port

    def connection_made(self, transport):
        super().connection_made(transport)
        asyncio.ensure_future(self.connect())

    async def connect(self):
        upstream = Side(self.delay, self.transport)
        try:
            transport, _ = await asyncio.get_running_loop().create_connection(
                lambda: upstream, "127.0.0.1", self.target_port)
        except OSError:
            self.transport.close()
            return
        self.peer = transport
        for data in self.held:
            self.data_received(data)
        self.held = []


async def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
    delay = int(sys.argv[3]) / 1e6
    server = await asyncio.get_running_loop().create_server(
        lambda: Client(delay, target_port), "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
