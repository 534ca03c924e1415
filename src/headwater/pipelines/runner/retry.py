"""Which flow failures are worth another attempt, and how many attempts a flow gets.

A flow is retried ``max_retries`` times (the update's option, 0 by default) for any error
but a failed expectation. Some failures say nothing about the flow: Spark starts a Python
worker for each Python data source stream and waits a fixed 10 s for it to connect back
(``PythonWorkerFactory``, not configurable in Spark 4.3); on a loaded machine the worker
may start later, the query fails with ``Python worker failed to connect back``, and the
same flow runs fine a moment later. The known system retries such flows by itself
(``pipelines.maxFlowRetryAttempts``, 2 by default), so these get at least
:data:`TRANSIENT_RETRIES` retries, after a short pause, whatever ``max_retries`` says.
"""

from __future__ import annotations

# Text of errors whose cause is the machine, not the flow, as Spark words them.
TRANSIENT = (
    "Python worker failed to connect back",  # PythonWorkerFactory, the error's message
    "waiting for the Python worker to connect back",  # its SocketTimeoutException
    "Lost connection to Python daemon",
)
TRANSIENT_RETRIES = 2
PAUSE_S = 2.0  # before a transient failure's retry, times the attempt's number


def transient(error: BaseException) -> bool:
    """Whether ``error`` (or one of its causes) is a start-up failure of the machine."""
    seen: BaseException | None = error
    for _ in range(10):
        if seen is None:
            return False
        text = str(seen)
        desc = getattr(seen, "desc", None)  # StreamingQueryException's own text
        if any(marker in text or marker in str(desc or "") for marker in TRANSIENT):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def retries(error: BaseException, max_retries: int) -> int:
    """How many retries a flow failing with ``error`` gets in all."""
    return max(max_retries, TRANSIENT_RETRIES) if transient(error) else max_retries


def pause(error: BaseException, attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (from 1)."""
    return PAUSE_S * attempt if transient(error) else 0.0
