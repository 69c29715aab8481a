# SPDX-License-Identifier: Apache-2.0
"""Byte relay between a TCP port and a Unix socket, for tests/cluster/isolated_rank.sh.

A process in a network namespace of its own reaches nothing over TCP, but Unix sockets with a
path work across namespaces. Two relays, one on each side, carry exactly one TCP service (PMIx's
server in slurmstepd) into the namespace and nothing else:

  serve-unix PATH HOST PORT   (outside) accept on Unix socket PATH, connect to HOST:PORT
  serve-tcp PORT PATH READY   (inside)  accept on 127.0.0.1:PORT, connect to PATH; touch READY
"""
import os
import socket
import sys
import threading


def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


def serve(listener, connect):
    while True:
        client, _ = listener.accept()
        try:
            upstream = connect()
        except OSError as error:
            print(f"netns_relay: cannot connect upstream: {error}", file=sys.stderr)
            client.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


def main():
    mode = sys.argv[1]
    if mode == "serve-unix":
        path, host, port = sys.argv[2], sys.argv[3], int(sys.argv[4])
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
        serve(listener, lambda: socket.create_connection((host, port)))
    elif mode == "serve-tcp":
        port, path, ready = int(sys.argv[2]), sys.argv[3], sys.argv[4]
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        open(ready, "w").close()

        def connect():
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(path)
            return upstream
        serve(listener, connect)
    else:
        sys.exit(f"netns_relay: unknown mode {mode}")


if __name__ == "__main__":
    main()
