#!/usr/bin/env python3
"""moto_server, handling one request at a time: `python scripts/moto_serial.py HOST PORT`.

moto's DynamoDB checks a ConditionExpression and then writes, with no lock between the two, so
two concurrent conditional writes can both pass, which real DynamoDB never allows (the store's
optimistic-update test catches it now and then under load). Serialized, the emulator keeps
DynamoDB's atomicity; connections are still accepted concurrently and wait their turn.
"""
import os
import signal
import sys
import threading

from moto.server import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    turn = threading.Lock()

    def one_at_a_time(environ, start_response):
        with turn:
            # The whole body is produced inside the lock: moto may build it lazily.
            return [b"".join(app(environ, start_response))]

    run_simple(host, port, one_at_a_time, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
