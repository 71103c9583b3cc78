"""Random sampling (bernoulli, multinomial, normal, poisson, randint_like, bernoulli_,
exponential_): seeded draws repeat, the draws follow their distributions (sample means and
frequencies within a few standard errors of the exact values, with fixed seeds), and bad
arguments raise PyTorch's errors."""

import numpy as np
import pytest

import pyrt

try:
    import torch
except ImportError:
    torch = None

F32 = np.float32
DRAWS = 200_000


def within(sample_mean, mean, sd, n, sigmas=5.0):
    """Whether a sample mean of n draws lies within `sigmas` standard errors of `mean`."""
    return abs(sample_mean - mean) <= sigmas * sd / np.sqrt(n)


def test_seeded_draws_repeat():
    def draws():
        pyrt.manual_seed(11)
        w = pyrt.tensor([[1.0, 2.0, 3.0, 0.5]] * 3)
        return [pyrt.bernoulli(pyrt.full((5,), 0.3)).numpy(),
                pyrt.multinomial(w, 3).numpy(), pyrt.multinomial(w, 7, True).numpy(),
                pyrt.normal(pyrt.zeros(4), 2.0).numpy(), pyrt.poisson(pyrt.full((4,), 3.0)).numpy(),
                pyrt.zeros(4).exponential_(2.0).numpy()]

    for a, b in zip(draws(), draws()):
        np.testing.assert_array_equal(a, b)


def test_bernoulli():
    pyrt.manual_seed(0)
    probs = np.array([0.0, 0.1, 0.5, 0.9, 1.0], F32)
    x = pyrt.tensor(np.tile(probs, (DRAWS // 5, 1)))
    y = pyrt.bernoulli(x)
    assert y.dtype == pyrt.float32 and y.shape == x.shape and not y.requires_grad
    values = y.numpy()
    assert set(np.unique(values)) <= {0.0, 1.0}
    for j, p in enumerate(probs):
        assert within(values[:, j].mean(), p, np.sqrt(p * (1 - p)) + 1e-9, len(values))
    assert within(pyrt.bernoulli(pyrt.zeros(DRAWS), 0.25).numpy().mean(), 0.25,
                  np.sqrt(0.25 * 0.75), DRAWS)
    t = pyrt.zeros(DRAWS)
    assert t.bernoulli_(0.7) is t and within(t.numpy().mean(), 0.7, np.sqrt(0.21), DRAWS)
    assert within(x.bernoulli().numpy()[:, 2].mean(), 0.5, 0.5, len(values))
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        pyrt.bernoulli(pyrt.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
        pyrt.bernoulli(pyrt.tensor([0.5, float("nan")]))
    with pytest.raises(RuntimeError, match="floating-point"):
        pyrt.bernoulli(pyrt.tensor([0, 1]))
    with pytest.raises(TypeError, match="must be a Tensor"):
        pyrt.bernoulli([0.5])


def test_multinomial_with_replacement_follows_the_weights():
    pyrt.manual_seed(1)
    w = np.array([1.0, 0.0, 3.0, 6.0], F32)
    draws = pyrt.multinomial(pyrt.tensor(w), DRAWS, replacement=True).numpy()
    assert draws.dtype == np.int64 and draws.shape == (DRAWS,)
    counts = np.bincount(draws, minlength=4) / DRAWS
    p = w / w.sum()
    assert counts[1] == 0
    for j in range(4):
        assert within(counts[j], p[j], np.sqrt(p[j] * (1 - p[j])), DRAWS)
    rows = pyrt.multinomial(pyrt.tensor([[1.0, 0.0], [0.0, 2.0]]), 5, True).numpy()
    np.testing.assert_array_equal(rows, [[0] * 5, [1] * 5])


def test_multinomial_without_replacement_draws_in_order_without_repeats():
    """Each row's k categories are distinct; the first drawn follows the weights, the second
    the weights left (exact probabilities for 3 categories)."""
    pyrt.manual_seed(2)
    w = np.array([1.0, 2.0, 3.0], F32)
    n = DRAWS // 2
    draws = pyrt.multinomial(pyrt.tensor(np.tile(w, (n, 1))), 2).numpy()
    assert draws.shape == (n, 2) and (draws[:, 0] != draws[:, 1]).all()
    p = w / w.sum()
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(3) if i != j)
                       for j in range(3)])
    for j in range(3):
        first_j = (draws[:, 0] == j).mean()
        second_j = (draws[:, 1] == j).mean()
        assert within(first_j, p[j], np.sqrt(p[j] * (1 - p[j])), n)
        assert within(second_j, second[j], np.sqrt(second[j] * (1 - second[j])), n)
    # all categories of nonzero weight: a permutation of them
    all_of = pyrt.multinomial(pyrt.tensor([[0.0, 1.0, 5.0, 2.0]] * 50), 3).numpy()
    assert (np.sort(all_of, 1) == [1, 2, 3]).all()


def test_multinomial_errors():
    w = pyrt.tensor([1.0, 2.0, 0.0])
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        pyrt.multinomial(w, 4)
    # (zero weights come last once the others are drawn, as in PyTorch)
    assert pyrt.multinomial(w, 3).numpy()[2] == 2
    with pytest.raises(RuntimeError, match="cannot sample n_sample <= 0"):
        pyrt.multinomial(w, 0)
    with pytest.raises(RuntimeError, match="`inf`, `nan` or element < 0"):
        pyrt.multinomial(pyrt.tensor([1.0, -1.0]), 1)
    with pytest.raises(RuntimeError, match="`inf`, `nan` or element < 0"):
        pyrt.multinomial(pyrt.tensor([1.0, float("inf")]), 1)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        pyrt.multinomial(pyrt.tensor([[1.0, 1.0], [0.0, 0.0]]), 1, True)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        pyrt.multinomial(pyrt.ones(2, 2, 2), 1)
    with pytest.raises(TypeError, match="num_samples"):
        pyrt.multinomial(w, 1.5)
    if torch is not None:  # the same exception types as PyTorch's
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.tensor([1.0, 2.0, 0.0]), 4)
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.tensor([1.0, -1.0]), 1)


def test_normal_forms():
    pyrt.manual_seed(3)
    y = pyrt.normal(pyrt.full((DRAWS,), 2.0), 3.0).numpy()
    assert y.dtype == F32 and within(y.mean(), 2.0, 3.0, DRAWS)
    assert abs(y.std() - 3.0) < 0.05
    y = pyrt.normal(-1.0, pyrt.full((DRAWS,), 0.5)).numpy()
    assert within(y.mean(), -1.0, 0.5, DRAWS) and abs(y.std() - 0.5) < 0.01
    assert pyrt.normal(0.0, 1.0, (3, 4)).shape == (3, 4)
    assert pyrt.normal(pyrt.zeros(2, 1), pyrt.ones(3)).shape == (2, 3)
    assert not pyrt.normal(pyrt.zeros(2), pyrt.ones(2)).numpy().std() == 0
    np.testing.assert_array_equal(pyrt.normal(pyrt.tensor([5.0]), 0.0).numpy(), [5.0])
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        pyrt.normal(pyrt.zeros(2), pyrt.tensor([1.0, -1.0]))
    with pytest.raises(TypeError, match="size is required"):
        pyrt.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="size is taken only with numbers"):
        pyrt.normal(pyrt.zeros(2), 1.0, (2,))
    with pytest.raises(TypeError, match="argument 'std' must be a Tensor or a float"):
        pyrt.normal(0.0, "1")


def test_poisson_exponential_and_randint_like():
    pyrt.manual_seed(4)
    rates = np.array([0.0, 0.5, 4.0], F32)
    y = pyrt.poisson(pyrt.tensor(np.tile(rates, (DRAWS // 3, 1)))).numpy()
    assert y.dtype == F32 and (y == np.round(y)).all() and (y[:, 0] == 0).all()
    for j, r in enumerate(rates[1:], 1):
        assert within(y[:, j].mean(), r, np.sqrt(r), len(y))
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        pyrt.poisson(pyrt.tensor([-1.0]))
    t = pyrt.zeros(DRAWS)
    assert t.exponential_(4.0) is t and (t.numpy() >= 0).all()
    assert within(t.numpy().mean(), 0.25, 0.25, DRAWS)
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0"):
        pyrt.zeros(2).exponential_(0.0)
    r = pyrt.randint_like(pyrt.zeros(1000, dtype=pyrt.int64), 3, 7)
    assert r.dtype == pyrt.int64 and r.shape == (1000,)
    assert set(np.unique(r.numpy())) == {3, 4, 5, 6}
    assert set(np.unique(pyrt.randint_like(pyrt.zeros(500), 2).numpy())) == {0.0, 1.0}
