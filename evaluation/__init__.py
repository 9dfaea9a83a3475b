"""Offline evaluation: datasets, evaluation protocols and learner comparison.

* :mod:`evaluation.dataset` — the in-memory :class:`Dataset`;
* :mod:`evaluation.catalog` — dataset names (``NAME:key=value``) and ``.npz`` paths;
* :mod:`evaluation.protocols` — the evaluation protocols (plug-ins);
* :mod:`evaluation.common` — helpers shared by protocols (learner set-up,
  passes over a stream, aggregation over runs, per-task tables);
* :mod:`evaluation.compare` — several learners on the same shuffles.

It imports :mod:`learners` and never the service; nothing in :mod:`learners`
imports it (tests/test_layering.py checks both directions).
"""
