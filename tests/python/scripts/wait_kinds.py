"""The main thread's blocking waits of each kind, with no torch and no gnnprof import, each
WAIT_MS long (a helper thread releases it), in this order: a Queue.get, a Future.result, an
Event.wait, a Thread.join, a Pipe's recv (a consumer's, for the program's own producers; the
thread pool's shutdown joins its thread too, which is not), then a Queue.put on a full queue, a
Semaphore.acquire and a Queue.get made by a library (layerlib.py under a site-packages
directory on PYTHONPATH), which are not. Prints what each returned.

usage: wait_kinds.py WAIT_MS"""
import multiprocessing
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import layerlib

WAIT = float(sys.argv[1]) / 1000


def later(fn, *args):
    def run():
        time.sleep(WAIT)
        fn(*args)
    threading.Thread(target=run, daemon=True).start()


def main():
    q = queue.Queue(maxsize=1)
    later(q.put, "got")
    print("queue", q.get())
    with ThreadPoolExecutor(1) as pool:
        print("future", pool.submit(lambda: time.sleep(WAIT) or "done").result())
    ev = threading.Event()
    later(ev.set)
    print("event", ev.wait(10))
    loader = threading.Thread(target=time.sleep, args=(WAIT,))
    loader.start()
    print("join", loader.join())
    receiver, sender = multiprocessing.Pipe(duplex=False)
    later(sender.send, "piped")
    print("pipe", receiver.recv())
    q.put("full")
    later(q.get)
    q.put("room")  # waits for room: not a consumer's wait
    print("put", q.get())
    sem = threading.Semaphore(0)
    later(sem.release)
    print("semaphore", sem.acquire())
    later(q.put, "library")
    print("library", layerlib.take(q))


main()
