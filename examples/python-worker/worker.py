#!/usr/bin/env python3
"""A remote errand worker in Python, standard library only.

It speaks the HTTP protocol of `errand serve`: long-poll `POST /v1/lease`, then for each job
`heartbeat` while it works, `checkpoint` progress, and `complete` or `fail` naming the attempt it
was given. A 409 on any report means the attempt is stale (cancelled, taken over): stop and move
on. A 503 (a server draining for a restart, or its store down) or a connection refused is waited
out: the lease is asked again after the server's Retry-After, and a report sent again for up to a
lease's length. Run it as:

    python3 examples/python-worker/worker.py --server http://127.0.0.1:8080 --types resize,flaky

Environment: ERRAND_TOKEN (a worker-role bearer token, when the server has auth).
Handlers are plain functions `handler(payload, job, ctx) -> result`; raise to fail the attempt,
raise NonRetryable to send the job straight to dead.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request


class NonRetryable(Exception):
    """Raise from a handler to fail the job without retrying."""


class Stale(Exception):
    """The server answered 409: this attempt is no longer current."""


class Unavailable(Exception):
    """The server could not be reached, or answered 503: try again after `retry_after` seconds."""

    def __init__(self, detail, retry_after=1.0):
        super().__init__(detail)
        self.retry_after = retry_after


class Client:
    def __init__(self, server, token=None, timeout=60):
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("content-type", "application/json")
        if self.token:
            req.add_header("authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                text = res.read().decode()
                return json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            detail = e.read().decode()
            if e.code == 409:
                raise Stale(detail) from None
            if e.code in (502, 503, 504):
                try:
                    after = min(max(float(e.headers.get("retry-after") or 1), 0.1), 60.0)
                except ValueError:
                    after = 1.0
                raise Unavailable("%s %s -> %d %s" % (method, path, e.code, detail), after) from None
            raise RuntimeError("%s %s -> %d %s" % (method, path, e.code, detail)) from None
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            raise Unavailable("%s %s -> %s" % (method, path, e)) from None

    def report(self, method, path, body, within_s):
        """A report (complete, fail), sent again while the server is unavailable, for `within_s`.
        It names its attempt, so a resend of one that landed is answered 200 or 409, never twice done."""
        give_up = time.monotonic() + within_s
        while True:
            try:
                return self.call(method, path, body)
            except Unavailable as e:
                if time.monotonic() + e.retry_after > give_up:
                    raise
                time.sleep(e.retry_after)


class Context:
    """What a handler gets besides its payload: heartbeat and checkpoint for this attempt."""

    def __init__(self, client, job, lease_ms):
        self.client = client
        self.job = job
        self.attempt = job["attempt"]
        self.lease_ms = lease_ms
        self.stopped = threading.Event()

    def heartbeat(self):
        try:
            self.client.call("POST", "/v1/jobs/%s/heartbeat" % self.job["id"],
                             {"attempt": self.attempt, "leaseMs": self.lease_ms})
            return True
        except Stale:
            self.stopped.set()
            return False
        except Unavailable:  # the next heartbeat is the retry
            return True

    def checkpoint(self, data):
        try:
            self.client.call("POST", "/v1/jobs/%s/checkpoint" % self.job["id"],
                             {"attempt": self.attempt, "data": data})
            return True
        except Stale:
            self.stopped.set()
            return False


def run_job(client, handlers, job, lease_ms, log):
    ctx = Context(client, job, lease_ms)
    # Heartbeat about every third of the lease while the handler runs.
    beat_stop = threading.Event()

    def beat():
        while not beat_stop.wait(lease_ms / 3000.0):
            if not ctx.heartbeat():
                return

    threading.Thread(target=beat, daemon=True).start()
    path = "/v1/jobs/%s/" % job["id"]
    try:
        result = handlers[job["type"]](job["payload"], job, ctx)
        if ctx.stopped.is_set():
            log("stale", job)
            return
    except Stale:
        log("stale", job)
    except Exception as e:  # the handler failed: report it, retryable unless it said otherwise
        retryable = not isinstance(e, NonRetryable)
        try:
            client.report("POST", path + "fail", {
                "attempt": ctx.attempt,
                "error": {"message": str(e), "name": type(e).__name__},
                "retryable": retryable,
            }, lease_ms / 1000.0)
            log("failed", job, str(e))
        except Stale:
            log("stale", job)
        except Unavailable as u:  # given up: the job comes back when its lease runs out
            log("unreported", job, str(u))
    else:
        try:
            client.report("POST", path + "complete", {"attempt": ctx.attempt, "result": result},
                          lease_ms / 1000.0)
            log("completed", job, result)
        except Stale:
            log("stale", job)
        except Unavailable as u:  # given up: the job comes back when its lease runs out
            log("unreported", job, str(u))
    finally:
        beat_stop.set()


def work(client, handlers, types, lease_ms=30000, wait_ms=30000, max_jobs=None, log=None):
    """Leases and runs jobs until SIGTERM/SIGINT, or until max_jobs reports have been made."""
    log = log or (lambda *a: None)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    done = 0
    while not stop.is_set() and (max_jobs is None or done < max_jobs):
        try:
            leased = client.call("POST", "/v1/lease", {
                "types": types, "limit": 1, "leaseMs": lease_ms, "waitMs": wait_ms,
            })["jobs"]
        except Unavailable as e:  # draining, restarting, unreachable: ask again after its wait
            stop.wait(e.retry_after)
            continue
        for job in leased:
            run_job(client, handlers, job, lease_ms, log)
            done += 1
    return done


# ---- example handlers (used by errand's CI test) ------------------------------------------------

def resize(payload, job, ctx):
    """Resumes from its checkpoint: each size done is saved, so a retry skips it."""
    done = list(job.get("checkpoint") or [])
    for size in payload["sizes"]:
        if size in done:
            continue
        done.append(size)
        ctx.checkpoint(done)
        ctx.heartbeat()
        if payload.get("failAfterFirst") and job["attempt"] == 1:
            raise RuntimeError("disk full after %d" % size)
    return {"file": payload["file"], "sizes": done, "attempt": job["attempt"]}


def refuse(payload, job, ctx):
    raise NonRetryable("cannot process %s" % payload.get("what"))


HANDLERS = {"py-resize": resize, "py-refuse": refuse}


def main():
    parser = argparse.ArgumentParser(description="A remote errand worker in Python.")
    parser.add_argument("--server", default="http://127.0.0.1:8080")
    parser.add_argument("--types", default=",".join(HANDLERS))
    parser.add_argument("--lease-ms", type=int, default=30000)
    parser.add_argument("--wait-ms", type=int, default=30000)
    parser.add_argument("--max-jobs", type=int, default=None, help="exit after this many jobs")
    args = parser.parse_args()
    client = Client(args.server, os.environ.get("ERRAND_TOKEN"))

    def log(event, job, detail=None):
        line = {"event": event, "id": job["id"], "type": job["type"], "attempt": job["attempt"]}
        if detail is not None:
            line["detail"] = detail
        print(json.dumps(line), flush=True)

    work(client, HANDLERS, args.types.split(","), args.lease_ms, args.wait_ms, args.max_jobs, log)


if __name__ == "__main__":
    sys.exit(main())
