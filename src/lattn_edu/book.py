"""Small helpers that let one chapter notebook run on the website build, locally and on Colab.

- :func:`glue` hands a computed number to the page's prose (myst-nb's glue) and,
  where myst-nb is absent (Colab), prints it so the reader still sees it;
- :func:`torch_device` picks CUDA when a GPU is there and says which device runs;
- :func:`use_book_style` makes figures legible in the site's light and dark themes;
- :func:`machine_summary` names the machine that measured a timing (from
  :mod:`lattn_edu.machine`, the one description of the machine);
- :func:`relative_difference` and :func:`difference_text` compare two results of the
  package and word the comparison for the prose.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .machine import machine_summary  # noqa: F401  (chapters import it from here, with glue)


def glue(name: str, value: Any) -> None:
    """Make ``value`` available to the prose as ``{glue:text}`name```.

    On the website build myst-nb stores it without showing an extra output. Without
    myst-nb (Colab, a plain Jupyter) the value is printed as ``name = value``. It returns
    nothing, so a cell that ends with it shows no stray output.
    """
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        print(f"{name} = {value}")
        return
    myst_glue(name, value, display=False)


def relative_difference(a: Any, b: Any) -> float:
    """‖a − b‖ / ‖b‖ over all entries (Frobenius norms): how far one result is from another.

    a, b: arrays (or anything ``np.asarray`` takes) of one shape; b must not be all zeros.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have one shape; got {a.shape} and {b.shape}")
    scale = float(np.linalg.norm(b))
    if scale == 0:
        raise ValueError("b is all zeros: a relative difference to it is undefined")
    return float(np.linalg.norm(a - b)) / scale


def difference_text(x: float) -> str:
    """A difference for the prose: '0' when it is exactly zero, else two significant digits
    in exponent form ('3.1e-16')."""
    return "0" if x == 0 else f"{x:.1e}"


def torch_device() -> str:
    """'cuda' when torch sees a GPU, else 'cpu'; prints the choice so the reader knows."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    name = torch.cuda.get_device_name(0) if device == "cuda" else "the CPU (no GPU found)"
    print(f"torch runs on {name}")
    return device


# Okabe & Ito's palette: its eight colours stay distinct under the common colour-vision
# deficiencies (deuteranopia, protanopia, tritanopia) and in greyscale print, unlike
# matplotlib's default cycle, which puts red beside green. Figures and explorers draw from it.
PALETTE = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
           "purple": "#CC79A7", "sky": "#56B4E9", "yellow": "#F0E442", "black": "#000000"}


def use_book_style() -> None:
    """Opaque white figures with dark text: readable on the light and the dark theme alike
    (a transparent figure would put black labels on the dark background)."""
    import matplotlib as mpl

    mpl.rcParams.update({
        "figure.facecolor": "white", "savefig.facecolor": "white", "axes.facecolor": "white",
        "savefig.transparent": False, "text.color": "#222222", "axes.labelcolor": "#222222",
        "xtick.color": "#222222", "ytick.color": "#222222", "axes.edgecolor": "#444444",
        # Wide multi-panel figures are shrunk to the page's ~690 px column: larger type
        # keeps tick labels and legends readable after that.
        "figure.dpi": 100, "font.size": 13, "axes.titlesize": 13, "legend.fontsize": 11,
        "xtick.labelsize": 11, "ytick.labelsize": 11, "axes.grid": True, "grid.alpha": 0.3,
        "figure.constrained_layout.use": True,
        "axes.prop_cycle": mpl.cycler(color=list(PALETTE.values())),
    })

