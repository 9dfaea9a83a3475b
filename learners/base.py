"""The learner contract: :class:`Learner`, :class:`Param` and :class:`LearnerInfo`.

Every algorithm in :mod:`learners` is a subclass of :class:`Learner`. The base
class owns everything that is the same for all of them, so that a new learner
only writes its mathematics:

* validation of ``x`` (:func:`learners.inputs.as_vector`), of the task index and
  of the label, done *before* any state changes, so bad input changes nothing (a
  large dense batch of a learner whose scores show a NaN or infinite value is
  instead checked by its own scores, with the state restored when one is not
  finite: :meth:`Learner._batch_pass`);
* the optional input preprocessing of docs/algorithms.md Sec. 0 (``append_bias``,
  ``l2_normalize``, and ``log_scale`` for the learners that declare it);
* hyperparameter resolution and validation against the class's ``params``;
* the seeded random generator (``numpy.random.PCG64``) from which every random
  draw is taken, and whose state is part of :meth:`Learner.state_dict`;
* the query counter and the optional query ``budget`` of active learners;
* ``state_dict`` / ``from_state_dict`` without pickle: the state is a flat dict
  of numpy arrays and plain scalars/strings.

A subclass declares ``name``, ``summary``, ``paper``, ``params``, ``kind``,
``active`` and ``state_fields`` (attribute names holding its learned state), and
implements ``_init_state``, ``_decision`` and ``_learn`` (and ``_query`` when
active, ``_add_task``, ``_relation``).

Optional capabilities are declared, never probed for. Callers read the flags
(or use :func:`query_probability_reporter` / :func:`outlier_reporter`), and the
conformance suite checks that every flag matches what the class implements:

* :attr:`Learner.is_active` -- :meth:`Learner.query_one` applies a query rule.
  When it is False, ``query_one`` answers True for every input and changes
  nothing, so a caller may skip it (an override of ``query_one`` must keep this);
* ``reports_query_probability`` -- the class has
  ``query_probability(x, task) -> float`` (:class:`QueryProbabilityReporter`):
  the probability with which ``query_one`` would ask now, without drawing;
* ``reports_outliers`` -- the class has ``outlier_scores() -> ndarray (K,)`` and
  ``outlier_tasks() -> list[int]`` (:class:`OutlierReporter`).

>>> import numpy as np, learners
>>> model = learners.make("ipl", n_features=2, n_tasks=2, seed=0)
>>> x = np.array([1.0, 2.0])
>>> model.predict_one(x, task=1)
1
>>> model.learn_one(x, -1, task=1)
>>> model.predict_one(x, task=1), model.decision_one(x, task=1), model.predict_one(x, task=0)
(-1, -5.0, 1)
>>> state = model.state_dict()
>>> state["learner"], all(isinstance(v, np.ndarray | int | float | str | bool) for v in state.values())
('ipl', True)
>>> copy = learners.from_state_dict(state)
>>> copy.decision_one(x, task=1) == model.decision_one(x, task=1)
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, cast

import numpy as np

from learners.inputs import Batch, Vec, as_vector, check_label, check_task, numeric_array
from learners.kernels import all_finite
from learners.params import boolean, non_negative_int, optional, strict_int

__all__ = [
    "APPEND_BIAS",
    "BUDGET",
    "L2_NORMALIZE",
    "LOG_SCALE",
    "STATE_FORMAT",
    "Learner",
    "LearnerInfo",
    "OutlierReporter",
    "Param",
    "QueryProbabilityReporter",
    "RELATION_KINDS",
    "StateValue",
    "outlier_reporter",
    "query_probability_reporter",
]

#: Version of the ``state_dict`` layout; bumped on incompatible changes.
STATE_FORMAT = 1

#: Batches of at most this many rows have their labels and task indices checked in
#: Python, where numpy's reductions would cost more than the check.
_FEW_ROWS = 16
#: What a batch pass returns (:meth:`Learner._batch_pass`).
PassResult = TypeVar("PassResult")

StateValue = np.ndarray | int | float | str | bool | None


@dataclass(frozen=True)
class Param:
    """One hyperparameter: its name, default, description and validator.

    ``check`` receives the user's value and returns the validated (possibly
    converted) value, or raises ``ValueError`` with a message.
    """

    name: str
    default: Any
    description: str
    check: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)

    def resolve(self, value: Any) -> Any:
        """Validate ``value`` for this parameter."""
        if self.check is None:
            return value
        try:
            return self.check(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"invalid value for parameter {self.name!r}: {exc}") from None

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly description."""
        default = self.default
        if isinstance(default, np.ndarray):
            default = default.tolist()
        return {"name": self.name, "default": default, "description": self.description}


@dataclass(frozen=True)
class LearnerInfo:
    """What :func:`learners.available` reports about one registered learner."""

    name: str
    summary: str
    paper: str
    params: tuple[Param, ...]
    kind: str
    active: bool

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly description."""
        return {
            "name": self.name,
            "summary": self.summary,
            "paper": self.paper,
            "kind": self.kind,
            "active": self.active,
            "params": [p.as_dict() for p in self.params],
        }


APPEND_BIAS = Param(
    "append_bias", False, "Append a constant 1 feature to x (docs/algorithms.md Sec. 0).", boolean
)
L2_NORMALIZE = Param(
    "l2_normalize",
    False,
    "Scale x to unit L2 norm, after the bias is appended (docs/algorithms.md Sec. 0).",
    boolean,
)
LOG_SCALE = Param(
    "log_scale",
    False,
    "Replace every value x_j by sign(x_j) log(1 + |x_j|) before the bias and the L2 scaling "
    "(sublinear scaling of counts; docs/algorithms.md Sec. 0).",
    boolean,
)
BUDGET = Param(
    "budget",
    None,
    "Maximum number of labels to query; once spent, query_one answers False and predictions go on. "
    "None means unlimited.",
    optional(non_negative_int),
)


#: The kinds of relation matrix a learner may declare (``Learner.relation_kind``):
#: a fixed or learned interaction matrix of the update rule, committee weights,
#: a covariance of the task weights, a derived cosine similarity (of codes or of
#: weight vectors), or none.
RELATION_KINDS = (
    "none",
    "fixed-interaction",
    "learned-interaction",
    "committee-weights",
    "task-covariance",
    "code-similarity",
    "weight-similarity",
)


class Learner:
    """Base class of every online multitask learner (see the module docstring).

    Parameters
    ----------
    n_features : int
        Input dimension ``d`` (before an optional bias feature is appended).
    n_tasks : int
        Initial number of tasks ``K``; :meth:`add_task` grows it.
    seed : int
        Seed of the learner's own random generator.
    **params
        Hyperparameters, as listed in the class's ``params``.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    #: "classification" (labels in {-1, +1}), "regression" (real targets), or "both"
    #: when a hyperparameter chooses (then :meth:`_label_kind` decides per instance).
    kind: ClassVar[str] = "classification"
    #: The largest magnitude of a regression target the learner takes (None: any finite
    #: value); a larger one raises ``ValueError``, and the service refuses it up front.
    max_target_magnitude: ClassVar[float | None] = None
    #: True when the learner has an active-learning rule. Learners whose rule is
    #: switched by a hyperparameter override :attr:`is_active`.
    active: ClassVar[bool] = False
    #: True when the class has ``query_probability(x, task)`` (:class:`QueryProbabilityReporter`).
    reports_query_probability: ClassVar[bool] = False
    #: True when the class has ``outlier_scores()`` and ``outlier_tasks()`` (:class:`OutlierReporter`).
    reports_outliers: ClassVar[bool] = False
    #: True when ``score_and_learn_one`` runs the same compiled step as
    #: ``score_and_learn_many`` on a preprocessed row; :meth:`per_event_is_batch` says
    #: whether a given instance's two paths agree bit for bit.
    per_event_equals_batch: ClassVar[bool] = False
    #: The numpy reference implementation of a learner that runs on compiled kernels
    #: (same parameters and state layout); :mod:`learners.checks.kernels` compares them.
    reference_class: ClassVar[type[Learner] | None] = None
    #: Hyperparameter sets the conformance suite runs this learner with.
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = ({},)
    #: Attribute names holding the learned state (arrays or plain scalars).
    state_fields: ClassVar[tuple[str, ...]] = ()
    #: Names of conformance checks this learner opts out of, with the reason.
    check_exemptions: ClassVar[Mapping[str, str]] = {}
    #: What :meth:`relation_matrix` returns, one of :data:`RELATION_KINDS` ("none" when it
    #: returns None), and one sentence saying what its entries mean for people.
    relation_kind: ClassVar[str] = "none"
    relation_meaning: ClassVar[str] = "This learner keeps no task relation matrix."
    #: True when every row's score from a batch pass is NaN or infinite wherever the row
    #: holds a NaN or infinite value, the state being finite: each value reaches the score
    #: through a weight (``0 * inf`` is NaN) and the preprocessing keeps it non-finite.
    #: Large dense batches of such a learner skip the NaN/inf check ahead of the pass
    #: (:meth:`_batch_pass`); :func:`learners.checks.common.check_bad_values_of_a_large_batch`
    #: holds every learner that declares it to it.
    scores_show_bad_values: ClassVar[bool] = False
    #: The fewest values (rows x columns) of a dense batch that :meth:`_batch_pass` leaves
    #: unchecked, beside four times the state's (:meth:`state_bytes`): below that the check
    #: reads rows still in the caches, and copying the state costs about what it saves. An
    #: instance may set its own (the conformance check lowers it to run small batches).
    unchecked_batch_values: int = 1 << 18

    def __init__(self, *, n_features: int, n_tasks: int, seed: int = 0, **params: Any) -> None:
        self._n_features = strict_int(n_features, "n_features", 1)
        self._n_tasks = strict_int(n_tasks, "n_tasks", 1)
        self._seed = strict_int(seed, "seed", 0)
        self.hyper = self._resolve_params(params)
        self._bias = bool(self.hyper.get("append_bias", False))
        self._normalize = bool(self.hyper.get("l2_normalize", False))
        self._log_scale = bool(self.hyper.get("log_scale", False))
        self._budget: int | None = self.hyper.get("budget")
        self.label_kind = self._label_kind()
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        self.n_queries_ = 0
        self._init_state()

    # ------------------------------------------------------------ properties
    @property
    def n_tasks(self) -> int:
        """Current number of tasks ``K``."""
        return self._n_tasks

    @property
    def n_features(self) -> int:
        """Input dimension ``d`` (before the optional bias feature)."""
        return self._n_features

    @property
    def dim(self) -> int:
        """Dimension of the preprocessed vectors the mathematics works with."""
        return self._n_features + (1 if self._bias else 0)

    @property
    def is_active(self) -> bool:
        """Whether :meth:`query_one` applies an active-learning rule for this instance.

        When False, :meth:`query_one` answers True for every input and changes
        nothing (no draw, no query counted), so callers may skip calling it.
        """
        return self.active

    def _label_kind(self) -> str:
        """The kind of labels this instance learns: "classification" or "regression"."""
        if self.kind not in ("classification", "regression"):
            raise NotImplementedError("learners of kind 'both' must override _label_kind")
        return self.kind

    @property
    def seed(self) -> int:
        """The generator seed the learner was built with."""
        return self._seed

    @classmethod
    def info(cls) -> LearnerInfo:
        """Registry description of this learner class."""
        return LearnerInfo(cls.name, cls.summary, cls.paper, cls.params, cls.kind, cls.active)

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """An upper estimate of the bytes of the arrays of :meth:`state_dict`.

        Computed from the shape alone, before anything is allocated, so that a
        caller can refuse a model too large for its memory budget. The default
        covers the common shapes: two ``K x (d + 1)`` weight matrices, six
        ``K x K`` matrices (interaction matrix, its inverse, accumulators) and a
        few length-K and length-d vectors, in float64. Families whose state
        has another shape override it.
        """
        d, k = int(n_features) + 1, int(n_tasks)
        return 8 * (2 * k * d + 6 * k * k + 4 * k + 2 * d)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={v!r}" for k, v in self.hyper.items() if not isinstance(v, np.ndarray)
        )
        return (
            f"{type(self).__name__}(name={self.name!r}, n_features={self._n_features}, "
            f"n_tasks={self._n_tasks}, seed={self._seed}{', ' if shown else ''}{shown})"
        )

    # ------------------------------------------------------------ public API
    def decision_one(self, x: Any, task: int) -> float:
        """Signed score of ``x`` for ``task``; never mutates the learner."""
        t = check_task(task, self._n_tasks)
        return float(self._decision(self._prepare(x), t))

    def predict_one(self, x: Any, task: int) -> int | float:
        """Predicted label: ``+1``/``-1`` (ties give ``+1``), or the real value for regression."""
        score = self.decision_one(x, task)
        if self.label_kind == "regression":
            return score
        return 1 if score >= 0.0 else -1

    def learn_one(self, x: Any, y: float, task: int) -> None:
        """Learn from one labelled example. Bad input raises ``ValueError`` and changes nothing."""
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        self._learn(self._prepare(x), label, t)

    def score_and_learn_one(self, x: Any, y: float, task: int) -> float:
        """Test-then-train on one example: returns the score *before* learning, then learns.

        Equals :meth:`decision_one` followed by :meth:`learn_one`, with ``x`` validated
        and canonicalised once (the worker's per-event path). A subclass that overrides
        either public method gets exactly those two calls.
        """
        cls = type(self)
        if cls.decision_one is not Learner.decision_one or cls.learn_one is not Learner.learn_one:
            score = self.decision_one(x, task)
            self.learn_one(x, y, task)
            return score
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        v = self._prepare(x)
        score = float(self._decision(v, t))
        self._learn(v, label, t)
        return score

    def query_one(self, x: Any, task: int) -> bool:
        """The active-learning decision: should the label of ``x`` be asked for?

        Passive learners always answer True without drawing. Active learners draw
        from their own seeded generator; a True answer counts one query against
        the optional ``budget``.
        """
        t = check_task(task, self._n_tasks)
        v = self._prepare(x)
        if not self.is_active:
            return True
        return self._spend_query(lambda: self._query(v, t))

    def _spend_query(self, ask: Callable[[], bool]) -> bool:
        """:meth:`query_one`'s accounting around a rule's draw ``ask``: False once the
        budget is spent (nothing drawn), else ``ask()``, a True answer counted as one
        query. The overrides of :meth:`decide_and_query` go through it too."""
        if self._budget is not None and self.n_queries_ >= self._budget:
            return False
        asked = bool(ask())
        if asked:
            self.n_queries_ += 1
        return asked

    def decide_and_query(
        self, x: Any, task: int, *, probability: bool = False
    ) -> tuple[float, float | None, bool]:
        """:meth:`decision_one`, then (with ``probability``, for a learner that
        ``reports_query_probability``) ``query_probability``, then :meth:`query_one`, on
        the same ``x`` and ``task``: ``(score, probability or None, asked)``, exactly what
        the three calls return in this order, and the same state after them. What an
        unlabelled event costs the worker; a subclass may compute what the calls share
        once (:class:`learners.active.selective.SelectiveSampling` does)."""
        score = self.decision_one(x, task)
        reporter = query_probability_reporter(self) if probability else None
        p = None if reporter is None else float(reporter.query_probability(x, task))
        if not self.is_active and type(self).query_one is Learner.query_one:
            return score, p, True  # what query_one answers, having drawn and changed nothing
        return score, p, self.query_one(x, task)

    def decide_and_query_many(
        self, X: Any, task: Any, *, probability: bool = False
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """:meth:`decide_and_query` over a batch of unlabelled rows: ``(scores,
        probabilities or None, asked)``, one entry per row of ``X`` for ``task`` (one int
        or one per row). The probabilities are returned with ``probability`` by a learner
        that ``reports_query_probability``.

        Row by row, in order, this equals :meth:`decide_and_query`: the same draws from the
        generator, the same answers, the same query count against the budget and the same
        state. The scores are bit for bit those of ``decision_one`` where
        :meth:`per_event_is_batch` holds, else equal to rounding (a compiled pass scores
        the batch where the single row takes a numpy or per-event path). The whole batch
        is validated first, so a bad row raises ``ValueError`` and changes nothing.
        The worker's call for the unlabelled rows of a batch entry (docs/architecture.md,
        "Applying log entries").
        """
        batch = Batch.from_input(X, self._n_features)
        tasks = self._batch_tasks(task, batch.n)
        return self._decide_and_query_batch(X, batch, tasks, probability)

    def learn_many(self, X: Any, y: Any, task: Any) -> None:
        """Learn a batch: rows of ``X`` with labels ``y`` for ``task`` (one int or one per row)."""
        self.score_and_learn_many(X, y, task)

    def score_and_learn_many(self, X: Any, y: Any, task: Any) -> np.ndarray:
        """Test-then-train over a batch; returns each row's score *before* it was learned.

        The result equals calling :meth:`decision_one` then :meth:`learn_one` row by
        row. The whole batch is validated first, so a bad row changes nothing.
        """
        return self._batch_pass(X, y, task, self._score_and_learn_batch)

    def add_task(self) -> int:
        """Add a task at run time; returns its index."""
        self._add_task()
        self._n_tasks += 1
        return self._n_tasks - 1

    def relation_matrix(self) -> np.ndarray | None:
        """The ``K x K`` interaction / relationship matrix, or None if the learner has none."""
        return self._relation()

    def relation_description(self) -> tuple[str, str]:
        """``(kind, meaning)`` of :meth:`relation_matrix` for this instance: the class's
        ``relation_kind`` and ``relation_meaning`` unless a wrapper delegates them."""
        return self.relation_kind, self.relation_meaning

    def task_weights(self) -> np.ndarray | None:
        """The learned per-task linear predictors, shape ``(K, dim)``, or None.

        Row k is the weight vector task k predicts with (for AMLC the committee
        combination, for ROM ``u + p_k + q_k``, for ELLA ``L s_k``). Used for the
        correlation matrix of saha2011 Table 2.
        """
        return self._task_weights()

    def _task_weights(self) -> np.ndarray | None:
        return None

    def clone(self) -> Learner:
        """A fresh, untrained learner with the same hyperparameters, shape and seed."""
        return type(self)(
            n_features=self._n_features, n_tasks=self._n_tasks, seed=self._seed, **self.hyper
        )

    # ----------------------------------------------------------------- state
    def state_dict(self) -> dict[str, StateValue]:
        """The full state as a flat dict of numpy arrays and plain scalars/strings.

        Keys: ``learner``, ``format``, ``n_features``, ``n_tasks``, ``seed``,
        ``rng`` (the generator state as JSON), ``n_queries``, ``param.<name>`` for
        every hyperparameter and ``state.<name>`` for every learned quantity.
        Arrays are copies. No pickle is ever needed to store or load it.
        """
        out: dict[str, StateValue] = {
            "learner": self.name,
            "format": STATE_FORMAT,
            "n_features": self._n_features,
            "n_tasks": self._n_tasks,
            "seed": self._seed,
            "rng": json.dumps(self.rng.bit_generator.state),
            "n_queries": self.n_queries_,
        }
        for key, value in self.hyper.items():
            out[f"param.{key}"] = _plain(value)
        for key, value in self._get_state().items():
            out[f"state.{key}"] = _plain(value)
        return out

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any]) -> Learner:
        """Rebuild a learner from :meth:`state_dict` output."""
        if state.get("learner") != cls.name:
            raise ValueError(f"state is for learner {state.get('learner')!r}, not {cls.name!r}")
        if int(state.get("format", -1)) != STATE_FORMAT:
            raise ValueError(f"unsupported state format {state.get('format')!r}")
        params = {k[6:]: _unplain(v) for k, v in state.items() if k.startswith("param.")}
        learner = cls(
            n_features=int(state["n_features"]),
            n_tasks=int(state["n_tasks"]),
            seed=int(state["seed"]),
            **params,
        )
        learner.rng.bit_generator.state = json.loads(str(state["rng"]))
        learner.n_queries_ = int(state["n_queries"])
        learner._set_state({k[6:]: _unplain(v) for k, v in state.items() if k.startswith("state.")})
        return learner

    # ------------------------------------------------------ subclass hooks
    def _init_state(self) -> None:
        """Allocate the learned state for the current shape."""
        raise NotImplementedError

    def _decision(self, x: Vec, task: int) -> float:
        """Signed score of the preprocessed ``x`` for ``task``."""
        raise NotImplementedError

    def _learn(self, x: Vec, y: float, task: int) -> None:
        """Update from one validated, preprocessed example."""
        raise NotImplementedError

    def _query(self, x: Vec, task: int) -> bool:
        """Active learners: the randomised query decision."""
        raise NotImplementedError

    def _add_task(self) -> None:
        """Grow the state by one task (``self.n_tasks`` is still the old K)."""
        raise NotImplementedError

    def _relation(self) -> np.ndarray | None:
        return None

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        """Default batch path: decision then learn, row by row."""
        scores = np.empty(batch.n)
        for i, (v, label, t) in enumerate(
            zip(batch.rows(), y.tolist(), tasks.tolist(), strict=True)
        ):
            scores[i] = self._decision(v, t)
            self._learn(v, label, t)
        return scores

    def _decide_and_query_batch(
        self, X: Any, batch: Batch, tasks: np.ndarray, probability: bool
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Default :meth:`decide_and_query_many`: :meth:`decide_and_query` row by row on the
        validated ``batch`` (the rows of a 2-D array ``X`` as they are, so that a learner's
        per-event fast path still takes them)."""
        n = batch.n
        rows: Any = X if type(X) is np.ndarray and X.ndim == 2 else batch.rows()
        scores = np.empty(n)
        reported = probability and self.reports_query_probability
        probabilities = np.empty(n) if reported else None
        asked = np.zeros(n, dtype=np.bool_)
        for i, t in enumerate(tasks.tolist()):
            score, p, ask = self.decide_and_query(rows[i], t, probability=probability)
            scores[i] = score
            asked[i] = ask
            if probabilities is not None:
                probabilities[i] = p
        return scores, probabilities, asked

    def _get_state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.state_fields}

    def _set_state(self, state: Mapping[str, Any]) -> None:
        missing = set(self.state_fields) - set(state)
        if missing:
            raise ValueError(f"state is missing {sorted(missing)}")
        for name in self.state_fields:
            value = state[name]
            current = getattr(self, name, None)
            if isinstance(current, np.ndarray):
                setattr(self, name, self._restored_array(name, value, current))
            else:
                setattr(self, name, value)

    def _restored_array(self, name: str, value: Any, current: np.ndarray) -> np.ndarray:
        """The array state field ``name`` holds once restored from ``value``: ``current``
        (the array :meth:`_init_state` allocated) with ``value`` written into it for a field
        of :meth:`_in_place_fields` of the same shape, else a copy in ``current``'s dtype."""
        if name in self._in_place_fields() and np.shape(value) == current.shape:
            current[...] = value
            return current
        return np.array(value, dtype=current.dtype)

    def _in_place_fields(self) -> Collection[str]:
        """State arrays a restore writes into the learner's own arrays (a layout or buffer
        they must keep) rather than replacing them: none here. A large state is then held
        once beside its source during a restore, not also as an intermediate copy."""
        return ()

    # ---------------------------------------------------------- internals
    def _batch_pass(
        self,
        X: Any,
        y: Any,
        task: Any,
        run: Callable[[Batch, np.ndarray, np.ndarray], PassResult],
        *,
        raw: bool = False,
        scores: Callable[[PassResult], np.ndarray] = lambda out: cast(np.ndarray, out),
    ) -> PassResult:
        """Validate a batch (:meth:`_prepare_batch`, ``raw`` as there) and run the pass
        ``run(batch, labels, tasks)`` on it; ``scores`` picks the rows' scores from what
        the pass returns.

        A dense batch of at least :attr:`unchecked_batch_values` values and four times the
        state's, of a learner whose scores show bad values (:attr:`scores_show_bad_values`),
        is not read for NaN or infinite values ahead of the pass. On a block larger than
        the caches that read comes from memory and costs 7-20% of the pass
        (docs/architecture.md, "Large batches"); the pass reads each row anyway. Instead
        the state is copied (:meth:`state_dict`) and the pass runs; when a score comes out NaN or
        infinite, or the pass raises, the copy is restored and the batch runs again,
        checked: a NaN or infinite value then raises ``ValueError`` having changed
        nothing, and finite rows whose score overflowed give what the checked pass gives.
        """
        if not self._skips_value_check(X):
            batch, labels, tasks = self._prepare_batch(X, y, task, raw=raw)
            return run(batch, labels, tasks)
        # numpy's warnings about unchecked values (a row of infinite norm scaled to unit
        # length) are left to the checked run, which reports such a value as an error.
        with np.errstate(all="ignore"):
            batch, labels, tasks = self._prepare_batch(X, y, task, raw=raw, check_finite=False)
            saved = self.state_dict()
            try:
                out = run(batch, labels, tasks)
                if all_finite(scores(out)):
                    return out
            except Exception:  # unchecked values may raise anywhere: the checked run decides
                pass
        self._restore(saved)
        batch, labels, tasks = self._prepare_batch(X, y, task, raw=raw)
        return run(batch, labels, tasks)

    def _skips_value_check(self, X: Any) -> bool:
        """Whether :meth:`_batch_pass` runs the dense batch ``X`` without the NaN/inf check."""
        return (
            self.scores_show_bad_values
            and type(X) is np.ndarray
            and X.ndim == 2
            and (X.dtype == np.float64 or X.dtype == np.float32)
            and X.size >= self.unchecked_batch_values
            and X.size >= self._state_floor()
        )

    def _state_floor(self) -> int:
        """Four times the values of the state (:meth:`state_bytes` / 2), worked out once per
        shape: for a grid of configurations that takes longer than copying the state."""
        shape = (self._n_features, self._n_tasks)
        known = getattr(self, "_state_floor_of", None)
        if known is None or known[0] != shape:
            known = (shape, self.state_bytes(*shape, **self.hyper) // 2)
            self._state_floor_of = known
        return int(known[1])

    def _restore(self, state: Mapping[str, Any]) -> None:
        """Become the learner of ``state`` (:meth:`state_dict` output): every attribute
        is replaced by that of a learner rebuilt from it, caches included, except the
        instance's own :attr:`unchecked_batch_values`."""
        fresh = type(self).from_state_dict(state)
        own = vars(self).get("unchecked_batch_values")
        vars(self).clear()
        vars(self).update(vars(fresh))
        if own is not None:
            self.unchecked_batch_values = own

    @classmethod
    def _resolve_params(cls, given: Mapping[str, Any]) -> dict[str, Any]:
        known = {p.name: p for p in cls.params}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {', '.join(unknown)} for learner {cls.name!r}; "
                f"known: {', '.join(known) or 'none'}"
            )
        out: dict[str, Any] = {}
        for p in cls.params:
            value = given.get(p.name, p.default)
            out[p.name] = p.resolve(value) if p.name in given else value
        cls._check_params(out)
        return out

    @classmethod
    def _check_params(cls, params: dict[str, Any]) -> None:
        """Cross-parameter validation hook (raise ``ValueError``)."""

    def per_event_is_batch(self) -> bool:
        """Whether ``score_and_learn_one`` gives, bit for bit, what ``score_and_learn_many``
        gives for the same row, alone or among others.

        Where it does not (a numpy reference per event beside a compiled pass, equal to
        1e-12), the service's worker learns a single event as a one-row batch, so that a
        row changes the state the same way whether it arrives alone or grouped with others
        (docs/architecture.md, "Applying log entries"). With ``l2_normalize`` the two
        paths differ even for :attr:`per_event_equals_batch` learners: a single row's norm
        is numpy's dot product (BLAS), a batch row's the kernel's own sum, and the two
        may differ in the last bit.
        """
        return self.per_event_equals_batch and not self._normalize

    def _prepare(self, x: Any) -> Vec:
        v = as_vector(x, self._n_features)
        if self._log_scale:
            v = v.log_scaled()
        if self._bias:
            v = v.with_bias()
        if self._normalize:
            v = v.unit_length()
        return v

    def _prepare_batch(
        self, X: Any, y: Any, task: Any, *, check_finite: bool = True, raw: bool = False
    ) -> tuple[Batch, np.ndarray, np.ndarray]:
        """Validate a batch and preprocess it; ``check_finite=False``: see
        :meth:`Batch.from_input`. ``raw``: leave the bias and the unit-length scaling to a
        compiled pass that applies them as it reads each row (``log_scale``, which comes
        first, is still applied here)."""
        batch = Batch.from_input(X, self._n_features, check_finite=check_finite)
        n = batch.n
        labels = numeric_array(y, "labels y").reshape(-1)
        if labels.shape[0] != n:
            raise ValueError(f"y has {labels.shape[0]} labels for {n} rows")
        # A few rows are checked in Python: numpy's reductions cost about 1 us each.
        few = n <= _FEW_ROWS
        if self.label_kind == "classification":
            if few:
                valid = all(v == 1.0 or v == -1.0 for v in labels.tolist())
            else:
                valid = bool((np.abs(labels) == 1.0).all())
            if not valid:
                raise ValueError("labels y must be -1 or +1")
        elif not (all(map(math.isfinite, labels.tolist())) if few else np.isfinite(labels).all()):
            raise ValueError("targets y must be finite")
        tasks = self._batch_tasks(task, n)
        bias, normalize = self._bias and not raw, self._normalize and not raw
        return batch.preprocessed(bias, normalize, self._log_scale), labels, tasks

    def _batch_tasks(self, task: Any, n: int) -> np.ndarray:
        """The task index of each of a batch's ``n`` rows from ``task`` (one index or one per
        row), checked: int64, shape (n,)."""
        if isinstance(task, int | np.integer) and not isinstance(task, bool):
            return np.full(n, check_task(task, self._n_tasks), dtype=np.int64)
        tasks = np.asarray(task)
        if tasks.shape != (n,):
            raise ValueError(f"task must be one index or one per row ({n})")
        if tasks.dtype != np.int64:
            if n and not np.issubdtype(tasks.dtype, np.integer):
                raise ValueError("task indices must be integers")
            tasks = tasks.astype(np.int64)
        if n <= _FEW_ROWS:
            unknown = any(not 0 <= k < self._n_tasks for k in tasks.tolist())
        else:
            unknown = n > 0 and (tasks.min() < 0 or tasks.max() >= self._n_tasks)
        if unknown:
            raise ValueError(f"unknown task in batch: tasks are 0..{self._n_tasks - 1}")
        return tasks


class QueryProbabilityReporter(Protocol):
    """A learner declaring ``reports_query_probability``."""

    def query_probability(self, x: Any, task: int) -> float:
        """The probability with which ``query_one(x, task)`` would ask now (no draw)."""
        ...


class OutlierReporter(Protocol):
    """A learner declaring ``reports_outliers``."""

    def outlier_scores(self) -> np.ndarray:
        """One outlier score per task, shape ``(K,)``."""
        ...

    def outlier_tasks(self) -> list[int]:
        """Indices of the tasks currently flagged as outliers."""
        ...


def query_probability_reporter(learner: Learner) -> QueryProbabilityReporter | None:
    """``learner`` typed as a :class:`QueryProbabilityReporter` when it declares it, else None."""
    return cast(QueryProbabilityReporter, learner) if learner.reports_query_probability else None


def outlier_reporter(learner: Learner) -> OutlierReporter | None:
    """``learner`` typed as an :class:`OutlierReporter` when it declares it, else None."""
    return cast(OutlierReporter, learner) if learner.reports_outliers else None


def _plain(value: Any) -> StateValue:
    """Copy arrays, turn numpy scalars into Python scalars."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, int | float | str | bool):
        return value
    if isinstance(value, list | tuple):
        return np.asarray(value)
    raise TypeError(f"state values must be arrays or plain scalars, got {type(value).__name__}")


def _unplain(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    return value
