"""One error tree: every error headwater raises on purpose has an error class."""

from __future__ import annotations

import pkgutil
from importlib import import_module

import headwater
from headwater.errors import ConcurrentModificationException, DeltaError, HeadwaterError


def _all_error_classes() -> set[type]:
    for module in pkgutil.walk_packages(headwater.__path__, "headwater."):
        import_module(module.name)
    found: set[type] = set()
    todo = [HeadwaterError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_headwater_error_carries_an_error_class():
    for cls in _all_error_classes():
        error = cls.__new__(cls)
        HeadwaterError.__init__(error, "something went wrong")
        assert error.error_class and error.error_class.isupper(), cls
        assert error.getErrorClass() == error.error_class


def test_a_leading_class_in_the_message_is_the_error_class():
    error = DeltaError("[DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT] Refusing to vacuum")
    assert error.error_class == "DELTA_VACUUM_RETENTION_PERIOD_TOO_SHORT"
    assert DeltaError("no class here").error_class == "DELTA_ERROR"


def test_conflict_errors_keep_delta_sparks_names_and_classes():
    from headwater.delta import exceptions

    for name in exceptions.__all__:
        cls = getattr(exceptions, name)
        assert issubclass(cls, ConcurrentModificationException)
        assert cls("x").error_class.startswith("DELTA_CONCURRENT") or name.endswith(
            ("MetadataChangedException", "ProtocolChangedException")
        )
