"""Learner quality against Vowpal Wabbit and River: ``python -m bench.quality``.

Two parts, one command (see :mod:`bench.quality.__main__`):

* :mod:`bench.quality.online` — the online test-then-train mistake rate on seven
  streams (:mod:`bench.quality.streams`), every system on the same event orders,
  each tuned on a separate shuffle; our learners (:mod:`bench.quality.ours`) and
  the peers (:mod:`bench.quality.peers`);
* :mod:`bench.quality.labels` — label-efficiency curves (test accuracy and AUC
  against labels used) of our active learners against VW trained passively on a
  random sample of the same size and VW ``--active``.

:mod:`bench.quality.stats` holds the confidence intervals, :mod:`bench.quality.report`
writes ``bench/results/quality*.{md,json,png}``.
"""
