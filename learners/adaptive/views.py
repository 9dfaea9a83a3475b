"""``adaptive-auto``: online selection over configurations *and* input scalings.

Text streams and dense numeric streams want different inputs: on term counts a
model of log-scaled, unit-length rows makes far fewer mistakes (spam15, tdt2),
on others the rows without the unit-length scaling do (sentiment4, landmine;
docs/algorithms.md Sec. 11.8). ``adaptive-auto`` runs the configuration grid of
:class:`AdaptiveSelector` once per input view, side by side:

* ``raw``: the rows as given (after the optional bias feature);
* ``l2``: every row scaled to unit Euclidean length (after the bias feature);
* ``log``: every value ``x_j`` replaced by ``sign(x_j) log(1 + |x_j|)``
  (the bias feature stays 1);
* ``log-l2``: ``log``, then scaled to unit length;
* ``log-quad``: ``log``, then every pairwise product of the log-scaled features
  appended (a quadratic model; :mod:`learners.adaptive.products`), for rows of at
  most :data:`QUAD_MAX_FEATURES` features.

The default, ``views=auto``, is ``log`` and ``log-l2``, and ``log-quad`` too
when the rows have at most :data:`QUAD_AUTO_MAX_FEATURES` features. Each view is an ``adaptive``
selector of its own (docs/algorithms.md Sec. 11.4): it predicts with its
configuration with the fewest progressive mistakes. On top, the learner
predicts with the view whose own predictions made the fewer
progressive-validation mistakes so far (the first view on ties), Sec. 11.8.
Every view learns every labelled row. The rule depends only on
the rows before the current one, so a batch gives the same scores, mistakes and
state as the same rows one at a time, however the stream is cut.

Pruning (``prune``, ``prune_every``; :mod:`learners.adaptive.pruning`, docs/algorithms.md
Sec. 11.9) works at both levels: each view's selector drops its losing configurations,
and every ``prune_every`` labelled events a view significantly behind the learner's own
predictions is dropped whole (never the leading one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

import numpy as np
import scipy.sparse as sp

from learners.adaptive.learners import (
    ADAPTIVE_PAPERS,
    AROW_COUPLINGS,
    BIAS_ON,
    COUPLINGS,
    ETAS,
    LOSSES,
    MEMORY_ORDER,
    RIDGE,
    AdaptiveSelector,
    one_event,
    with_reference,
)
from learners.adaptive.products import expanded_width, with_products, with_products_batch
from learners.adaptive.pruning import (
    PRUNE,
    PRUNE_EVERY,
    count_rows,
    cuts,
    losing,
    survivors,
)
from learners.base import Learner, Param
from learners.inputs import Batch, Vec, as_vector, check_label, check_task, log_scaled_row
from learners.kernels import kernel_array
from learners.registry import register
from learners.rom.base import cosine_similarity

__all__ = ["QUAD_AUTO_MAX_FEATURES", "QUAD_MAX_FEATURES", "VIEWS", "AdaptiveViews", "view_names"]

#: The input views (module docstring).
VIEWS = ("raw", "l2", "log", "log-l2", "log-quad")
#: Views whose values are log-scaled, views scaled to unit length (after that), and views
#: with the pairwise products of the features appended (after the log scaling).
LOG_VIEWS = frozenset({"log", "log-l2", "log-quad"})
UNIT_VIEWS = frozenset({"l2", "log-l2"})
QUAD_VIEWS = frozenset({"log-quad"})
#: ``views=auto`` adds ``log-quad`` for rows of at most this many features (528 inputs).
QUAD_AUTO_MAX_FEATURES = 32
#: ``log-quad`` is refused for rows of more features (5,150 inputs at 100).
QUAD_MAX_FEATURES = 100
#: What ``views=auto`` always runs, in this order.
AUTO_VIEWS = ("log", "log-l2")
#: Rows expanded with their products at a time in a batch (bounds the expanded copy).
PRODUCT_BLOCK = 2048


def view_list(v: Any) -> str:
    """``auto``, or comma-separated, distinct names among :data:`VIEWS` (returned normalised)."""
    if isinstance(v, str) and v.strip() == "auto":
        return "auto"
    parts = [p.strip() for p in (v.split(",") if isinstance(v, str) else list(v))]
    if not parts or any(p not in VIEWS for p in parts) or len(set(parts)) != len(parts):
        raise ValueError(f"must be auto or distinct views among {', '.join(VIEWS)}, got {v!r}")
    return ",".join(parts)


def view_names(views: str, n_features: int) -> list[str]:
    """The views a learner with ``views`` on rows of ``n_features`` features runs, in order.

    ``auto``: :data:`AUTO_VIEWS`, then ``log-quad`` for at most
    :data:`QUAD_AUTO_MAX_FEATURES` features. Raises ValueError for ``log-quad`` on more than
    :data:`QUAD_MAX_FEATURES` features.
    """
    if views == "auto":
        quad = ["log-quad"] if n_features <= QUAD_AUTO_MAX_FEATURES else []
        return [*AUTO_VIEWS, *quad]
    names = views.split(",")
    if QUAD_VIEWS.intersection(names) and n_features > QUAD_MAX_FEATURES:
        raise ValueError(
            f"views: log-quad needs at most {QUAD_MAX_FEATURES} features (it appends "
            f"d (d + 1) / 2 products), got n_features={n_features}"
        )
    return names


VIEW_LIST = Param(
    "views",
    "auto",
    "Comma-separated input views the grid runs on, in the order ties are broken: raw (rows as "
    "given), l2 (rows scaled to unit length), log (values x replaced by sign(x) log(1 + |x|)), "
    "log-l2 (log, then unit length), log-quad (log, then the products x_i x_j appended; at most "
    f"{QUAD_MAX_FEATURES} features); auto = log,log-l2, plus log-quad for at most "
    f"{QUAD_AUTO_MAX_FEATURES} features. With several, predictions come from the view with the "
    "fewest progressive mistakes (docs/algorithms.md Sec. 11.8).",
    view_list,
)
# The grid chosen on development shuffles of the benchmark streams (docs/algorithms.md
# Sec. 11.8): logistic at three step sizes and AROW, each with a mostly shared (logistic
# b = 0.5, AROW b = 0.25) and a mostly per-task (b = 8) coupling.
AUTO_LOSSES = Param(LOSSES.name, "logistic,arow", LOSSES.description, LOSSES.check)
AUTO_ETAS = Param(ETAS.name, "1.0,0.5,3.0", ETAS.description, ETAS.check)
AUTO_COUPLINGS = Param(COUPLINGS.name, "0.5,8.0", COUPLINGS.description, COUPLINGS.check)
AUTO_AROW_COUPLINGS = Param(
    AROW_COUPLINGS.name, "0.25,8.0", AROW_COUPLINGS.description, AROW_COUPLINGS.check
)


def _log_scaled(x: np.ndarray | Vec, width: int) -> np.ndarray | Vec:
    """A dense row of ``width`` values or a sparse vector, log-scaled (a dense row of another
    width is left for the views' lanes to refuse)."""
    if isinstance(x, Vec):
        return Vec(x.idx, log_scaled_row(x.val), x.dim)
    return log_scaled_row(x) if x.shape == (width,) else x


@register
class AdaptiveViews(Learner):
    """Online selection over adaptive configurations and input views (Sec. 11.8).

    Attributes
    ----------
    view_mistakes_ : ndarray of int64, shape (V,)
        Progressive mistakes of each view's own predictions (the views still run).
    view_duels_ : ndarray of int64, shape (V, 2)
        Per view, the events it got wrong where the learner's prediction was right, and the
        other way round (docs/algorithms.md Sec. 11.9).
    view_alive_ : ndarray of int64
        Indices of the views still run among :attr:`all_view_names`.
    view_events_ : ndarray of int64, shape (1,)
        Labelled events learned (the pruning clock).
    views_ : list of AdaptiveSelector
        One selector per view; their state is stored under ``<view>_<field>``.
    """

    name = "adaptive-auto"
    summary = "Online selection over adaptive configurations and input views (log, unit-length)"
    paper = ADAPTIVE_PAPERS
    params: ClassVar[tuple[Param, ...]] = (
        AUTO_LOSSES,
        AUTO_ETAS,
        AUTO_COUPLINGS,
        AUTO_AROW_COUPLINGS,
        RIDGE,
        VIEW_LIST,
        PRUNE,
        PRUNE_EVERY,
        MEMORY_ORDER,
        BIAS_ON,
    )
    conformance_params: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"losses": "arow,hinge", "etas": "0.5", "couplings": "0,1", "append_bias": False},
        {"views": "l2"},
        {"views": "raw,log-l2,log", "etas": "1.0", "couplings": "1.0"},
        {"views": "log-quad,l2", "etas": "1.0", "couplings": "0.5,2.0"},
        {"views": "raw,l2,log", "etas": "0.1,3", "prune": 0.5, "prune_every": 6},
        {"views": "raw,log-l2", "prune": 0.0, "prune_every": 3},
    )
    state_fields: ClassVar[tuple[str, ...]] = (
        "view_mistakes_",
        "view_duels_",
        "view_alive_",
        "view_events_",
    )
    #: True in the :attr:`reference_class`: the views run the numpy reference per event.
    numpy_reference: ClassVar[bool] = False
    relation_kind = "weight-similarity"
    relation_meaning = (
        "Cosine similarity of the tasks' predictors in the leading view (derived, not a model "
        "parameter): tasks whose weight vectors point the same way are close."
    )

    @property
    def exact_batch_merge(self) -> bool:
        """Batches give the same result however the stream is cut (module docstring)."""
        return True

    @classmethod
    def state_bytes(cls, n_features: int, n_tasks: int, **params: Any) -> int:
        """The views' selectors (each on its rows' width: ``d``, or ``d`` and the products for
        ``log-quad``, plus the bias) and the counts."""
        hyper = cls._resolve_params(params)
        views = view_names(hyper["views"], int(n_features))
        bias = 1 if hyper["append_bias"] else 0
        grid = cls._grid(hyper, False)
        total = 8 * (4 * len(views) + 1)  # the views' mistakes, duels, indices and clock
        for view in views:
            d = expanded_width(int(n_features)) if view in QUAD_VIEWS else int(n_features)
            total += AdaptiveSelector.state_bytes(d + bias, n_tasks, **grid)
        return total

    @staticmethod
    def _grid(hyper: Mapping[str, Any], unit_rows: bool) -> dict[str, Any]:
        return {
            "losses": hyper["losses"],
            "etas": hyper["etas"],
            "couplings": hyper["couplings"],
            "arow_couplings": hyper["arow_couplings"],
            "r": hyper["r"],
            "prune": hyper["prune"],
            "prune_every": hyper["prune_every"],
            "memory_order": hyper["memory_order"],
            "append_bias": False,
            "l2_normalize": unit_rows,
        }

    # ------------------------------------------------------------ public extras
    @property
    def view_names(self) -> list[str]:
        """The views this learner runs, in tie-breaking order (``auto`` resolved), less
        those pruned."""
        return list(self._view_names)

    @property
    def all_view_names(self) -> list[str]:
        """Every view of ``views`` (``auto`` resolved), pruned or not."""
        return view_names(self.hyper["views"], self.n_features)

    def leader_view(self) -> str:
        """The view the learner predicts with now."""
        return self._view_names[self._leading()]

    def _leading(self) -> int:
        """Index of the leading view: the fewest mistakes so far, the first on ties (without
        a numpy call when one view is left: 0.9 us of a 5 us ``decision_one``)."""
        if len(self.views_) == 1:
            return 0
        return int(self.view_mistakes_.argmin())  # the method: a fifth of np.argmin's time

    # ------------------------------------------------------------ learner hooks
    def _init_state(self) -> None:
        self.view_alive_ = np.arange(len(self.all_view_names), dtype=np.int64)
        self.view_events_ = np.zeros(1, dtype=np.int64)
        self._init_views()

    def _init_views(self) -> None:
        """Fresh selectors and counts for the views of :attr:`view_alive_`."""
        names = self.all_view_names
        self._view_names = [names[int(i)] for i in self.view_alive_]
        # The selectors take the rows after the bias was appended here; each scales its own.
        extra = expanded_width(self.n_features) - self.n_features
        # a reference_class's views are reference selectors (numpy per event)
        selector = AdaptiveSelector
        if self.numpy_reference:
            selector = cast(type[AdaptiveSelector], AdaptiveSelector.reference_class)
        self.views_ = [
            selector(
                n_features=self.dim + (extra if view in QUAD_VIEWS else 0),
                n_tasks=self.n_tasks,
                seed=self.seed,
                **self._grid(self.hyper, view in UNIT_VIEWS),
            )
            for view in self._view_names
        ]
        self.view_mistakes_ = np.zeros(len(self.views_), dtype=np.int64)
        self.view_duels_ = np.zeros((len(self.views_), 2), dtype=np.int64)

    def _view_row(self, v: Vec, view: int, logged: Vec | None = None) -> Vec:
        """Row ``v`` in view ``view``; ``logged``: ``v`` log-scaled already (shared by the
        log views of one event)."""
        name = self._view_names[view]
        if name in LOG_VIEWS:
            v = self._log_row(v) if logged is None else logged
        if name in QUAD_VIEWS:
            return with_products(v, self._bias)
        return v.unit_length() if name in UNIT_VIEWS else v

    def _log_row(self, v: Vec) -> Vec:
        """``v`` log-scaled, its bias feature (the last entry of every row) kept at 1."""
        logged = v.log_scaled()
        if self._bias:
            logged = Vec(logged.idx, np.append(logged.val[:-1], 1.0), logged.dim)
        return logged

    def _log_batch(self, batch: Batch, has_bias: bool) -> Batch:
        """The batch log-scaled; ``has_bias``: its last column is the bias feature, kept at 1
        (as in :meth:`_view_row`)."""
        logged = batch.log_scaled()
        if has_bias:
            if logged.dense is not None:
                logged.dense[:, -1] = 1.0
            else:
                assert logged.csr is not None
                logged.csr.data[logged.csr.indptr[1:] - 1] = 1.0
        return logged

    # ------------------------------------------------------------ per-event calls
    def decision_one(self, x: Any, task: int) -> float:
        """Signed score of ``x`` for ``task``: the leading view's compiled score of the row
        as a one-row batch, what :meth:`score_and_learn_one` would return now (through the
        view's event lane, :meth:`AdaptiveSelector.event_lane`, where the row allows it)."""
        m = self._leading()
        name = self._view_names[m]
        if name not in QUAD_VIEWS:
            score = self.views_[m].event_lane(
                x, task, None, self._bias, name in UNIT_VIEWS, name in LOG_VIEWS
            )
            if score is not None:
                return score
        t = check_task(task, self._n_tasks)
        return self._lead_view_score(self._event_batch(x), t)

    def learn_one(self, x: Any, y: float, task: int) -> None:
        """Learn from one labelled example (the compiled passes on a one-row batch)."""
        self.score_and_learn_one(x, y, task)

    def score_and_learn_one(self, x: Any, y: float, task: int) -> float:
        """Test-then-train on one example: every view's compiled pass on the row as a
        one-row batch (:meth:`score_and_learn_many`'s numbers for it), through the views'
        event lanes (:meth:`_views_lane`) where the row allows it."""
        if type(y) is float or type(y) is int or type(y) is np.float64:
            score = self._views_lane(x, task, y)
            if score is not None:
                return score
        t = check_task(task, self._n_tasks)
        label = check_label(y, self.label_kind)
        labels, tasks = np.array([label]), np.array([t], dtype=np.int64)
        batch = self._event_batch(x)
        return float(self._views_batch(batch, labels, tasks, self._bias, own_arrays=True)[0])

    def _views_lane(
        self, x: Any, task: Any, label: float | int | np.float64, *, as_batch: bool = False
    ) -> float | None:
        """:meth:`score_and_learn_one` through each view's event lane
        (:meth:`AdaptiveSelector.event_lane`), the row log-scaled once for the log views,
        then the views' mistakes and duels counted by the event's own step
        (:meth:`_count_event`, what :func:`~learners.adaptive.pruning.count_rows` counts
        for a row of a batch). None, having changed nothing, where some view cannot take
        the row: a view with products left, a unit-length view and a row with a zero entry
        (the lane's own refusal, unless ``as_batch``: the numbers of the row as the one row
        of a dense batch), or any input the first view's lane refuses (the others then
        take the same row)."""
        names = self._view_names
        if QUAD_VIEWS.intersection(names):
            return None
        if type(x) is not np.ndarray:
            if not (isinstance(x, Vec) or sp.issparse(x)):
                return None
            try:
                v = as_vector(x, self._n_features)
            except ValueError:  # the general path gives the error, in its own words
                return None
            if v.idx is not None:
                return self._views_lane_of(v, task, label, as_batch)
            x = v.val
        if (
            not as_batch
            and UNIT_VIEWS.intersection(names)
            and x.shape == (self._n_features,)
            and not x.all()
        ):
            return None
        if x.dtype != np.float64 and x.dtype != np.float32:
            return None
        return self._views_lane_of(x, task, label, as_batch)

    def _views_lane_of(
        self, x: np.ndarray | Vec, task: Any, label: float | int | np.float64, as_batch: bool
    ) -> float | None:
        """:meth:`_views_lane` of a dense row or a canonical sparse vector ``x``."""
        names = self._view_names
        lead = self._leading()
        logged: np.ndarray | Vec | None = None
        scores: list[float] = []
        for name, inner in zip(names, self.views_, strict=True):
            row = x
            if name in LOG_VIEWS:
                if logged is None:
                    logged = _log_scaled(x, self._n_features)
                row = logged
            score = inner.event_lane(
                row, task, label, self._bias, name in UNIT_VIEWS, False, as_batch=as_batch
            )
            if score is None:
                assert not scores, "a view refused a row that the first view took"
                return None
            scores.append(score)
        self._count_event([(s >= 0.0) != (label > 0.0) for s in scores], lead)
        return scores[lead]

    def _event_batch(self, x: Any) -> Batch:
        """``x`` validated and canonical, as a batch of one row (dense when it has no zero
        entry, else CSR), its bias and scaling left to the views' passes."""
        v = as_vector(x, self._n_features)
        if v.idx is None:
            return Batch(v.val.reshape(1, -1), None, self._n_features)
        return Batch.from_vecs([v], self._n_features)

    def _lead_view_score(self, batch: Batch, task: int) -> float:
        """The score :meth:`_views_batch` would return for the one row of ``batch`` (its
        bias not appended yet): the leading view's, read as that pass reads it."""
        m = self._leading()
        name, inner = self._view_names[m], self.views_[m]
        tasks = np.array([task], dtype=np.int64)
        rows = self._log_batch(batch, False) if name in LOG_VIEWS else batch
        if name in QUAD_VIEWS:
            products = with_products_batch(rows.to_dense(), False)
            return float(inner._kernel_scores(products, tasks, self._bias, False)[0])
        return float(inner._kernel_scores(rows, tasks, self._bias, name in UNIT_VIEWS)[0])

    def _decision(self, x: Vec, task: int) -> float:
        m = self._leading()
        return self.views_[m]._decision(self._view_row(x, m), task)

    def _learn(self, x: Vec, y: float, task: int) -> None:
        logged = self._log_row(x) if LOG_VIEWS.intersection(self._view_names) else None
        lead = self._leading()  # before the event's counts move
        wrong = []
        for m, inner in enumerate(self.views_):
            score = inner._score_and_learn_row(self._view_row(x, m, logged), y, task)
            wrong.append(bool((score >= 0.0) != (y > 0.0)))
        self._count_event(wrong, lead)

    def score_and_learn_many(self, X: Any, y: Any, task: Any) -> np.ndarray:
        """Test-then-train over a batch (see :meth:`learners.base.Learner.score_and_learn_many`):
        each view's compiled pass appends the bias and scales its rows as it reads them. A
        batch of one dense row (how the service's worker learns an event alone) takes the
        views' event lanes (:meth:`_views_lane`)."""
        row = one_event(X, y, task)
        if row is not None:
            score = self._views_lane(*row, as_batch=True)
            if score is not None:
                return np.array([score])
        batch, labels, tasks = self._prepare_batch(X, y, task, raw=True)
        return self._views_batch(batch, labels, tasks, self._bias)

    def _score_and_learn_batch(self, batch: Batch, y: np.ndarray, tasks: np.ndarray) -> np.ndarray:
        return self._views_batch(batch, y, tasks, False)

    def _views_batch(
        self,
        batch: Batch,
        y: np.ndarray,
        tasks: np.ndarray,
        bias: bool,
        *,
        own_arrays: bool = False,
    ) -> np.ndarray:
        """Every view learns ``batch`` (``bias``: its rows still lack the constant 1); the
        score of each row is the one of the view with fewer mistakes before it.
        ``own_arrays``: ``y`` and ``tasks`` are already the kernels' array types. The batch
        is cut at the views' pruning checks (Sec. 11.9)."""
        if not own_arrays:  # once for every view's pass
            y = kernel_array(y, np.float64)
            tasks = kernel_array(tasks, np.int64)
        if not self._prunes_views():
            return self._views_part(batch, y, tasks, bias)
        out = np.empty(batch.n)
        every = self.hyper["prune_every"]
        for start, stop in cuts(batch.n, self.view_events_, every, self._prunes_views):
            part = batch if (start, stop) == (0, batch.n) else batch.rows_between(start, stop)
            out[start:stop] = self._views_part(part, y[start:stop], tasks[start:stop], bias)
        return out

    def _views_part(self, batch: Batch, y: np.ndarray, tasks: np.ndarray, bias: bool) -> np.ndarray:
        """:meth:`_views_batch` on rows that hold no pruning check before their last."""
        scores = np.empty((len(self.views_), batch.n))
        has_bias = self._bias and not bias
        logged = None  # computed once for every log view
        for m, inner in enumerate(self.views_):
            name, rows = self._view_names[m], batch
            if name in LOG_VIEWS:
                if logged is None:
                    logged = self._log_batch(batch, has_bias)
                rows = logged
            if name in QUAD_VIEWS:
                scores[m] = self._products_batch(inner, rows, y, tasks, bias, has_bias)
            else:
                unit = name in UNIT_VIEWS
                scores[m] = inner._kernel_batch(rows, y, tasks, bias, unit, own_arrays=True)
        if len(self.views_) == 1:  # the one view leads every row and duels no other
            self.view_mistakes_[0] += int(np.count_nonzero((scores[0] >= 0.0) != (y > 0.0)))
            self._learned_views(batch.n)
            return scores[0]
        leads = np.empty(batch.n, dtype=np.int64)
        count_rows(scores, y, self.view_mistakes_, self.view_duels_, leads)
        self._learned_views(batch.n)
        return scores[leads, np.arange(batch.n)]

    def _count_event(self, wrong: list[bool], lead: int) -> None:
        """One event's mistakes and duels of the views (``wrong[v]``: view v erred; ``lead``:
        the leading view before it), then its count: the numpy reference's per-event step
        (:meth:`_learn`) of what :func:`~learners.adaptive.pruning.count_rows` counts for a
        batch."""
        lead_wrong = wrong[lead]
        for v, w in enumerate(wrong):
            if w:
                self.view_mistakes_[v] += 1
            if w != lead_wrong:
                self.view_duels_[v, 0 if w else 1] += 1
        self._learned_views(1)

    def _learned_views(self, n: int) -> None:
        """Count ``n`` labelled events learned (with pruning on: the clock stays at 0
        without); at a check, drop the views significantly behind."""
        if not self.hyper["prune"] > 0.0:
            return
        self.view_events_[0] += n
        if self._prunes_views() and self.view_events_[0] % self.hyper["prune_every"] == 0:
            lead_now = self._leading()
            drop = losing(self.view_duels_, lead_now, self.hyper["prune"])
            if drop.any():
                self._keep_views(~drop)

    def _prunes_views(self) -> bool:
        """Whether learning checks for losing views: pruning is on and several are left."""
        return self.hyper["prune"] > 0.0 and len(self.views_) > 1

    def _keep_views(self, keep: np.ndarray) -> None:
        """Keep only the views ``keep`` (a mask), in order; the dropped selectors go."""
        self.view_alive_ = self.view_alive_[keep]
        self._view_names = [n for n, k in zip(self._view_names, keep.tolist(), strict=True) if k]
        self.views_ = [v for v, k in zip(self.views_, keep.tolist(), strict=True) if k]
        self.view_mistakes_ = self.view_mistakes_[keep]
        self.view_duels_ = self.view_duels_[keep]

    @staticmethod
    def _products_batch(
        inner: AdaptiveSelector,
        batch: Batch,
        y: np.ndarray,
        tasks: np.ndarray,
        bias: bool,
        has_bias: bool,
    ) -> np.ndarray:
        """``inner`` learns ``batch`` with the products appended, :data:`PRODUCT_BLOCK` rows
        at a time (the expanded rows are wide; the selector's result does not depend on
        where the stream is cut)."""
        out, X = np.empty(batch.n), batch.to_dense()
        for a in range(0, batch.n, PRODUCT_BLOCK):
            b = min(a + PRODUCT_BLOCK, batch.n)
            rows = with_products_batch(X[a:b], has_bias)
            out[a:b] = inner._kernel_batch(rows, y[a:b], tasks[a:b], bias, False, own_arrays=True)
        return out

    def _add_task(self) -> None:
        for inner in self.views_:
            inner.add_task()

    def _task_weights(self) -> np.ndarray | None:
        """The raw view's weights while it leads; None while another view leads (its score
        is not linear in the row)."""
        m = self._leading()
        if self._view_names[m] != "raw":
            return None
        return self.views_[m]._task_weights()

    def _relation(self) -> np.ndarray:
        """Cosine similarity of the leading view's task predictors (its leader's ``u_0 + u_k``)."""
        W = self.views_[self._leading()]._task_weights()
        assert W is not None
        return cosine_similarity(W)

    def _get_state(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: getattr(self, name) for name in self.state_fields}
        for view, inner in zip(self._view_names, self.views_, strict=True):
            out.update({f"{view}_{k}": v for k, v in inner._get_state().items()})
        return out

    def _set_state(self, state: Mapping[str, Any]) -> None:
        """Restore, first dropping the views the saved state had pruned (a state saved
        before pruning existed has every view and no duels)."""
        alive = survivors(state.get("view_alive_"), len(self.all_view_names), "view_alive_")
        if not np.array_equal(alive, self.view_alive_):
            self.view_alive_ = alive.copy()
            self._init_views()
        own = {
            "view_mistakes_": state["view_mistakes_"],
            "view_duels_": state.get("view_duels_", np.zeros((alive.size, 2), dtype=np.int64)),
            "view_alive_": alive,
            "view_events_": state.get("view_events_", np.zeros(1, dtype=np.int64)),
        }
        super()._set_state(own)
        for view, inner in zip(self._view_names, self.views_, strict=True):
            prefix = f"{view}_"
            inner._set_state(
                {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
            )


with_reference(AdaptiveViews)
