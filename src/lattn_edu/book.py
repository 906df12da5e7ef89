"""Small helpers that let one chapter notebook run on the website build, locally and on Colab.

- :func:`glue` hands a computed number to the page's prose (myst-nb's glue) and,
  where myst-nb is absent (Colab), prints it so the reader still sees it;
- :func:`torch_device` picks CUDA when a GPU is there and says which device runs;
- :func:`difference_text` words a relative error for the prose.

How figures look lives in :mod:`lattn_edu.style`, how far one result is from another in
:mod:`lattn_edu.compare`, and the machine's description in :mod:`lattn_edu.machine`: the
explorers and labs use those directly, and chapters import them from there.
"""

from __future__ import annotations

from typing import Any


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


def difference_text(x: float) -> str:
    """A difference for the prose: '0' when it is exactly zero, else two significant digits
    in exponent form ('3.1e-16')."""
    return "0" if x == 0 else f"{x:.1e}"


def signed_text(x: float, places: int = 3) -> str:
    """x with its sign for a table: '+0.012', '−0.011' (a true minus sign), and '0.000' for
    anything that rounds to zero, never '-0.000'."""
    text = f"{x:+.{places}f}"
    if float(text) == 0:
        return text[1:]
    return text.replace("-", "−")


def torch_device() -> str:
    """'cuda' when torch sees a GPU, else 'cpu'; prints the choice so the reader knows."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    name = torch.cuda.get_device_name(0) if device == "cuda" else "the CPU (no GPU found)"
    print(f"torch runs on {name}")
    return device
