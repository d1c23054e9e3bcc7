"""Inside an episode's network namespace (hscale.harness._netns): bring the loopback up,
listen on 127.0.0.1:PORT, carry each connection over the Unix socket SOCKET to the served
endpoint outside, and run the command; exit with its status.

    python netns_relay.py SOCKET PORT -- COMMAND...

Run by path with the standard library only, so it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import socket
import struct
import subprocess
import sys
import threading

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))


def pump_both(a: socket.socket, b: socket.socket) -> None:
    left, lock = [2], threading.Lock()

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with lock:
            left[0] -= 1
            done = left[0] == 0
        if done:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()

    for src, dst in ((a, b), (b, a)):
        threading.Thread(target=pump, args=(src, dst), daemon=True).start()


def relay(listener: socket.socket, path: str) -> None:
    while True:
        inside, _ = listener.accept()
        outside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            outside.connect(path)
        except OSError:
            inside.close()
            outside.close()
            continue
        pump_both(inside, outside)


def main(argv: list[str]) -> int:
    path, port, dash, *command = argv
    if dash != "--" or not command:
        print("usage: netns_relay.py SOCKET PORT -- COMMAND...", file=sys.stderr)
        return 2
    loopback_up()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    threading.Thread(target=relay, args=(listener, path), daemon=True).start()
    try:
        return subprocess.call(command)
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
