"""Self-checking exercises and concept checks for the course (one module per chapter).

``CATALOG`` maps ids like ``"ch03.parallel_form"`` to :class:`Exercise` objects::

    from lattn_edu import exercises
    ex = exercises.CATALOG["ch02.elu_plus_one"]
    ex.check(my_function)   # quiet when right; raises exercises.ExerciseFailed when wrong
    ex.solution             # the reference answer
"""

from . import ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch12
from .base import Exercise, ExerciseFailed
from .quiz import Quiz

CHAPTERS = (ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11, ch12)
CATALOG = {exercise.id: exercise for module in CHAPTERS for exercise in module.EXERCISES}

__all__ = ["CATALOG", "Exercise", "ExerciseFailed", "Quiz"]
