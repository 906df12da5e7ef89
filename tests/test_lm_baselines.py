"""Chapter 17's no-training baselines, on a hand-worked tiny text."""

import numpy as np
import pytest

from lattn_edu.lm import baselines


def test_unigram_bits_hand_worked():
    # train "abab" over 3 characters: add-one counts 3, 3, 1 of 7
    train = np.array([0, 1, 0, 1])
    assert baselines.unigram_bits(train, np.array([2]), 3) == pytest.approx(np.log2(7))
    assert baselines.unigram_bits(train, np.array([[0, 1]]), 3) == pytest.approx(
        np.log2(7 / 3))


def test_count_model_bits_hand_worked():
    train = np.array([0, 1, 0, 1])  # "abab"; V = 3
    # p(b) = (2 + 2/3) / (4 + 2) = 4/9; p(b | a) = (2 + 1 · 4/9) / (2 + 1) = 22/27
    got = baselines.count_model_bits(train, np.array([[0]]), np.array([[1]]), 3, order=2)
    assert got == pytest.approx(-np.log2(22 / 27))
    # an unseen context falls back to the letter estimate: p(c) = (0 + 2/3) / 6 = 1/9
    got = baselines.count_model_bits(train, np.array([[2]]), np.array([[2]]), 3, order=2)
    assert got == pytest.approx(np.log2(9))
    # order 1 is the interpolated letter frequencies, whatever the inputs
    got = baselines.count_model_bits(train, np.array([[0, 1]]), np.array([[1, 0]]), 3, order=1)
    assert got == pytest.approx(-np.log2(4 / 9))


def test_count_model_is_a_distribution():
    rng = np.random.default_rng(0)
    train = rng.integers(0, 5, size=301)  # odd size, 5 characters
    for order in (1, 2, 3):
        for last in range(5):  # each one-character context, seen or not
            total = sum(2.0 ** -baselines.count_model_bits(
                train, np.array([[last]]), np.array([[c]]), 5, order=order) for c in range(5))
            assert total == pytest.approx(1.0)
    # a context never reaches before the window: with one input character, a 3-character
    # model can use only that one, as a 2-character model does
    for last, c in ((1, 2), (4, 0), (3, 3)):
        x, y = np.array([[last]]), np.array([[c]])
        assert baselines.count_model_bits(train, x, y, 5, order=3) == pytest.approx(
            baselines.count_model_bits(train, x, y, 5, order=2))


def test_bad_input_names_the_argument():
    train = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match="order"):
        baselines.count_model_bits(train, np.array([[0]]), np.array([[1]]), 3, order=0)
    with pytest.raises(ValueError, match="inputs and targets"):
        baselines.count_model_bits(train, np.array([[0, 1]]), np.array([[1]]), 3)
    with pytest.raises(ValueError, match="targets"):
        baselines.unigram_bits(train, np.array([3]), 3)
    with pytest.raises(ValueError, match="train_ids"):
        baselines.unigram_bits(np.array([0.5, 1.0]), np.array([1]), 3)
    with pytest.raises(ValueError, match="vocab_size"):
        baselines.unigram_bits(train, np.array([1]), 0)
