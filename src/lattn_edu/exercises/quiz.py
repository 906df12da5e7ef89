"""Concept checks: multiple-choice questions that answer themselves in the browser.

``Quiz(...)`` displays as a small self-contained HTML block: clicking an option shows
whether it is right and why, using a few lines of inline JavaScript. It works on the
static website with no kernel and no other host, in Jupyter, and in Colab.
"""

from __future__ import annotations

import html
import itertools
from dataclasses import dataclass

_ids = itertools.count()


@dataclass(frozen=True, repr=False)
class Quiz:
    """One question, its options, the index of the right one, and why each option is (not) it."""

    question: str
    options: tuple[str, ...]
    answer: int
    explanations: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.options) < 2 or len(self.options) != len(self.explanations):
            raise ValueError(f"a quiz needs >= 2 options and one explanation per option; got "
                             f"{len(self.options)} options and {len(self.explanations)} explanations")
        if not 0 <= self.answer < len(self.options):
            raise ValueError(f"answer must index an option (0..{len(self.options) - 1}); got {self.answer}")

    def is_correct(self, choice: int) -> bool:
        return choice == self.answer

    def __repr__(self) -> str:
        # the plain-text form is what a console or a text export shows: it must not give the
        # answer away, so it lists the options and says how to check one
        options = "\n".join(f"  {i}. {option}" for i, option in enumerate(self.options))
        return f"{self.question}\n{options}\n(check a choice i with .is_correct(i))"

    def _repr_html_(self) -> str:
        uid = f"lattn-quiz-{next(_ids)}"
        buttons = "".join(
            f'<button type="button" data-correct="{int(i == self.answer)}" '
            f'data-why="{html.escape(why)}" style="display:block;margin:.25em 0;padding:.3em .6em;'
            f'text-align:left;cursor:pointer;border:1px solid #888;border-radius:4px;'
            f'background:#f7f7f7;color:#222">{html.escape(option)}</button>'
            for i, (option, why) in enumerate(zip(self.options, self.explanations)))
        return f"""<div class="lattn-quiz" id="{uid}" style="border-left:4px solid #4a7;padding:.4em .8em;margin:.6em 0">
<div style="font-weight:600;margin-bottom:.3em">{html.escape(self.question)}</div>
{buttons}
<div class="lattn-quiz-verdict" role="status" style="margin-top:.4em"></div>
<script>
(function () {{
  var root = document.getElementById("{uid}");
  root.querySelectorAll("button").forEach(function (button) {{
    button.addEventListener("click", function () {{
      var right = button.dataset.correct === "1";
      root.querySelectorAll("button").forEach(function (b) {{ b.style.background = "#f7f7f7"; }});
      button.style.background = right ? "#c8ecc8" : "#f6cccc";
      root.querySelector(".lattn-quiz-verdict").textContent =
        (right ? "Right. " : "Not quite. ") + button.dataset.why;
    }});
  }});
}})();
</script>
</div>"""
