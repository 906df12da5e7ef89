"""How the book's figures look: one palette and one set of matplotlib settings, used by the
chapters, the explorers and the labs' plots alike."""

from __future__ import annotations

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
