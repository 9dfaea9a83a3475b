"""Processes sharing the kernel warm-ups take a family only once its dependencies are
compiled (learners.warm_claims)."""

from __future__ import annotations

import threading
import time

from learners.kernels import _WARMUPS
from learners.registry import discover
from learners.warm_claims import claimed_warmups, dependencies, family_name


def _registered() -> dict[str, set[str]]:
    discover()
    return dependencies(list(_WARMUPS))


def test_the_families_that_call_another_familys_kernels_depend_on_it():
    needs = _registered()
    assert "learners.adaptive.kernels.warm" in needs["learners.adaptive.event_kernels.warm"]
    assert "learners.adaptive.kernels.warm" in needs["learners.active.adaptive_kernels.warm"]
    assert (
        "learners.active.adaptive_kernels.warm"
        in needs["learners.active.adaptive_event_kernels.warm"]
    )
    assert "learners.amlc.kernels.warm" in needs["learners.amlc.event_kernels.warm"]
    assert needs["learners.kernels.warm_input_checks"] == set()


def test_the_dependencies_of_the_registered_families_have_no_cycle():
    needs = _registered()
    done: set[str] = set()
    while len(done) < len(needs):
        ready = {name for name, deps in needs.items() if name not in done and deps <= done}
        assert ready, f"a cycle among {sorted(set(needs) - done)}"
        done |= ready


def _family(name: str, log: list[tuple[str, str, float]], seconds: float):
    def warm() -> None:
        log.append((name, "start", time.monotonic()))
        time.sleep(seconds)
        log.append((name, "end", time.monotonic()))

    warm.__qualname__ = name
    return warm


def _run_side_by_side(fns, claims, needs, wait_limit_s=60.0) -> list[list[str]]:
    taken: list[list[str]] = [[], []]

    def process(i: int) -> None:
        for fn in claimed_warmups(fns, claims, wait_limit_s, needs):
            taken[i].append(family_name(fn))
            fn()

    threads = [threading.Thread(target=process, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return taken


def test_a_family_waits_for_its_dependency_and_the_other_process_takes_what_is_ready(
    tmp_path,
):
    log: list[tuple[str, str, float]] = []
    base, entries, other = (
        _family("base", log, 1.0),
        _family("entries", log, 0.0),
        _family("other", log, 0.1),
    )
    name = family_name
    needs = {name(entries): {name(base)}}
    taken = _run_side_by_side([base, entries, other], tmp_path, needs)
    assert sorted(taken[0] + taken[1]) == sorted(name(f) for f in (base, entries, other))
    when = {(family, what): t for family, what, t in log}
    # "entries" registered before "other", yet started only after "base" ended
    assert when[("entries", "start")] >= when[("base", "end")]
    assert when[("other", "start")] < when[("base", "end")]
    assert {p.name for p in tmp_path.iterdir() if p.name.endswith(".done")} == {
        f"{name(f)}.done" for f in (base, entries, other)
    }


def test_a_dependency_that_never_completes_is_waited_for_only_up_to_the_limit(tmp_path):
    log: list[tuple[str, str, float]] = []
    base, entries = _family("base", log, 0.0), _family("entries", log, 0.0)
    (tmp_path / family_name(base)).touch()  # claimed by a process that died
    start = time.monotonic()
    taken = list(
        claimed_warmups([base, entries], tmp_path, 0.3, {family_name(entries): {family_name(base)}})
    )
    assert [family_name(f) for f in taken] == [family_name(entries)]
    assert 0.3 <= time.monotonic() - start < 5.0
