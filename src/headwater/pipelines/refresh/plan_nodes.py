"""A query's analysed plan, each question about one of its nodes asked of the JVM once.

A view's planning reads the query's analysed plan through Py4J: its shape, its facts
(:mod:`.inputs`), its partition columns (:mod:`.partitions`), its Arrow form
(:mod:`.arrow_refresh`). They ask the same nodes the same questions (the aggregate's
expressions: their node names, functions, arguments, the GROUP BY keys they equal), and
each question is a round trip to the JVM: 30-90 µs, about 230 of them in the planning of
a ``GROUP BY`` with four aggregates, a third of a small refresh. Catalyst's plans and
expressions never change once analysed, so within one planning (:func:`scope`) a node is
read through a :class:`Node` that keeps its answers, and the queries' plans are shared
(:func:`analysed`): the second reader of an expression finds it answered. Outside a scope
every call of :func:`analysed` starts afresh (nothing outlives a planning)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from py4j.java_gateway import JavaObject
from pyspark.sql import DataFrame

_plans: ContextVar[dict[int, tuple[DataFrame, Node]] | None] = ContextVar(
    "headwater_refresh_plans", default=None
)


class Node:
    """A JVM object (a plan, an expression, a Scala sequence) whose method calls are
    answered once per arguments; answers that are JVM objects are :class:`Node` too, so a
    path of calls is walked once. Arguments may be nodes (compared by identity)."""

    __slots__ = ("_answers", "_target")

    def __init__(self, target: JavaObject) -> None:
        self._target = target
        self._answers: dict[tuple, Any] = {}

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any) -> Any:
            key = (method, *(("node", id(a)) if isinstance(a, Node) else a for a in args))
            if key not in self._answers:
                plain = [a._target if isinstance(a, Node) else a for a in args]
                self._answers[key] = _wrapped(getattr(self._target, method)(*plain))
            return self._answers[key]

        return call


def _wrapped(answer: Any) -> Any:
    return Node(answer) if type(answer) is JavaObject else answer


@contextmanager
def scope() -> Iterator[None]:
    """Plans read inside are read once (per thread: flows refresh in parallel)."""
    token = _plans.set({})
    try:
        yield
    finally:
        _plans.reset(token)


def analysed(df: DataFrame) -> Any:
    """``df``'s analysed plan as a :class:`Node` (the same one within a :func:`scope`)."""
    plans = _plans.get()
    if plans is None:
        return Node(df._jdf.queryExecution().analyzed())
    if id(df) not in plans:  # (the frame kept beside its node: its id is not reused)
        plans[id(df)] = (df, Node(df._jdf.queryExecution().analyzed()))
    return plans[id(df)][1]
