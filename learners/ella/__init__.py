"""The ELLA family: a shared basis ``L`` and sparse task codes ``s_t`` (ruvolo2014).

* :mod:`learners.ella.base_learners` — single-task fits ``(theta_t, D_t)``;
* :mod:`learners.ella.lasso` — the sparse-coding step (Eq. 11);
* :mod:`learners.ella.gsvd` — the GSVD atom update (Eqs. 8-10);
* :mod:`learners.ella.accumulators` — ELLA's ``A``, ``b`` and its basis updates;
* :mod:`learners.ella.model` — the streaming learner shared by all variants;
* :mod:`learners.ella.variants` — ``ella``, ``ella-svd``, ``ella-incremental``,
  ``ella-dual`` and ``mtl-svd``.
"""
