"""The query's plan read through :class:`Node`: each question asked once per arguments,
so the planning's readers of one plan share its answers (Spark-free: any object's
methods stand for the JVM's)."""

from __future__ import annotations

from collections import Counter

from headwater.pipelines.refresh.plan_nodes import Node


class Expression:
    """Counts the calls that reach it, as the JVM's round trips would."""

    def __init__(self) -> None:
        self.calls: Counter[tuple] = Counter()

    def nodeName(self) -> str:  # noqa: N802 (Catalyst's names)
        self.calls[("nodeName",)] += 1
        return "Alias"

    def semanticEquals(self, other: object) -> bool:  # noqa: N802
        self.calls[("semanticEquals", id(other))] += 1
        return other is self

    def simpleString(self, width: int) -> str:  # noqa: N802
        self.calls[("simpleString", width)] += 1
        return "a" * width


def test_each_question_reaches_the_object_once_per_arguments():
    target, other = Expression(), Expression()
    node, peer = Node(target), Node(other)
    assert [node.nodeName() for _ in range(3)] == ["Alias"] * 3
    assert node.simpleString(2) == "aa" and node.simpleString(3) == "aaa"
    assert node.simpleString(2) == "aa"
    assert node.semanticEquals(node) and not node.semanticEquals(peer)
    assert node.semanticEquals(peer) is False
    assert target.calls == Counter(
        {
            ("nodeName",): 1,
            ("simpleString", 2): 1,
            ("simpleString", 3): 1,
            ("semanticEquals", id(target)): 1,  # (a node argument is passed as its object)
            ("semanticEquals", id(other)): 1,
        }
    )


def test_a_private_name_is_not_a_question():
    node = Node(Expression())
    try:
        node._missing  # noqa: B018
    except AttributeError:
        return
    raise AssertionError("a private attribute was forwarded")
