"""Active multitask learning with committees (xu2018) and its baselines.

* ``amlc``: AMLC, Algorithm 1 (:mod:`learners.amlc.amlc`);
* ``random-query``: query each label with probability 1/2 (:mod:`learners.amlc.random_query`);
* ``peer`` / ``peer-share``: Murugesan & Carbonell's PEER, and PEER plus data
  sharing (:mod:`learners.amlc.peer`);
* ``independent``: per-task selective sampling (:mod:`learners.amlc.independent`).

The committee and peer-weight updates live in :mod:`learners.amlc.committee`.
All of them are active learners: :meth:`~learners.base.Learner.query_one` draws
the query decision from the learner's seeded generator, and
:meth:`~learners.base.Learner.learn_one` applies the update for a queried label.
"""

from __future__ import annotations

from learners.amlc.amlc import ActiveMultitaskCommittees
from learners.amlc.independent import Independent
from learners.amlc.peer import PeerLearning, PeerShare
from learners.amlc.random_query import RandomQuery

__all__ = ["ActiveMultitaskCommittees", "Independent", "PeerLearning", "PeerShare", "RandomQuery"]
