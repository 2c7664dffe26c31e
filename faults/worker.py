"""A worker of the fault harness (faults/harness.py) on the Python binding: the same loop as
faults/worker.rs (with POLYLOCK_FAULT_ELECTION=1, a candidate of the election NAME that leads
for one section and resigns). Usage: worker.py URL NAME RESOURCE(host:port) SECONDS WATCHDOG_MS

With POLYLOCK_FAULT_FENCES=REDIS_URL,PG_URL,MYSQL_URL every step of a section also writes through
the real fences under its token, as faults/worker.rs does (a fenced RPUSH on that Redis; the guard
row and an insert into polylock_faults_fenced in PostgreSQL and MariaDB)."""

import json
import os
import socket
import sys
import time

import polylock


class Fences:
    """The real fences a section writes through, and what each did: [accepted, refused]."""

    def __init__(self, urls: str, name: str) -> None:
        import urllib.parse

        import psycopg
        import pymysql

        redis_url, pg_url, my_url = urls.split(",")
        self.client = polylock.connect(redis_url)
        self.redis = self.client.fence(name)
        self.pg = psycopg.connect(pg_url.split("?")[0])
        u = urllib.parse.urlparse(my_url)
        self.my = pymysql.connect(host=u.hostname, port=u.port, user=u.username, password=u.password,
                                  database=u.path.lstrip("/"))
        self.name = name
        self.counts = {"redis": [0, 0], "postgres": [0, 0], "mysql": [0, 0]}
        self.errors = 0

    def _count(self, which: str, write) -> None:
        try:
            write()
            self.counts[which][0] += 1
        except polylock.StaleTokenError:
            self.counts[which][1] += 1
        except Exception as e:  # counted: a row with fence errors fails
            print(f"fence error: {e!r}", file=sys.stderr, flush=True)
            self.errors += 1

    def write(self, token: int) -> None:
        self._count("redis", lambda: self.redis.write(token, [["RPUSH", f"{{{self.name}}}:fenced", token]]))
        for which, conn in (("postgres", self.pg), ("mysql", self.my)):
            def guarded(conn=conn) -> None:
                try:
                    polylock.fence.sql(conn, self.name, token)
                    conn.cursor().execute("INSERT INTO polylock_faults_fenced (name, token) VALUES (%s, %s)",
                                          (self.name, token))
                    conn.commit()
                except BaseException:
                    conn.rollback()
                    raise
            self._count(which, guarded)

    def take(self) -> dict:
        out = {"fenced": self.counts, "fence_errors": self.errors}
        self.counts = {"redis": [0, 0], "postgres": [0, 0], "mysql": [0, 0]}
        self.errors = 0
        return out


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
    fences = Fences(os.environ["POLYLOCK_FAULT_FENCES"], name) if os.environ.get("POLYLOCK_FAULT_FENCES") else None
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
            if fences:
                fences.write(token)
            if not ask(f"{step} {me} {token}"):
                refused = True
                break
            if i + 1 < len(steps):
                time.sleep(0.04)
        if refused and fences:
            # The woken holder goes on with its work: one more write through every fence (a pause
            # may have fallen between two fences' writes of a step, leaving a fence no late write).
            fences.write(token)
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
                          "lost": "lost" if lost_before else None, "release": release,
                          **(fences.take() if fences else {})}), flush=True)
        time.sleep(0.005 + (token or 0) % 20 / 1000)
    client.close()


if __name__ == "__main__":
    main()
