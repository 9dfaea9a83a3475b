"""Selective sampling (Cesa-Bianchi, Gentile & Zaniboni 2006) around any margin learner.

The rule (docs/algorithms.md Sec. 6; the active rule of saha2011 Sec. 4 and the
"Independent" baseline of AMLC): with ``p = margin(x, task)`` the base learner's
signed score, draw ``Z ~ Bernoulli(b / (b + |p|))`` from the learner's own
seeded generator; ask for the label when ``Z = 1``. What happens with the label
is the base learner's business (a Perceptron updates only on a mistake).

``b`` is fixed (default 1) or adaptive (DOGMA's ``k_sel_ada_perc_train``):
``b_t = b * R_t^2 * sqrt(1 + n_updates)`` with ``R_t^2 = max(||x_t||^2, R^2 at the
last update)``, both kept per task.

Extension point
---------------
:class:`SelectiveSampling` is built to be subclassed by fixed-base variants.
A subclass overrides :meth:`SelectiveSampling._base_spec` (which learner to
wrap, with which hyperparameters) and declares its own ``params`` (use
:func:`default_on` to switch the input preprocessing on). It may also override
:meth:`SelectiveSampling._margin` (the score the rule looks at) or
:meth:`SelectiveSampling._threshold` (the ``b`` of a round). Everything else
(state, tasks, batches, budget) is inherited. For example, AMLC's per-task
"Independent" baseline (own weights, b = 1, bias + L2 on;
:mod:`learners.amlc.independent`) is essentially::

    @register
    class Independent(SelectiveSampling):
        \"\"\"Per-task selective-sampling Perceptron (docs/algorithms.md Sec. 3.2).\"\"\"

        name = "independent"
        summary = "..."
        paper = "..."
        params = (SAMPLING_B, ADAPTIVE_B, BUDGET, default_on(APPEND_BIAS), default_on(L2_NORMALIZE))
        conformance_params = ({},)

        def _base_spec(self) -> tuple[str, dict[str, Any]]:
            return "ipl", {}
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from learners.active.kernels import B_FAMILY, MATRIX, ROWS, KernelPass, selective_pass
from learners.active.rounds import ActiveLearner
from learners.base import APPEND_BIAS, BUDGET, L2_NORMALIZE, LOG_SCALE, Learner, Param
from learners.inputs import Batch, Vec, as_vector, check_task
from learners.params import boolean, positive
from learners.registry import from_state_dict, get, make, register

if TYPE_CHECKING:
    from learners.adaptive.learners import AdaptiveLearner

__all__ = [
    "ADAPTIVE_B",
    "BASE",
    "BASE_PARAMS",
    "CESA_BIANCHI2006",
    "SAMPLING_B",
    "SelectiveSampling",
    "default_on",
]

CESA_BIANCHI2006 = (
    "Cesa-Bianchi, Gentile, Zaniboni. Worst-Case Analysis of Selective Sampling for Linear "
    "Classification. JMLR 7, 2006"
)

#: Hyperparameters the wrapper owns; the base learner may not set them itself.
_WRAPPER_OWNED = frozenset({"append_bias", "l2_normalize", "log_scale", "budget"})
#: A selector's pruning, which a base does not do: the active passes run its whole grid.
_BASE_RUNS_WHOLE = frozenset({"prune", "prune_every"})


def _registered_name(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise ValueError(f"must be a learner name, got {v!r}")
    return v


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def json_object(v: Any) -> str:
    """A JSON object given as a string or a mapping, returned as canonical JSON text."""
    if isinstance(v, str):
        obj = json.loads(v)
    elif isinstance(v, Mapping):
        obj = dict(v)
    else:
        raise ValueError(f"must be a JSON object (string or dict), got {type(v).__name__}")
    if not isinstance(obj, dict):
        raise ValueError(f"must be a JSON object, got {type(obj).__name__}")
    return json.dumps(obj, sort_keys=True, default=_jsonable)


#: The wrapper's ``append_bias``: off by default, on when the base's own default is on.
BIAS_AS_BASE = dataclasses.replace(
    APPEND_BIAS,
    description="Append a constant 1 feature to x (docs/algorithms.md Sec. 0). When not given: "
    "the base's own default (on for the adaptive learners, which append a bias themselves; "
    "off for the Perceptron learners).",
)


def default_on(param: Param) -> Param:
    """The same boolean parameter with default True (e.g. ``append_bias`` for a subclass)."""
    return dataclasses.replace(param, default=True)


BASE = Param(
    "base",
    "ipl",
    "Registry name of the passive margin learner to make active (e.g. ipl, cmtl, stl).",
    _registered_name,
)
BASE_PARAMS = Param(
    "base_params",
    "{}",
    "Hyperparameters of the base learner as a JSON object, e.g. '{\"b\": 2.0}' (a dict is "
    "accepted and stored as JSON text). Input preprocessing and budget belong to the wrapper.",
    json_object,
)
SAMPLING_B = Param(
    "b",
    1.0,
    "Sampling aggressiveness: query with probability b / (b + |margin|) (larger asks more).",
    positive,
)
ADAPTIVE_B = Param(
    "adaptive_b",
    False,
    "Scale b per task as b * R^2 * sqrt(1 + updates) (DOGMA's adaptive rule, docs/algorithms.md Sec. 6).",
    boolean,
)


def _check_base_class(cls: type[Learner]) -> None:
    if cls.kind == "regression":
        raise ValueError(f"base learner {cls.name!r} is a regression learner, not a classifier")


def _probability(b: float, margin: float) -> float:
    """The query probability ``b / (b + |margin|)`` (1 where the denominator is not positive)."""
    denominator = b + abs(margin)
    return 1.0 if denominator <= 0.0 else b / denominator


def _adaptive(base: Learner) -> AdaptiveLearner | None:
    """``base`` as an adaptive learner, or None. (Imported here: :mod:`learners.adaptive`
    imports the active kernels, whose package imports this module.)"""
    from learners.adaptive.learners import AdaptiveLearner

    return base if isinstance(base, AdaptiveLearner) else None


def _is_mistake(score: float, y: float) -> bool:
    return (score >= 0.0) != (y > 0.0)


_NO_VECTOR = np.zeros(0)
_NO_MATRIX = np.zeros((0, 0))

#: What :func:`_kernel_base` returns: ``(form, W, s, Ainv, pooled, beta, 1 + b)``.
KernelBase = tuple[int, np.ndarray, np.ndarray, np.ndarray, bool, float, float]


def _kernel_base(base: Learner) -> KernelBase | None:
    """The base learner's state in the form :func:`~learners.active.kernels.selective_pass`
    updates in place, or None when the kernel does not know its update."""
    name = base.name
    state = vars(base)
    if name == "ipl" and "W_" in state:
        return ROWS, state["W_"], _NO_VECTOR, _NO_MATRIX, False, 0.0, 1.0
    if name in ("stl", "pt-global") and "w_" in state:
        pooled = state["w_"].reshape(1, -1)  # a view: the kernel updates w_ in place
        return ROWS, pooled, _NO_VECTOR, _NO_MATRIX, True, 0.0, 1.0
    if name != "cmtl":
        return None
    if "V_" in state and "s_" in state:
        b = base.hyper["b"]
        b = float(base.n_tasks if b is None else b)
        return B_FAMILY, state["V_"], state["s_"], _NO_MATRIX, False, b / base.n_tasks, 1.0 + b
    if "W_" in state and "Ainv_" in state:
        return MATRIX, state["W_"], _NO_VECTOR, state["Ainv_"], False, 0.0, 1.0
    return None


def _keeps_the_rule(cls: type[SelectiveSampling]) -> bool:
    """Whether ``cls`` keeps the sampling rule the kernel implements (no hook overridden)."""
    return all(
        getattr(cls, hook) is getattr(SelectiveSampling, hook)
        for hook in ("_margin", "_threshold", "_query", "_learn", "_decision")
    )


@register
class SelectiveSampling(ActiveLearner):
    """Selective sampling: query with probability ``b / (b + |margin|)`` (docs/algorithms.md Sec. 6).

    Wraps a passive margin learner of the registry (``base``, default ``ipl``;
    its hyperparameters in ``base_params``). Per round: ``p = margin`` of the
    base learner for the round's task; ``query_one`` draws
    ``Z ~ Bernoulli(b / (b + |p|))`` from this learner's generator; on ``Z = 1``
    the caller passes the label to ``learn_one``, which hands it to the base
    learner (a Perceptron base updates only on a mistake, Cesa-Bianchi et al.
    2006, Fig. 1). With ``base="cmtl"`` this is the active CMTL of saha2011
    Sec. 4 with a fixed ``b``. ``b -> inf`` queries every label (the plain base).

    Adaptive ``b`` (``adaptive_b=True``): ``b_t = b R_t^2 sqrt(1 + n_k)`` with
    ``R_t^2 = max(||x_t||^2, R_k^2)``, where ``n_k`` counts the queried mistakes of
    task k (the updates of a mistake-driven base) and ``R_k^2`` is ``R_t^2`` at the
    last of them. When ``b_t + |p| = 0`` (a zero vector before any update) the
    label is asked for.

    Input preprocessing (``log_scale``, ``append_bias``, ``l2_normalize``) is done
    once by the wrapper; the base learner is built on the preprocessed dimension
    with its own preprocessing off. All three are off by default, as for the
    Perceptron learners, except ``append_bias`` over a base whose own bias is on by
    default (the adaptive learners): it stays on (:data:`BIAS_AS_BASE`).

    Batches (``score_and_learn_many``, ``query_and_learn_many``) run the compiled
    :func:`learners.active.kernels.selective_pass` when the base is a Perceptron
    the kernel knows (``ipl``, ``stl``, ``pt-global``, ``cmtl`` in either form) and
    no subclass changes the rule; other bases go row by row through the numpy path
    (labelled batches with a fixed ``b`` through the base's own batch path).

    Attributes
    ----------
    base_ : Learner
        The wrapped learner; its full ``state_dict`` is part of this one's
        (keys ``state.base.*``).
    n_updates_ : ndarray of int64, shape (K,)
        Adaptive b: queried mistakes per task.
    radius2_ : ndarray, shape (K,)
        Adaptive b: ``R_k^2`` per task.
    """

    name = "selective-sampling"
    summary = "Selective sampling: makes a margin learner active, query w.p. b/(b+|margin|)"
    paper = f"{CESA_BIANCHI2006}; active rule of saha2011 Sec. 4"
    active = True
    reports_query_probability = True
    params: ClassVar[tuple[Param, ...]] = (
        BASE,
        BASE_PARAMS,
        SAMPLING_B,
        ADAPTIVE_B,
        BUDGET,
        BIAS_AS_BASE,
        L2_NORMALIZE,
        LOG_SCALE,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"base": "cmtl", "base_params": {"b": 2.0}, "adaptive_b": True},
        {"base": "stl", "b": 0.5, "append_bias": True, "l2_normalize": True},
        {"base": "cmtl", "log_scale": True, "l2_normalize": True},
        {"base": "adaptive-logistic", "log_scale": True, "l2_normalize": True, "b": 0.5},
        {"base": "pa-individual", "base_params": '{"variant": "pa2"}'},
    )
    state_fields: ClassVar[tuple[str, ...]] = ("n_updates_", "radius2_")
    #: Whether a subclass's ``_margin`` is its ``_decision``, the same number
    #: (:meth:`decide_and_query` then reads the margin once).
    margin_is_decision: ClassVar[bool] = False

    base_: Learner

    @classmethod
    def _resolve_params(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`Learner._resolve_params`, with ``append_bias``, when not given, on for a
        base whose own ``append_bias`` defaults on (:data:`BIAS_AS_BASE`): the wrapper
        switches the base's bias off, so without this an adaptive base would lose it."""
        if "append_bias" not in given and any(p is BIAS_AS_BASE for p in cls.params):
            base_param = next((p for p in cls.params if p.name == "base"), None)
            name = given.get("base", base_param.default if base_param else None)
            try:
                base_params = get(name).params if isinstance(name, str) else ()
            except ValueError:
                base_params = ()  # an unknown base: the usual resolution reports it
            if any(p.name == "append_bias" and p.default is True for p in base_params):
                given = {**given, "append_bias": True}
        return super()._resolve_params(given)

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> None:
        if "base" not in params:
            return
        base_cls = get(params["base"])
        _check_base_class(base_cls)
        base_params = json.loads(params.get("base_params", "{}"))
        owned = sorted(_WRAPPER_OWNED & set(base_params))
        if owned:
            raise ValueError(
                f"base_params may not set {', '.join(owned)}: give them to the wrapper"
            )
        pruning = sorted(_BASE_RUNS_WHOLE & set(base_params))
        if pruning:
            raise ValueError(
                f"base_params may not set {', '.join(pruning)}: an active learner's passes "
                "run its base's whole grid (docs/algorithms.md Sec. 11.9)"
            )
        base_cls._resolve_params(base_params)

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """The base learner's state on ``d + 1`` features and two length-K vectors
        (a subclass without a ``base`` hyperparameter wraps ``ipl``)."""
        hyper = cls._resolve_params(params)
        base_params = json.loads(hyper.get("base_params", "{}"))
        base = get(str(hyper.get("base", "ipl"))).state_bytes(
            int(n_features) + 1, n_tasks, **base_params
        )
        return base + 16 * int(n_tasks)

    # ------------------------------------------------------------ extension points
    def _base_spec(self) -> tuple[str, dict[str, Any]]:
        """The base learner's registry name and hyperparameters (override in subclasses)."""
        return str(self.hyper["base"]), json.loads(self.hyper["base_params"])

    def _margin(self, x: Vec, task: int) -> float:
        """The signed score the sampling rule looks at: the base learner's decision."""
        return float(self.base_._decision(x, task))

    def _threshold(self, x: Vec, task: int) -> float:
        """The ``b`` of this round: fixed, or ``b R_t^2 sqrt(1 + n_k)`` when adaptive."""
        b = float(self.hyper["b"])
        if not self.hyper["adaptive_b"]:
            return b
        r2 = max(x.sqnorm(), float(self.radius2_[task]))
        return b * r2 * float(np.sqrt(1.0 + self.n_updates_[task]))

    # ------------------------------------------------------------ public extras
    def query_probability(self, x: Any, task: int) -> float:
        """The probability ``b / (b + |margin|)`` with which :meth:`query_one` would ask now."""
        t = check_task(task, self.n_tasks)
        return self._query_probability(self._prepare(x), t)

    def decide_and_query(
        self, x: Any, task: int, *, probability: bool = False
    ) -> tuple[float, float | None, bool]:
        """:meth:`learners.base.Learner.decide_and_query` with the query probability
        computed once: ``query_probability`` and ``query_one`` would each compute
        ``b / (b + |margin|)`` from the same state (a margin is a base step's score, or
        a committee's). The same numbers, draw and query count as the three calls. A
        subclass with another draw (PEER's two) takes the three calls."""
        if not (type(self)._shared_probability() and self.is_active):
            return super().decide_and_query(x, task, probability=probability)
        v = as_vector(x, self.n_features)  # validated once: both calls start with this
        t = check_task(task, self.n_tasks)
        prepared = self._prepare(v)
        if self._score_is_margin():  # one margin: the score is the rule's margin
            score = float(self._decision(prepared, t))
            p = _probability(self._threshold(prepared, t), score)
        else:
            score = self.decision_one(v, t)
            p = self._query_probability(prepared, t)
        asked = self._spend_query(lambda: self.rng.random() < p)  # _query's draw with this p
        return score, (p if probability else None), asked

    def _draws_against_scores(self) -> bool:
        """:meth:`decide_and_query`'s one-margin form (:meth:`_score_is_margin`) with a fixed
        ``b``: one draw against ``b / (b + |score|)``."""
        cls = type(self)
        return (
            cls.decide_and_query is SelectiveSampling.decide_and_query
            and cls._threshold is SelectiveSampling._threshold
            and not self.hyper["adaptive_b"]
            and cls._shared_probability()
            and self.is_active
            and self._score_is_margin()
        )

    def _scores_batches(self) -> bool:
        """The rule's own pass, or, over an adaptive base (which has no selective pass), the
        base's scoring pass (:meth:`_unlabelled_scores`)."""
        return self._compiled() or _adaptive(self.base_) is not None

    def _unlabelled_scores(self, batch: Batch, tasks: np.ndarray) -> np.ndarray:
        """Every row's score without learning: the rule's pass, or the adaptive base's
        scoring pass on the rows as the rule prepares them (the base's own preprocessing is
        off), the score its ``_decision`` gives a row to rounding."""
        base = _adaptive(self.base_)
        if self._compiled() or base is None:
            return super()._unlabelled_scores(batch, tasks)
        batch = batch.preprocessed(False, False, self._log_scale)
        return base._kernel_scores(
            batch, np.array(tasks, dtype=np.int64), self._bias, self._normalize
        )

    def _score_probabilities(self, scores: np.ndarray) -> np.ndarray:
        """:func:`_probability` of every row's score with the fixed ``b``."""
        b = float(self.hyper["b"])
        denominator = b + np.abs(scores)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(denominator <= 0.0, 1.0, b / denominator)

    def _score_is_margin(self) -> bool:
        """Whether ``decision_one`` returns the numpy ``_decision`` and that number is
        the rule's ``_margin``, computed the same way (:attr:`margin_is_decision`, or
        neither hook overridden), so that the query probability may be taken from it."""
        cls = type(self)
        same = cls.margin_is_decision or (
            cls._margin is SelectiveSampling._margin
            and cls._decision is SelectiveSampling._decision
        )
        return (
            same
            and not self._kernel_scores()
            and cls.decision_one is ActiveLearner.decision_one
            and cls._query_probability is SelectiveSampling._query_probability
        )

    @classmethod
    def _shared_probability(cls) -> bool:
        """Whether ``cls`` keeps this class's draw, ``query_probability`` and the base
        class's ``query_one``, so that :meth:`decide_and_query` may compute the
        probability once for the two."""
        return (
            cls._query is SelectiveSampling._query
            and cls.query_probability is SelectiveSampling.query_probability
            and cls.query_one is Learner.query_one
        )

    # ------------------------------------------------------------ learner hooks
    def _init_state(self) -> None:
        name, params = self._base_spec()
        # The wrapper preprocesses x once; a base whose own preprocessing defaults on
        # (the adaptive learners append a bias) must not apply it a second time.
        known = {p.name for p in get(name).params}
        off = ("append_bias", "l2_normalize", "log_scale")
        params = {**params, **{p: False for p in off if p in known}}
        if "prune" in known:  # a selector base runs its whole grid (docs/algorithms.md 11.9)
            params["prune"] = 0.0
        base = make(name, n_features=self.dim, n_tasks=self.n_tasks, seed=self.seed, **params)
        _check_base_class(type(base))
        if base.is_active:
            raise ValueError(f"base learner {name!r} is already active")
        if base.label_kind != "classification":
            raise ValueError(f"base learner {name!r} must be a classifier")
        self.base_ = base
        self.n_updates_ = np.zeros(self.n_tasks, dtype=np.int64)
        self.radius2_ = np.zeros(self.n_tasks)

    def _query_probability(self, x: Vec, task: int) -> float:
        return _probability(self._threshold(x, task), self._margin(x, task))

    def _query(self, x: Vec, task: int) -> bool:
        p = self._query_probability(x, task)
        return bool(self.rng.random() < p)

    def _decision(self, x: Vec, task: int) -> float:
        return float(self.base_._decision(x, task))

    def _learn(self, x: Vec, y: float, task: int) -> None:
        if self.hyper["adaptive_b"] and _is_mistake(self._decision(x, task), y):
            self.n_updates_[task] += 1
            self.radius2_[task] = max(float(self.radius2_[task]), x.sqnorm())
        self.base_._learn(x, y, task)

    # ------------------------------------------------------------ compiled pass
    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        if self._compiled():
            return self._kernel_pass(batch, y, tasks, active=False)[0]
        if self.hyper["adaptive_b"]:
            return self._score_and_learn_reference(batch, y, tasks)
        return self.base_._score_and_learn_batch(batch, y, tasks)

    def _compiled(self) -> bool:
        return _keeps_the_rule(type(self)) and _kernel_base(self.base_) is not None

    def _run_kernel(self, call: KernelPass) -> tuple[int, int]:
        spec = _kernel_base(self.base_)
        assert spec is not None
        drawn, asked, mistakes = selective_pass(
            *spec,
            call,
            float(self.hyper["b"]),
            0.0,
            bool(self.hyper["adaptive_b"]),
            self.n_updates_,
            self.radius2_,
        )
        self.base_.n_mistakes_ += mistakes  # type: ignore[attr-defined]
        return drawn, asked

    def _add_task(self) -> None:
        self.base_.add_task()
        self.n_updates_ = np.append(self.n_updates_, 0)
        self.radius2_ = np.append(self.radius2_, 0.0)

    def _relation(self) -> np.ndarray | None:
        return self.base_.relation_matrix()

    def relation_description(self) -> tuple[str, str]:
        """The base learner's: the relation matrix is the base's."""
        return self.base_.relation_description()

    def _task_weights(self) -> np.ndarray | None:
        return self.base_.task_weights()

    # ------------------------------------------------------------ state
    def _get_state(self) -> dict[str, Any]:
        state = super()._get_state()
        for key, value in self.base_.state_dict().items():
            state[f"base.{key}"] = value
        return state

    def _set_state(self, state: Mapping[str, Any]) -> None:
        super()._set_state(state)
        sub = {k[len("base.") :]: v for k, v in state.items() if k.startswith("base.")}
        if not sub:
            raise ValueError("state has no base learner (keys state.base.*)")
        base = from_state_dict(sub)
        if type(base) is not type(self.base_):
            raise ValueError(f"state holds base {base.name!r}, expected {self.base_.name!r}")
        self.base_ = base
