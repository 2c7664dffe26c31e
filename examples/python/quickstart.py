"""polylock from Python in ten lines: python3 examples/python/quickstart.py [URL]"""
import sys

import polylock

url = sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379"
name = "/quickstart/goods" if url.startswith("zk://") else "quickstart:goods"
with polylock.connect(url) as client:
    lock = client.lock(name)
    if lock.acquire(timeout=5.0):  # threading.Lock-shaped: True when held
        try:
            print(f"holding {lock.name} with fencing token {lock.fencing_token}")
        finally:
            lock.release()
