"""Self-checking exercises and concept checks for the course (one module per chapter).

``CATALOG`` maps ids like ``"ch03.parallel_form"`` to :class:`Exercise` objects::

    from lattn_edu import exercises
    ex = exercises.CATALOG["ch02.elu_plus_one"]
    ex.check(my_function)   # quiet when right; raises exercises.ExerciseFailed when wrong
    ex.solution             # the reference answer

``code_exercise`` and ``value_exercise`` build an exercise on inputs of your own (an
instructor's variant); ``grading.notebook_verdicts`` reads the checkers' verdicts from an
executed notebook.

Every module of this package named ``chNN`` (``ch03.py``) is a chapter's exercises, listed in
its ``EXERCISES``; they are found by name, so a new chapter's exercises are one new module.
"""

import importlib
import pkgutil
import re

from .base import Exercise, ExerciseFailed, code_exercise, value_exercise
from .quiz import Quiz

CHAPTER_MODULE = re.compile(r"ch\d\d")

CHAPTERS = tuple(importlib.import_module(f"{__name__}.{name}")
                 for _, name, _ in sorted(pkgutil.iter_modules(__path__))
                 if CHAPTER_MODULE.fullmatch(name))
CATALOG = {exercise.id: exercise for module in CHAPTERS for exercise in module.EXERCISES}

__all__ = ["CATALOG", "Exercise", "ExerciseFailed", "Quiz", "code_exercise", "value_exercise"]
