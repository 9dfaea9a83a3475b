"""Robust online multitask learning (zhang2018) and the COML baseline.

* ``rom-pgd``: ROM with proximal gradient descent (Algorithm 1, Eqs. 6-10);
* ``rom-rda``: ROM with regularized dual averaging (Algorithm 2, Eqs. 14-22);
* ``coml``: collaborative online multitask learning (Li et al. 2014), a
  reconstruction (docs/algorithms.md Sec. 5.6, [R]).

Their test-then-train passes are compiled (:mod:`learners.rom.kernels`,
``warm()`` compiles them); the numpy rounds stay as ``_learn_reference``.

Every task predicts with ``w_i = u + p_i + q_i`` (shared, individual and
outlier parts). The group-lasso penalty on the columns of ``Q`` keeps ``q_i``
exactly zero for tasks that agree with the shared model, so the ROM learners
report outlier tasks through ``outlier_scores()`` (``||q_i||_2``) and
``outlier_tasks()``.
"""

from __future__ import annotations

from learners.rom.coml import CollaborativeMultitask
from learners.rom.pgd import RobustPGD
from learners.rom.rda import RobustRDA

__all__ = ["CollaborativeMultitask", "RobustPGD", "RobustRDA"]
