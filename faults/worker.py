"""A worker of the fault harness (faults/harness.py) on the Python binding: the same loop as
faults/worker.rs (with POLYLOCK_FAULT_ELECTION=1, a candidate of the election NAME that leads
for one section and resigns). Usage: worker.py URL NAME RESOURCE(host:port) SECONDS WATCHDOG_MS"""

import json
import os
import socket
import sys
import time

import polylock


def main() -> None:
    url, name, resource, seconds, watchdog = sys.argv[1:6]
    me = f"python-{os.getpid()}"
    end = time.monotonic() + float(seconds)
    while True:
        try:
            client = polylock.connect(url, watchdog_timeout=int(watchdog) / 1000, session_timeout=4.0)
            break
        except polylock.PolylockError as e:
            if time.monotonic() >= end:
                raise
            print(json.dumps({"acquire_error": type(e).__name__}), flush=True)
            time.sleep(0.2)
    lock = client.lock(name)
    election = client.election(name, me) if os.environ.get("POLYLOCK_FAULT_ELECTION") == "1" else None
    host, port = resource.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    replies = sock.makefile("r")

    def ask(line: str) -> bool:
        sock.sendall((line + "\n").encode())
        return replies.readline().strip() == "OK"

    while time.monotonic() < end:
        try:
            if not (election.campaign(timeout=2.0) if election else lock.acquire(timeout=2.0)):
                continue
        except polylock.PolylockError as e:
            print(json.dumps({"acquire_error": type(e).__name__}), flush=True)
            time.sleep(0.2)
            continue
        token = election.term if election else lock.fencing_token
        refused = False
        steps = ["BEGIN", "WRITE", "WRITE", "WRITE", "END"]
        for i, step in enumerate(steps):
            if not ask(f"{step} {me} {token}"):
                refused = True
                break
            if i + 1 < len(steps):
                time.sleep(0.04)
        lost_before = (not election.is_leader) if election else lock.lost
        release = ""
        for _ in range(20):  # a release the server did not answer is tried again
            try:
                if election:
                    election.resign()
                else:
                    lock.release()
                release = "ok"
            except polylock.LockLostError:
                release = "LockLost"
            except polylock.PolylockError as e:
                release = type(e).__name__
                time.sleep(0.1)
                continue
            break
        told = lost_before or release == "LockLost"
        print(json.dumps({"worker": me, "token": token, "refused": refused, "told": told,
                          "lost": "lost" if lost_before else None, "release": release}), flush=True)
        time.sleep(0.005 + (token or 0) % 20 / 1000)
    client.close()


if __name__ == "__main__":
    main()
