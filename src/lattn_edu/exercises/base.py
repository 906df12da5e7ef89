"""Self-checking exercises: a student's answer is tested against the package's reference.

An :class:`Exercise` holds an id such as ``"ch03.parallel_form"``, the reference
``solution`` (a function or a value) and a checker. ``check(answer)`` returns quietly
when the answer is right and raises :class:`ExerciseFailed` (an ``AssertionError``)
otherwise, with a message that names the input it tried, what was expected and what it
got. A student function that raises, returns ``None`` or the wrong shape fails the same
clear way; the checker itself never crashes on a wrong answer.

``feedback(answer)`` is the notebook-friendly form: it prints the verdict instead of
raising, and treats an unfinished stub (``NotImplementedError``) as "not attempted yet".
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


class ExerciseFailed(AssertionError):
    """A wrong answer; the message says which input, what was expected and what came back."""


def describe(value: Any) -> str:
    """A short description of an input for messages: 'float64 [5, 3]' or the value itself."""
    if isinstance(value, np.ndarray):
        if value.size <= 6:
            return f"{value.dtype} {list(value.shape)} = {np.array2string(value, precision=4, separator=', ')}"
        return f"{value.dtype} {list(value.shape)}"
    return repr(value)


def describe_case(case: dict[str, Any]) -> str:
    return ", ".join(f"{name}: {describe(value)}" for name, value in case.items())


def _as_array(value: Any, what: str) -> np.ndarray:
    if value is None:
        raise ExerciseFailed(f"{what} returned None: did you forget the return statement?")
    if hasattr(value, "detach"):  # a torch tensor is fine too
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ExerciseFailed(f"{what} returned {type(value).__name__}, which is not a number or an "
                             "array of numbers") from None
    return array


def assert_matches(got: Any, expected: Any, rtol: float, what: str, context: str = "") -> None:
    """``got`` must have ``expected``'s shape and values within rtol (relative to its scale)."""
    where = f" for {context}" if context else ""
    got_array, expected_array = _as_array(got, what), np.asarray(expected, dtype=np.float64)
    if got_array.shape != expected_array.shape:
        raise ExerciseFailed(f"{what} returned shape {list(got_array.shape)}{where}; "
                             f"expected shape {list(expected_array.shape)}")
    if not np.isfinite(got_array).all():
        raise ExerciseFailed(f"{what} returned NaN or inf{where}; expected finite values")
    scale = max(float(np.abs(expected_array).max(initial=0.0)), 1e-12)
    error = np.abs(got_array - expected_array)
    if error.max(initial=0.0) > rtol * scale:
        index = np.unravel_index(int(np.argmax(error)), error.shape) if error.ndim else ()
        raise ExerciseFailed(
            f"{what} gave a wrong value{where}: at index {list(map(int, index))} expected "
            f"{expected_array[index]:.6g}, got {got_array[index]:.6g} (largest error "
            f"{error.max():.3g}, allowed {rtol * scale:.3g})")


def call_answer(answer: Callable[..., Any], case: dict[str, Any]) -> Any:
    """``answer(**case)``; a student's exception or a missing return becomes ExerciseFailed
    naming the input (an unfinished stub's NotImplementedError passes through)."""
    name = getattr(answer, "__name__", "your function")
    try:
        got = answer(**case)
    except NotImplementedError:
        raise
    except Exception as error:  # a student's bug: report it, never crash the checker
        raise ExerciseFailed(f"{name} raised {type(error).__name__}: {error} "
                             f"for input {describe_case(case)}") from None
    if got is None:
        raise ExerciseFailed(f"{name} returned None for input {describe_case(case)}: "
                             "did you forget the return statement?")
    return got


def check_function(answer: Any, reference: Callable[..., Any], cases: list[dict[str, Any]],
                   rtol: float = 1e-6, outputs: int = 1) -> None:
    """Call ``answer(**case)`` and ``reference(**case)`` on every case and compare.

    ``outputs`` > 1 means both return a tuple of that many arrays, compared one by one.
    Inputs are copied, so an answer that writes into its arguments cannot spoil the reference.
    """
    if not callable(answer):
        raise ExerciseFailed(f"expected a function; got {type(answer).__name__}")
    name = getattr(answer, "__name__", "your function")
    for case in cases:
        # .copy() keeps an input's array subclass (a checker may hand over guarded arrays)
        expected = reference(**{k: np.asarray(v).copy() if isinstance(v, np.ndarray) else v
                                for k, v in case.items()})
        got = call_answer(answer, {k: v.copy() if isinstance(v, np.ndarray) else v
                                   for k, v in case.items()})
        if outputs == 1:
            assert_matches(got, expected, rtol, name, describe_case(case))
            continue
        if not isinstance(got, (tuple, list)) or len(got) != outputs:
            raise ExerciseFailed(f"{name} must return {outputs} values (a tuple); got "
                                 f"{type(got).__name__} for input {describe_case(case)}")
        for position, (part, part_expected) in enumerate(zip(got, expected)):
            assert_matches(part, part_expected, rtol, f"{name} (output {position + 1})",
                           describe_case(case))


@dataclass(frozen=True)
class Exercise:
    """One exercise: ``check(answer)`` raises :class:`ExerciseFailed` unless the answer is right."""

    id: str
    title: str
    kind: str  # "code": a function; "value": a number or array; "construction": an example
    # with a stated property, checked by the property rather than against one value
    solution: Any
    checker: Callable[[Any], None]

    def __repr__(self) -> str:
        return f"<Exercise {self.id}: {self.title} ({self.kind})>"

    def check(self, answer: Any) -> None:
        """Return quietly when ``answer`` is right; raise ExerciseFailed saying why when not."""
        try:
            self.checker(answer)
        except NotImplementedError:
            raise ExerciseFailed("the function is still the unfinished stub "
                                 "(it raises NotImplementedError): write your code first") from None

    def feedback(self, answer: Any) -> None:
        """Print the verdict for a notebook cell instead of raising (returns nothing, so a
        notebook shows only the message).

        The notebook's starting points, ``...`` for a value and a function that raises
        ``NotImplementedError``, count as "not attempted yet" rather than wrong.
        """
        try:
            if answer is ...:
                raise NotImplementedError
            self.checker(answer)
        except NotImplementedError:
            print(f"{self.id}: not attempted yet. Write your answer above, then run this cell.")
            return
        except ExerciseFailed as failure:
            print(f"✗ {self.id}: {failure}")
            return
        print(f"✓ {self.id}: correct.")


def value_exercise(id: str, title: str, expected: Any, rtol: float = 1e-6) -> Exercise:
    """An exercise whose answer is a number or an array, compared with ``expected``."""
    return Exercise(id, title, "value", expected,
                    lambda answer: assert_matches(answer, expected, rtol, "your answer"))


def code_exercise(id: str, title: str, solution: Callable[..., Any],
                  cases: Callable[[], list[dict[str, Any]]], rtol: float = 1e-6,
                  outputs: int = 1) -> Exercise:
    """An exercise whose answer is a function, compared with ``solution`` on seeded ``cases()``."""
    return Exercise(id, title, "code", solution,
                    lambda answer: check_function(answer, solution, cases(), rtol, outputs))


@contextlib.contextmanager
def _package_switched_off(names: tuple[str, ...]):
    """Replace ``lattn_edu.<name>`` for each name (``"hybrid.break_even_context"`` reaches into a
    module) by a function that refuses, then restore."""
    import importlib

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"this exercise asks you to write it yourself; "
                           f"lattn_edu.{' / '.join(names)} is switched off while it is checked")

    def owner(name: str) -> tuple[Any, str]:
        module, _, attribute = f"lattn_edu.{name}".rpartition(".")
        return importlib.import_module(module), attribute

    saved = {name: getattr(*owner(name)) for name in names}
    for name in names:
        setattr(*owner(name), refuse)
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(*owner(name), original)


def without_package(answer: Any, *names: str) -> Any:
    """``answer`` wrapped so that the package functions ``names`` refuse while it runs: for
    exercises whose point is to write what those functions do. A non-function is returned
    unchanged, so the checker still reports it as such. The checker's own reference runs
    before the answer, outside the wrapper."""
    if not callable(answer):
        return answer

    def wrapped(**kwargs: Any) -> Any:
        with _package_switched_off(names):
            return answer(**kwargs)

    wrapped.__name__ = getattr(answer, "__name__", "your function")
    return wrapped
