"""Learners that take all K instances of a round (cavallanti2010 Secs. 6-7).

* ``mmperc`` — :class:`~learners.multiview.mmperc.MMPerc`, tasks in
  heterogeneous spaces (Sec. 6);
* ``matrix-pnorm`` — :class:`~learners.multiview.matrix_pnorm.MatrixPNormPerceptron`,
  the 2p-norm matrix Perceptron (Sec. 7);
* ``multiview-independent`` and ``multiview-concat`` — the baselines.

The round contract (``decision_views``, ``learn_views``, ...) is in
:mod:`learners.multiview.contract`; docs/algorithms.md Secs. 1.5-1.7.

    >>> import numpy as np, learners
    >>> model = learners.make("mmperc", n_features=2, n_tasks=2, task_dims=[2, 3])
    >>> views = [np.array([1.0, 0.0]), np.array([0.0, 1.0, 0.0])]
    >>> model.score_and_learn_views(views, -1, task=0)
    0.0
    >>> model.predict_views(views, task=1)
    -1
"""

from __future__ import annotations

from learners.multiview.baselines import ConcatenatedPerceptron, IndependentViewPerceptrons
from learners.multiview.contract import MultiviewLearner
from learners.multiview.matrix_pnorm import MatrixPNormPerceptron
from learners.multiview.mmperc import MMPerc

__all__ = [
    "ConcatenatedPerceptron",
    "IndependentViewPerceptrons",
    "MMPerc",
    "MatrixPNormPerceptron",
    "MultiviewLearner",
]
