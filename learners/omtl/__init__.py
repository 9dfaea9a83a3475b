"""Learned task relationships: saha2011's OMTL learners and BATCHOPT.

* :mod:`learners.omtl.numerics` — symmetric eigendecomposition helpers with
  eigenvalue floors (inverse, log, exp, square root, trace normalisation);
* :mod:`learners.omtl.updates` — the A updates of Eqs. (3.7)-(3.10) and the
  incremental Gram matrix, as pure functions;
* :mod:`learners.omtl.learners` — ``omtl-logdet``, ``omtl-vonneumann``,
  ``omtl-cov`` and ``batchopt`` (Algorithm 1, with the Sec. 4 active variant);
* :mod:`learners.omtl.kernels` — the compiled pass (numba): weight updates and,
  at Algorithm 1's rounds, the A updates; ``warm()`` compiles it;
* :mod:`learners.omtl.a_kernels` — the A updates of Eqs. (3.7)-(3.10) compiled,
  the twins of :mod:`learners.omtl.updates` that the pass calls;
* :mod:`learners.omtl.eigen` — the compiled symmetric eigendecomposition of
  the small K x K matrices those updates diagonalise;
* :mod:`learners.omtl.compiled` — what the compiled paths of the OMTL, ROM and
  ELLA families share (kernel rows, row primitives, :class:`CompiledLearner`).
"""

from __future__ import annotations

from learners.omtl.learners import (
    BatchOptimal,
    OMTLCovariance,
    OMTLLogDet,
    OMTLVonNeumann,
    TaskRelationships,
)

__all__ = ["BatchOptimal", "OMTLCovariance", "OMTLLogDet", "OMTLVonNeumann", "TaskRelationships"]
