"""Benchmarks run by command (``make bench``), never by the test suite; see bench/README.md.

* :mod:`bench.papers` — one module per paper, reproducing its tables and figures;
* :mod:`bench.perf` — throughput and latency of the learners and of the service.

Every benchmark writes its results under :data:`RESULTS` (``bench/results/``).
"""

from pathlib import Path

#: Where every benchmark writes its results (committed with the code).
RESULTS = Path(__file__).resolve().parent / "results"
