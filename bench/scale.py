"""``python -m bench.scale``: models spread over worker replicas, on one server and on a
Redis Cluster (run by command, not in CI). Figures go to ``bench/results/scale.json``
and ``bench/results/scale.md``.

Scenarios (``--only NAME``; default: all):

* ``throughput``: ``--models`` (60) models served by 1, 2 and 3 worker processes
  (``--workers``) on one embedded server and on an embedded 3-primary cluster
  (``--backends``). Once the assignment is balanced the workers are paused while a
  backlog of ``--backlog`` batch entries of ``--rows`` labelled events per model is
  written (producers faster than the workers); draining it gives: models per worker (max/min),
  events/s in aggregate and per worker, worker CPU seconds per event (from
  ``/proc``), Redis CPU seconds per event (``INFO cpu`` of every node).
* ``kill``: three workers, steady producers; one is killed with SIGKILL. For each of
  its models, the time until it advances again (its applied count moves past what it
  was at the kill): p50 and max, against the lease TTL. Then the producers stop, the
  logs are drained: every produced event applied exactly once (none lost, none
  twice), and every model's state bit-identical to one uninterrupted run of its log.
* ``join``: two workers, steady producers; a third starts. Time until the leases are
  balanced (max - min <= 1), then the same exactly-once and bit-identical checks.

Every scenario starts its own servers (``service.embedded_redis``,
``service.embedded_cluster``) in a temporary directory; workers are
``python -m service.worker`` processes serving their share of every model. The load
average of the machine is recorded with the figures (it is shared).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import redis  # noqa: E402

from bench import RESULTS  # noqa: E402
from service.embedded_cluster import EmbeddedCluster  # noqa: E402
from service.embedded_redis import EmbeddedRedis  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.store import connect, keys  # noqa: E402
from service.store.codec import encode_batch  # noqa: E402
from service.store.lease import lease_holder  # noqa: E402
from service.store.models import ModelConfig, put_model  # noqa: E402
from service.store.snapshot import read_snapshot  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
D, TASKS = 10, ["t0", "t1", "t2", "t3"]
#: labelled events per batch entry (``--rows``)
ROWS = 50
CONFIG = ModelConfig(learner="cmtl", n_features=D, tasks=TASKS)
CLK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- servers and processes
@contextmanager
def backend(kind: str, where: Path) -> Iterator[tuple[str, list[redis.Redis]]]:
    """A fresh server (``single``) or 3-primary cluster (``cluster``): its URL and a plain
    client per node (for INFO)."""
    if kind == "single":
        with EmbeddedRedis(where / "single") as server:
            yield server.url, [redis.Redis.from_url(server.url)]
    else:
        with EmbeddedCluster(where / "cluster") as cluster:
            yield cluster.url, cluster.clients()


def start_worker(url: str, worker_id: str, **settings: object) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMTL_")}
    env |= {"REDIS_URL": url, "OMTL_WORKER_METRICS_PORT": "0", "OMTL_LOG_LEVEL": "warning"}
    env |= {f"OMTL_{k.upper()}": str(v) for k, v in settings.items()}
    return subprocess.Popen(
        [sys.executable, "-m", "service.worker", "--worker-id", worker_id],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def redis_cpu(nodes: list[redis.Redis]) -> float:
    total = 0.0
    for node in nodes:
        info = node.info("cpu")
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


# ---------------------------------------------------------------- the workload
class Producers:
    """Steady producers: every ``period`` seconds, one batch entry of ``ROWS`` labelled
    events per model (deterministic per model), pipelined. Counts what was acknowledged."""

    def __init__(self, r: redis.Redis, names: list[str], period: float) -> None:
        self.r, self.names, self.period = r, names, period
        self.sent = dict.fromkeys(names, 0)
        self._rng = {n: np.random.default_rng(i) for i, n in enumerate(names)}
        self._w = np.random.default_rng(99).normal(size=(len(TASKS), D))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def write(self, rounds: int) -> None:
        """Append ``rounds`` batch entries to every model now (a backlog)."""
        for _ in range(rounds):
            with self.r.pipeline(transaction=False) as p:
                for name in self.names:
                    rng = self._rng[name]
                    ts = rng.integers(len(TASKS), size=ROWS)
                    X = rng.normal(size=(ROWS, D)).astype(np.float32)
                    y = [1.0 if self._w[t] @ x >= 0 else -1.0 for t, x in zip(ts, X)]
                    p.xadd(keys.log_key(name), encode_batch([TASKS[t] for t in ts], X, y=y))  # type: ignore[arg-type]
                p.execute()
            for name in self.names:
                self.sent[name] += ROWS

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.write(1)

    def __enter__(self) -> Producers:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def applied(r: redis.Redis, names: list[str]) -> dict[str, int]:
    """Log entries each model's owner has applied (its progress hash; no trimming here)."""
    with r.pipeline(transaction=False) as p:
        for name in names:
            p.hget(keys.progress_key(name), "applied")
        return {n: int(v or 0) for n, v in zip(names, p.execute(), strict=True)}


def holders(r: redis.Redis, names: list[str]) -> dict[str, str | None]:
    return {name: lease_holder(r, name) for name in names}


def loads(r: redis.Redis, names: list[str], members: list[str]) -> list[int]:
    owner = holders(r, names)
    return [sum(1 for h in owner.values() if h == m) for m in members]


def wait_for(condition: Callable[[], bool], timeout: float, step: float = 0.05) -> float | None:
    """Seconds until ``condition`` held, None after ``timeout``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(step)
    return None


def balanced(r: redis.Redis, names: list[str], members: list[str]) -> bool:
    counts = loads(r, names, members)
    return sum(counts) == len(names) and max(counts) - min(counts) <= 1


def setup_models(r: redis.Redis, n: int) -> list[str]:
    names = [f"m{i:03d}" for i in range(n)]
    for name in names:
        put_model(r, name, CONFIG)
    return names


WORKER_SETTINGS = {
    "lease_ttl_ms": 2000,
    "snapshot_every_seconds": 1.0,
    "snapshot_every_entries": 100_000,
    "stream_maxlen": 100_000_000,
    "block_ms": 100,
}


# ---------------------------------------------------------------- throughput
def throughput(kind: str, workers: int, args: argparse.Namespace, where: Path) -> dict[str, Any]:
    """Capacity: once the models are balanced, the workers are paused (SIGSTOP) while a
    backlog of ``--backlog`` batch entries per model is written (producers faster than
    the workers), then resumed; the rates are those of draining it."""
    with backend(kind, where / f"tp-{kind}-{workers}") as (url, nodes):
        r = connect(url)
        names = setup_models(r, args.models)
        producers = Producers(r, names, args.period)
        members = [f"w{i}" for i in range(workers)]
        settings = WORKER_SETTINGS | {"lease_ttl_ms": 120_000}  # paused without losing leases
        procs = [start_worker(url, m, **settings) for m in members]
        try:
            settle = wait_for(lambda: balanced(r, names, members), timeout=120)
            counts = loads(r, names, members)
            for p in procs:
                p.send_signal(signal.SIGSTOP)
            a0, rw0 = applied(r, names), redis_cpu(nodes)
            producers.write(args.backlog)
            appended_cpu = redis_cpu(nodes) - rw0  # the workers are paused: appends only
            c0, rc0 = [cpu_seconds(p.pid) for p in procs], redis_cpu(nodes)
            t0 = time.monotonic()
            for p in procs:
                p.send_signal(signal.SIGCONT)
            total = {n: producers.sent[n] // ROWS for n in names}
            drained = wait_for(lambda: applied(r, names) == total, 600, step=0.01)
            t1 = time.monotonic()
            c1, rc1 = [cpu_seconds(p.pid) for p in procs], redis_cpu(nodes)
            a1 = applied(r, names)
        finally:
            for p in procs:
                p.send_signal(signal.SIGCONT)
                p.send_signal(signal.SIGTERM)
            for p in procs:
                p.wait(60)
            r.close()
    seconds = t1 - t0
    events = ROWS * sum(a1[n] - a0[n] for n in names)
    per_worker_cpu = [b - a for a, b in zip(c0, c1, strict=True)]
    return {
        "backend": kind,
        "workers": workers,
        "models": args.models,
        "seconds_to_balance": settle,
        "models_per_worker_max": max(counts),
        "models_per_worker_min": min(counts),
        "drain_s": round(seconds, 2),
        "drained": drained is not None,
        "events": events,
        "events_per_s": round(events / seconds),
        "events_per_s_per_worker": round(events / seconds / workers),
        "worker_cpu_s": round(sum(per_worker_cpu), 2),
        "worker_cpu_us_per_event": round(1e6 * sum(per_worker_cpu) / max(events, 1), 2),
        "redis_cpu_us_per_event": round(1e6 * (rc1 - rc0) / max(events, 1), 2),
        "redis_cpu_us_per_entry_read": round(1e6 * (rc1 - rc0) / max(events // ROWS, 1), 2),
        "redis_cpu_us_per_entry_appended": round(1e6 * appended_cpu / max(events // ROWS, 1), 2),
        "loadavg": os.getloadavg()[0],
    }


# ---------------------------------------------------------------- exactly once, bit for bit
def verify(r: redis.Redis, url: str, names: list[str], sent: dict[str, int]) -> dict[str, Any]:
    """Every produced event applied once; each model equal to one uninterrupted run."""
    from service.worker import Worker

    lost_or_twice = 0
    different = 0
    settings = Settings(redis_url=url, worker_metrics_port=0, **WORKER_SETTINGS)  # type: ignore[arg-type]
    for name in names:
        snap = read_snapshot(r, name)
        if snap is None or snap.totals["events"] != sent[name]:
            lost_or_twice += 1
            continue
        ref = f"ref-{name}"
        put_model(r, ref, CONFIG)
        with r.pipeline(transaction=False) as p:
            for entry_id, fields in r.xrange(keys.log_key(name)):
                p.xadd(keys.log_key(ref), fields, id=entry_id)
            p.execute()
        Worker(settings, models=[ref]).run(until_idle=True, timeout=300)
        want = read_snapshot(r, ref)
        assert want is not None
        same = want.totals == snap.totals and all(
            np.array_equal(v, snap.learner.state_dict()[k])
            if isinstance(v, np.ndarray)
            else v == snap.learner.state_dict()[k]
            for k, v in want.learner.state_dict().items()
        )
        different += not same
    return {
        "events_produced": sum(sent.values()),
        "models_with_events_lost_or_twice": lost_or_twice,
        "models_not_bit_identical": different,
    }


def drain_and_stop(
    r: redis.Redis, names: list[str], procs: list[subprocess.Popen[bytes]], sent: dict[str, int]
) -> float | None:
    done = wait_for(lambda: all(v * ROWS == sent[n] for n, v in applied(r, names).items()), 300)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        p.wait(60)
    return done


def kill(kind: str, args: argparse.Namespace, where: Path) -> dict[str, Any]:
    with backend(kind, where / f"kill-{kind}") as (url, _):
        r = connect(url)
        names = setup_models(r, args.models)
        members = ["k0", "k1", "k2"]
        procs = [start_worker(url, m, **WORKER_SETTINGS) for m in members]
        producers = Producers(r, names, args.period)
        try:
            with producers:
                assert wait_for(lambda: balanced(r, names, members), 120) is not None
                time.sleep(args.settle)
                victim = holders(r, names)
                theirs = [n for n, h in victim.items() if h == "k1"]
                before = applied(r, names)
                procs[1].send_signal(signal.SIGKILL)
                procs[1].wait()
                killed = time.monotonic()
                advanced: dict[str, float] = {}
                while len(advanced) < len(theirs) and time.monotonic() - killed < 120:
                    now = applied(r, theirs)
                    for n in theirs:
                        if n not in advanced and now[n] > before[n]:
                            advanced[n] = time.monotonic() - killed
                    time.sleep(0.02)
                time.sleep(args.settle)
            drained = drain_and_stop(r, names, procs, producers.sent)
            checks = verify(r, url, names, producers.sent)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            r.close()
    times = sorted(advanced.values())
    return {
        "backend": kind,
        "models": args.models,
        "victim_models": len(theirs),
        "advanced_again": len(times),
        "lease_ttl_s": WORKER_SETTINGS["lease_ttl_ms"] / 1000,  # type: ignore[operator]
        "resume_p50_s": round(float(np.median(times)), 3) if times else None,
        "resume_max_s": round(max(times), 3) if times else None,
        "drained_after_s": drained,
        **checks,
        "loadavg": os.getloadavg()[0],
    }


def join(kind: str, args: argparse.Namespace, where: Path) -> dict[str, Any]:
    with backend(kind, where / f"join-{kind}") as (url, _):
        r = connect(url)
        names = setup_models(r, args.models)
        procs = [start_worker(url, m, **WORKER_SETTINGS) for m in ("j0", "j1")]
        producers = Producers(r, names, args.period)
        try:
            with producers:
                assert wait_for(lambda: balanced(r, names, ["j0", "j1"]), 120) is not None
                time.sleep(args.settle)
                started = time.monotonic()
                procs.append(start_worker(url, "j2", **WORKER_SETTINGS))
                trio = ["j0", "j1", "j2"]
                first = wait_for(lambda: loads(r, names, trio)[2] > 0, 120)
                settle = wait_for(lambda: balanced(r, names, trio), 120)
                to_balance = time.monotonic() - started
                counts = loads(r, names, trio)
                time.sleep(args.settle)
            drained = drain_and_stop(r, names, procs, producers.sent)
            checks = verify(r, url, names, producers.sent)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            r.close()
    return {
        "backend": kind,
        "models": args.models,
        "seconds_to_first_model": first,
        "seconds_to_balanced_incl_start": round(to_balance, 2) if settle is not None else None,
        "counts_after": counts,
        "drained_after_s": drained,
        **checks,
        "loadavg": os.getloadavg()[0],
    }


# ---------------------------------------------------------------- report
def report(results: dict[str, Any]) -> str:
    lines = [
        "# Scale-out benchmark (`python -m bench.scale`)",
        "",
        f"Run {results['date']} on {results['machine']}; command `{results['command']}`.",
        "The machine is shared (2 cores, other jobs running): the load average is given",
        "with every row. Workers are `python -m service.worker` processes.",
        "",
    ]
    rows = results.get("throughput", [])
    if rows:
        lines += [
            "## Throughput: models spread over 1-3 workers",
            "",
            f"{rows[0]['models']} models (cmtl, d = {D}, {len(TASKS)} tasks), batch entries of "
            f"{ROWS} labelled events. Once balanced, the workers are paused, a backlog of "
            f"{rows[0]['events'] // rows[0]['models']:,} events per model is written, and "
            "the rates are those of draining it.",
            "",
            "How to read it: the machine has 2 cores shared with other jobs, so events/s in",
            "aggregate follows the CPU the workers were given, not their number; the CPU",
            "seconds per event (worker and Redis) are the figures that must stay flat as",
            "workers are added, and the capacity of N workers on N free cores is N times",
            "the events/s one worker reaches per CPU second (1 / worker CPU per event).",
            "",
            "| backend | workers | models/worker max/min | events/s | events/s per worker "
            "| worker CPU µs/event | Redis CPU µs/event | Redis CPU µs/entry read / appended "
            "| drain s | balanced after s | load avg |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            lines.append(
                f"| {row['backend']} | {row['workers']} | {row['models_per_worker_max']}/"
                f"{row['models_per_worker_min']} | {row['events_per_s']:,} | "
                f"{row['events_per_s_per_worker']:,} | {row['worker_cpu_us_per_event']} | "
                f"{row['redis_cpu_us_per_event']} | {row.get('redis_cpu_us_per_entry_read', '-')} / "
                f"{row.get('redis_cpu_us_per_entry_appended', '-')} | {row['drain_s']} | "
                f"{row['seconds_to_balance'] or 0:.1f} | {row['loadavg']:.1f} |"
            )
        lines.append("")
    rows = results.get("kill", [])
    if rows:
        lines += [
            "## Kill -9 of one worker of three",
            "",
            "Steady producers; one worker is killed with SIGKILL. Resume: seconds from the kill",
            "until each of its models' applied count moves again. Then the producers stop, the",
            "logs drain, and every model is checked: events applied = events produced (none",
            "lost, none twice), and the state equal bit for bit to one uninterrupted run of its",
            "log by a single worker.",
            "",
            "| backend | models (victim's) | advanced again | lease TTL s | resume p50 s "
            "| resume max s | events produced | models with events lost or twice "
            "| models not bit-identical | load avg |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            lines.append(
                f"| {row['backend']} | {row['models']} ({row['victim_models']}) | "
                f"{row['advanced_again']} | {row['lease_ttl_s']} | {row['resume_p50_s']} | "
                f"{row['resume_max_s']} | {row['events_produced']:,} | "
                f"{row['models_with_events_lost_or_twice']} | {row['models_not_bit_identical']} | "
                f"{row['loadavg']:.1f} |"
            )
        lines.append("")
    rows = results.get("join", [])
    if rows:
        lines += [
            "## A worker joining",
            "",
            "Two workers and steady producers; a third worker process starts. Seconds from its",
            "start (process start and kernel loading included) to its first model and to a",
            "balanced assignment; then the same exactly-once and bit-identical checks.",
            "",
            "| backend | models | first model after s | balanced after s | counts after "
            "| events produced | models with events lost or twice | models not bit-identical "
            "| load avg |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows:
            first = row["seconds_to_first_model"]
            lines.append(
                f"| {row['backend']} | {row['models']} | "
                f"{'-' if first is None else round(first, 2)} | "
                f"{row['seconds_to_balanced_incl_start']} | "
                f"{'/'.join(map(str, row['counts_after']))} | {row['events_produced']:,} | "
                f"{row['models_with_events_lost_or_twice']} | {row['models_not_bit_identical']} | "
                f"{row['loadavg']:.1f} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--only", choices=["throughput", "kill", "join"], action="append")
    parser.add_argument("--models", type=int, default=60)
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--backends", default="single,cluster")
    parser.add_argument("--backlog", type=int, default=200, help="batch entries per model")
    parser.add_argument("--rows", type=int, default=ROWS, help="events per batch entry")
    parser.add_argument("--period", type=float, default=0.1, help="s between producer rounds")
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--out", default="scale")
    parser.add_argument(
        "--report", action="store_true", help="rebuild the markdown from the JSON and exit"
    )
    args = parser.parse_args(argv)
    if args.report:
        data = json.loads((RESULTS / f"{args.out}.json").read_text())
        (RESULTS / f"{args.out}.md").write_text(report(data))
        return 0
    globals()["ROWS"] = args.rows
    only = args.only or ["throughput", "kill", "join"]
    kinds = args.backends.split(",")
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}",
        "command": "python -m bench.scale " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        if "throughput" in only:
            results["throughput"] = []
            for kind in kinds:
                for n in [int(w) for w in args.workers.split(",")]:
                    row = throughput(kind, n, args, where)
                    print(json.dumps(row), flush=True)
                    results["throughput"].append(row)
        for name, run in (("kill", kill), ("join", join)):
            if name in only:
                results[name] = []
                for kind in kinds:
                    row = run(kind, args, where)
                    print(json.dumps(row), flush=True)
                    results[name].append(row)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(results, indent=1) + "\n")
    (RESULTS / f"{args.out}.md").write_text(report(results))
    print(f"wrote {RESULTS / args.out}.json and .md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
