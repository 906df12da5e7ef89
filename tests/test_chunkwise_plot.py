"""Chapter 9's diagram of the chunkwise form draws its blocks."""

from __future__ import annotations

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from lattn_edu.plots import CARRIED_LABEL, INSIDE_LABEL, plot_chunkwise_blocks  # noqa: E402


@pytest.mark.parametrize("n_chunks", [2, 4, 5])
def test_diagonal_blocks_are_labelled_and_the_lower_ones_shaded(n_chunks):
    import matplotlib.pyplot as plt

    fig = plot_chunkwise_blocks(n_chunks)
    ax = fig.axes[0]
    by_gid = {}
    for patch in ax.patches:
        by_gid.setdefault(patch.get_gid(), []).append(patch)
    texts = [t.get_text() for t in ax.texts]
    assert len(by_gid["inside"]) == n_chunks  # one masked triangle per diagonal block
    assert texts.count(INSIDE_LABEL) == n_chunks  # each diagonal block labelled
    assert len(by_gid["carried"]) == n_chunks * (n_chunks - 1) // 2  # every block below, shaded
    assert len(by_gid["carry"]) == n_chunks - 1  # an arrow from each chunk to the next
    assert any("carried" in t for t in texts) and "carried" in CARRIED_LABEL
    plt.close(fig)


@pytest.mark.parametrize("n_chunks,error", [(1, ValueError), (0, ValueError), (2.5, TypeError)])
def test_fewer_than_two_whole_chunks_are_refused_by_name(n_chunks, error):
    with pytest.raises(error, match="n_chunks"):
        plot_chunkwise_blocks(n_chunks)
