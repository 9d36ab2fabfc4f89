"""A loopback HTTP server that accepts every connection, reads the request and never answers: an API judge whose
call never returns (the stop-signal test and bench/signal_exit.py wait on it)."""

from __future__ import annotations

import contextlib
import socket
import threading


class StalledServer:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.requests = 0
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            with contextlib.suppress(OSError):
                conn.settimeout(5)
                if conn.recv(65536):
                    self.requests += 1

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()
