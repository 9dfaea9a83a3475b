"""Throughput and latency: the learners alone (:mod:`bench.perf.throughput`, per-event
costs) and the service end to end (:mod:`bench.perf.e2e`). See bench/README.md."""
