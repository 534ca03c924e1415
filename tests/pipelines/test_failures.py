"""A flow's failure in one line (Spark-free): the innermost error of the texts Spark gives a
failed stream or job, without their stack traces."""

from __future__ import annotations

from headwater.errors import PipelineError
from headwater.pipelines.runner.failures import in_one_line, one_line

# A stream whose batch function failed: StreamingQueryException's text (shortened).
STREAM = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/py4j/clientserver.py", line 644, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/pyspark/errors/exceptions/captured.py", line 262, in deco
    raise converted from None
pyspark.errors.exceptions.captured.ArithmeticException: [DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and return NULL instead. SQLSTATE: 22012
== DataFrame ==
"divide" was called from
java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)


=== Streaming Query ===
Identifier: fails.broken_stream [id = 6616559b, runId = 315f0267]
"""

JOB = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted due to "
    "stage failure: Task 0 in stage 5.0 failed 1 times, most recent failure: Lost task 0.0 "
    "(TID 5) (host executor driver): org.apache.spark.SparkArithmeticException: "
    "[DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012\n== DataFrame ==\n..."
)


def test_the_innermost_error_of_a_failed_stream_or_job_is_the_line():
    assert one_line(STREAM) == (
        "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 "
        "and return NULL instead. SQLSTATE: 22012"
    )
    assert one_line(JOB) == "[DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012"
    plain = 'Traceback (most recent call last):\n  File "t.py", line 3, in f\nValueError: no\n'
    assert one_line(plain) == "ValueError: no"  # no error class: the type says what
    assert one_line(ValueError("first line\nsecond")) == "first line"
    assert one_line(RuntimeError()) == "RuntimeError"


def test_a_flow_records_its_error_in_one_line_with_the_rest_as_its_cause():
    error = RuntimeError("[DIVIDE_BY_ZERO] Division by zero.\n== DataFrame ==\n...")
    recorded = in_one_line(error)
    assert isinstance(recorded, PipelineError) and recorded.__cause__ is error
    assert str(recorded) == "[DIVIDE_BY_ZERO] Division by zero."
    assert recorded.error_class == "DIVIDE_BY_ZERO"
    one = ValueError("already one line")
    assert in_one_line(one) is one
