"""Offline evaluation: datasets, evaluation protocols and learner comparison.

* :mod:`service.evaluation.dataset` — the in-memory :class:`Dataset`;
* :mod:`service.evaluation.catalog` — dataset names (``NAME:key=value``) and ``.npz`` paths;
* :mod:`service.evaluation.protocols` — the evaluation protocols (plug-ins);
* :mod:`service.evaluation.common` — helpers shared by protocols (learner set-up,
  passes over a stream, aggregation over runs, per-task tables);
* :mod:`service.evaluation.compare` — several learners on the same shuffles.

Nothing in :mod:`learners` imports this package.
"""
