"""Adaptive pooling (F.adaptive_avg_pool2d, F.adaptive_max_pool2d and their modules) and the
vector functions (one_hot, normalize, cosine_similarity, pairwise_distance), each run on pyrt
and on torch and compared: values, dtypes, shapes, indices and the gradients of
sum(out * w) for fixed random weights w, over many shapes and output sizes (hypothesis) at 1
and 2 threads; then module reprs and PyTorch's errors for bad arguments."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.functional as F
from pyrt import adaptive_pool, cuda, nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

EXAMPLES = settings(max_examples=60, deadline=None, derandomize=True)
THREADS = (1, 2)


def normal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def assert_same(yp, yq, rtol=1e-5, atol=1e-6):
    """pyrt's result `yp` and torch's `yq` agree in shape, dtype and values (exactly for
    integers)."""
    assert tuple(yp.shape) == tuple(yq.shape)
    expected = yq.detach().numpy()
    assert str(yp.dtype) == str(expected.dtype)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(yp.detach().numpy(), expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(yp.numpy(), expected)


def against_torch(fn, fn_torch, *arrays, seed=0, rtol=1e-5, atol=1e-6):
    """fn on pyrt leaves and fn_torch on torch leaves made of `arrays` (float32 ones require
    grad); the results compared, then the gradients of the sum of each float result times
    fixed random weights. Returns pyrt's results as a list."""
    ps = [pyrt.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    qs = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    yp, yq = fn(*ps), fn_torch(*qs)
    yp, yq = (list(yp), list(yq)) if isinstance(yq, tuple) else ([yp], [yq])
    assert len(yp) == len(yq)
    rng = np.random.default_rng(seed)
    loss_p, loss_q = None, None
    for a, b in zip(yp, yq):
        assert_same(a, b, rtol, atol)
        if b.dtype.is_floating_point:
            assert a.requires_grad == b.requires_grad
            w = rng.standard_normal(b.shape).astype(np.float32)
            term_p, term_q = (a * pyrt.tensor(w)).sum(), (b * torch.tensor(w)).sum()
            loss_p = term_p if loss_p is None else loss_p + term_p
            loss_q = term_q if loss_q is None else loss_q + term_q
    if loss_q is not None and loss_q.requires_grad:
        loss_p.backward()
        if any(b.numel() == 0 for b in yq):  # torch's backward of an empty pooling refuses
            for p in ps:
                assert p.grad is None or not p.grad.numpy().any()
            return yp
        loss_q.backward()
        for p, q in zip(ps, qs):
            if q.grad is not None:
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(),
                                           rtol=rtol * 10, atol=atol * 10)
    return yp


def same_error(call_pyrt, call_torch, error):
    """Both calls raise `error`, as PyTorch's type."""
    with pytest.raises(error):
        call_torch()
    with pytest.raises(error):
        call_pyrt()


# ---- adaptive pooling ------------------------------------------------------------------------

SIZE = st.integers(0, 9)
OUTPUT_SIZES = st.one_of(st.integers(0, 9),
                         st.tuples(st.one_of(st.none(), SIZE), st.one_of(st.none(), SIZE)))
POOLS = {
    "avg": (F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d),
    "max": (lambda x, s: F.adaptive_max_pool2d(x, s, return_indices=True),
            lambda x, s: TF.adaptive_max_pool2d(x, s, return_indices=True)),
}


def input_shape(batch, c, h, w):
    """[batch, c, h, w], or [c, h, w] for batch None."""
    return (c, h, w) if batch is None else (batch, c, h, w)


@EXAMPLES
@given(batch=st.one_of(st.none(), st.integers(1, 3)), c=st.integers(1, 3),
       h=st.integers(1, 12), w=st.integers(1, 12), output_size=OUTPUT_SIZES,
       seed=st.integers(0, 100))
def test_adaptive_pooling_against_torch(batch, c, h, w, output_size, seed):
    x = normal(input_shape(batch, c, h, w), seed)
    for threads in THREADS:
        with pyrt.num_threads(threads):
            for name, (ours, theirs) in POOLS.items():
                out = against_torch(lambda t, f=ours: f(t, output_size),
                                    lambda t, f=theirs: f(t, output_size), x, seed=seed)
                if name == "max":
                    assert str(out[1].dtype) == "int64" and not out[1].requires_grad


@pytest.mark.parametrize(("shape", "output_size"), [
    ((4, 16, 14, 14), 1),            # global average pooling
    ((2, 8, 14, 14), 7),             # even bins of 2
    ((2, 8, 13, 11), 7),             # overlapping bins
    ((2, 3, 7, 5), (3, 4)),          # bins of 2 and 3 rows, 1 and 2 columns
    ((2, 3, 5, 7), (None, 3)),
    ((3, 5, 7), (4, None)),
    ((1, 2, 3, 3), (6, 5)),          # more outputs than inputs: bins repeat positions
    ((0, 3, 6, 6), 2),               # an empty batch
    ((2, 3, 6, 6), (0, 2)),          # an empty output, as PyTorch allows
])
@pytest.mark.parametrize("threads", THREADS)
def test_adaptive_pooling_examples(shape, output_size, threads):
    x = normal(shape, 3)
    with pyrt.num_threads(threads):
        for ours, theirs in POOLS.values():
            against_torch(lambda t, f=ours: f(t, output_size),
                          lambda t, f=theirs: f(t, output_size), x)


def test_max_takes_the_first_maximum_of_each_bin_as_torch():
    # few distinct values: ties in most bins, the gradient going to the first of them
    x = np.random.default_rng(0).integers(0, 3, (2, 2, 7, 9)).astype(np.float32)
    for output_size in [(3, 4), (7, 2), 1, (2, 3), (7, 9)]:
        for return_indices in (False, True):
            options = (output_size, return_indices)
            against_torch(lambda t, o=options: F.adaptive_max_pool2d(t, *o),
                          lambda t, o=options: TF.adaptive_max_pool2d(t, *o), x)


def test_max_with_nan_gives_torch_indices():
    x = normal((1, 2, 6, 7), 4)
    x[0, 0, 1, 2] = x[0, 0, 2, 1] = x[0, 1, 5, 6] = x[0, 1, 0, 0] = np.nan
    for output_size in [(2, 3), 1, (4, 5), (3, 7)]:
        yp, ip = F.adaptive_max_pool2d(pyrt.tensor(x), output_size, return_indices=True)
        yq, iq = TF.adaptive_max_pool2d(torch.tensor(x), output_size, return_indices=True)
        np.testing.assert_array_equal(yp.numpy(), yq.numpy())  # nan where torch has nan
        np.testing.assert_array_equal(ip.numpy(), iq.numpy())


def test_evenly_divided_inputs_run_on_the_pooling_kernels(monkeypatch):
    calls = []
    for name in ("avg_pool2d", "max_pool2d"):
        kernel = getattr(adaptive_pool, name)
        monkeypatch.setattr(adaptive_pool, name,
                            lambda *a, k=kernel, n=name, **kw: calls.append(n) or k(*a, **kw))
    x = pyrt.tensor(normal((2, 4, 12, 8)))
    F.adaptive_avg_pool2d(x, 1)
    F.adaptive_max_pool2d(x, (3, None))
    F.adaptive_avg_pool2d(pyrt.tensor(normal((4, 6, 6))), (2, 3))
    assert calls == ["avg_pool2d", "max_pool2d", "avg_pool2d"]
    F.adaptive_avg_pool2d(x, 5)  # 12 and 8 not divisible by 5: array operations
    F.adaptive_max_pool2d(x, (None, 3))
    assert len(calls) == 3


def test_global_average_pooling_is_the_mean_over_the_plane():
    x = normal((3, 5, 9, 11), 6)
    with pyrt.num_threads(2):
        y = nn.AdaptiveAvgPool2d(1)(pyrt.tensor(x))
    np.testing.assert_allclose(y.numpy(), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("output_size", [1, 3, (2, 5), (None, 4), (3, None), [2, 3]])
def test_modules_match_torch(output_size):
    x = normal((2, 3, 8, 10), 7)
    for name, kwargs in [("AdaptiveAvgPool2d", {}), ("AdaptiveMaxPool2d", {}),
                         ("AdaptiveMaxPool2d", {"return_indices": True})]:
        ours = getattr(nn, name)(output_size, **kwargs)
        theirs = getattr(torch.nn, name)(output_size, **kwargs)
        assert repr(ours) == repr(theirs)
        against_torch(ours, theirs, x)
        against_torch(ours, theirs, x[0])


def test_adaptive_pooling_errors_as_torch():
    x = normal((2, 3, 5, 7))
    for ours, theirs in POOLS.values():
        for output_size in [-1, (2, -3), (-1, None)]:
            same_error(lambda o=output_size, f=ours: f(pyrt.tensor(x), o),
                       lambda o=output_size, f=theirs: f(torch.tensor(x), o), RuntimeError)
        for output_size in [(1, 2, 3), [2]]:
            same_error(lambda o=output_size, f=ours: f(pyrt.tensor(x), o),
                       lambda o=output_size, f=theirs: f(torch.tensor(x), o), RuntimeError)
        for output_size in [(1.5, 2), True, "2"]:
            same_error(lambda o=output_size, f=ours: f(pyrt.tensor(x), o),
                       lambda o=output_size, f=theirs: f(torch.tensor(x), o), TypeError)
        for shape in [(5,), (5, 7), (1, 2, 3, 4, 5), (2, 3, 0, 7), (3, 5, 0)]:
            same_error(lambda s=shape, f=ours: f(pyrt.tensor(np.zeros(s, np.float32)), 2),
                       lambda s=shape, f=theirs: f(torch.zeros(s), 2), RuntimeError)
    # max pooling also refuses empty channels (average pooling gives an empty result)
    empty = np.zeros((2, 0, 4, 4), np.float32)
    against_torch(lambda t: F.adaptive_avg_pool2d(t, 3),
                  lambda t: TF.adaptive_avg_pool2d(t, 3), empty)
    same_error(lambda: F.adaptive_max_pool2d(pyrt.tensor(empty), 2),
               lambda: TF.adaptive_max_pool2d(torch.tensor(empty), 2), RuntimeError)
    labels = np.arange(2 * 16).reshape(2, 1, 4, 4)
    same_error(lambda: F.adaptive_avg_pool2d(pyrt.tensor(labels), 2),
               lambda: TF.adaptive_avg_pool2d(torch.tensor(labels), 2), RuntimeError)
    same_error(lambda: F.adaptive_max_pool2d(pyrt.tensor(labels), 2),
               lambda: TF.adaptive_max_pool2d(torch.tensor(labels), 2), NotImplementedError)
    with pytest.raises(TypeError, match="must be a Tensor"):
        F.adaptive_avg_pool2d(x, 2)


def test_modules_refuse_bad_output_sizes_when_built():
    # PyTorch refuses them at the first call; pyrt at once, with the same error types
    x = torch.zeros(1, 1, 4, 4)
    for output_size, error in [(-2, RuntimeError), ((1, 2, 3), RuntimeError),
                               ((2.0, 2), TypeError)]:
        for name in ("AdaptiveAvgPool2d", "AdaptiveMaxPool2d"):
            with pytest.raises(error):
                getattr(torch.nn, name)(output_size)(x)
            with pytest.raises(error):
                getattr(nn, name)(output_size)
    with pytest.raises(TypeError, match="return_indices must be a bool"):
        nn.AdaptiveMaxPool2d(2, return_indices=1)
    with pytest.raises(TypeError, match="must be a Tensor"):
        nn.AdaptiveAvgPool2d(2)(np.zeros((1, 4, 4), np.float32))


# ---- one_hot ---------------------------------------------------------------------------------


@EXAMPLES
@given(shape=st.lists(st.integers(0, 4), max_size=3).map(tuple), classes=st.integers(1, 6),
       extra=st.one_of(st.none(), st.integers(0, 3)), seed=st.integers(0, 100))
def test_one_hot_against_torch(shape, classes, extra, seed):
    labels = np.random.default_rng(seed).integers(0, classes, shape)
    num_classes = -1 if extra is None else classes + extra
    if extra is None and labels.size == 0:
        same_error(lambda: F.one_hot(pyrt.tensor(labels)),
                   lambda: TF.one_hot(torch.tensor(labels)), RuntimeError)
        return
    yp = F.one_hot(pyrt.tensor(labels), num_classes)
    assert_same(yp, TF.one_hot(torch.tensor(labels), num_classes))
    assert not yp.requires_grad


def test_one_hot_errors_as_torch():
    labels = np.array([0, 2, 1])
    for bad, num_classes in [([0, -1, 1], -1), ([0, 3, 1], 3), ([0, 2], 2), ([0, 1], 0),
                             ([0, 1], -2), ([], -1), ([], 0)]:
        a = np.array(bad, np.int64)
        same_error(lambda a=a, n=num_classes: F.one_hot(pyrt.tensor(a), n),
                   lambda a=a, n=num_classes: TF.one_hot(torch.tensor(a), n), RuntimeError)
    for other in [labels.astype(np.float32), labels > 0]:
        same_error(lambda o=other: F.one_hot(pyrt.tensor(o), 3),
                   lambda o=other: TF.one_hot(torch.tensor(o), 3), RuntimeError)
    for num_classes in [3.0, None, True]:
        same_error(lambda n=num_classes: F.one_hot(pyrt.tensor(labels), n),
                   lambda n=num_classes: TF.one_hot(torch.tensor(labels), n), TypeError)
    with pytest.raises(TypeError):
        F.one_hot([0, 1], 2)


# ---- normalize, cosine_similarity, pairwise_distance ----------------------------------------

VECTOR_SHAPES = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple)
P_VALUES = [2.0, 1.0, 3.0, 0.5, float("inf"), "fro"]


def broadcast_partner(shape, drop_lead, ones):
    """A shape that broadcasts against `shape`: leading dims dropped, others set to 1."""
    partner = list(shape[drop_lead:])
    for i in ones:
        if i < len(partner):
            partner[i] = 1
    return tuple(partner)


@EXAMPLES
@given(shape=VECTOR_SHAPES, dim=st.integers(-3, 2), p=st.sampled_from(P_VALUES),
       zero_rows=st.booleans(), seed=st.integers(0, 100))
def test_normalize_against_torch(shape, dim, p, zero_rows, seed):
    if not -len(shape) <= dim < len(shape):
        same_error(lambda: F.normalize(pyrt.tensor(normal(shape)), dim=dim),
                   lambda: TF.normalize(torch.tensor(normal(shape)), dim=dim), IndexError)
        return
    x = normal(shape, seed)
    if zero_rows:  # vectors of norm 0, and below eps: the clamp's side
        x.reshape(-1)[: x.size // 2] = 0
        x.reshape(-1)[-1] = 1e-13
    for threads in THREADS:
        with pyrt.num_threads(threads):
            against_torch(lambda t: F.normalize(t, p, dim), lambda t: TF.normalize(t, p, dim),
                          x, seed=seed, rtol=1e-5, atol=1e-6)
    against_torch(lambda t: F.normalize(t, dim=dim, eps=0.5),
                  lambda t: TF.normalize(t, dim=dim, eps=0.5), x)


@EXAMPLES
@given(shape=VECTOR_SHAPES, dim=st.integers(-3, 2), drop_lead=st.integers(0, 2),
       ones=st.lists(st.integers(0, 2), max_size=2), swap=st.booleans(),
       small=st.booleans(), seed=st.integers(0, 100))
def test_cosine_similarity_and_pairwise_distance_against_torch(shape, dim, drop_lead, ones,
                                                               swap, small, seed):
    a = normal(shape, seed)
    b = normal(broadcast_partner(shape, min(drop_lead, len(shape) - 1), ones), seed + 1)
    if small:  # norms at and below eps: zero vectors and tiny ones
        a.reshape(-1)[0::3] = 0
        b.reshape(-1)[1::2] *= 1e-9
    if swap:
        a, b = b, a
    if -len(shape) <= dim < len(shape):
        for threads in THREADS:
            with pyrt.num_threads(threads):
                against_torch(lambda s, t: F.cosine_similarity(s, t, dim),
                              lambda s, t: TF.cosine_similarity(s, t, dim), a, b, seed=seed,
                              rtol=1e-5, atol=1e-6)
    else:
        same_error(lambda: F.cosine_similarity(pyrt.tensor(a), pyrt.tensor(b), dim),
                   lambda: TF.cosine_similarity(torch.tensor(a), torch.tensor(b), dim),
                   IndexError)
    for p, keepdim in [(2.0, False), (1.0, True), (3.0, False), (float("inf"), False)]:
        against_torch(lambda s, t, p=p, k=keepdim: F.pairwise_distance(s, t, p, keepdim=k),
                      lambda s, t, p=p, k=keepdim: TF.pairwise_distance(s, t, p, keepdim=k),
                      a, b, seed=seed, rtol=1e-5, atol=1e-6)


def test_vector_functions_on_edge_shapes():
    one, two = np.array(1.5, np.float32), np.array(-2.0, np.float32)
    against_torch(lambda s, t: F.cosine_similarity(s, t, 0),
                  lambda s, t: TF.cosine_similarity(s, t, 0), one, two)
    against_torch(F.pairwise_distance, TF.pairwise_distance, one, two)
    against_torch(lambda s, t: F.cosine_similarity(s, t, dim=0),
                  lambda s, t: TF.cosine_similarity(s, t, dim=0), normal((4,)), normal((4,), 1))
    against_torch(F.pairwise_distance, TF.pairwise_distance, normal((4,)), normal((4,), 1))
    against_torch(F.normalize, TF.normalize, np.zeros((3, 4), np.float32))
    # an integer operand is promoted beside a float one, as torch promotes it
    labels = np.array([[1, 0, 2], [0, 0, 0]])
    against_torch(lambda s, t: F.cosine_similarity(s, t),
                  lambda s, t: TF.cosine_similarity(s, t), labels, normal((2, 3)))


def test_vector_function_errors_as_torch():
    a, b = normal((3, 4)), normal((2, 4))
    same_error(lambda: F.cosine_similarity(pyrt.tensor(a), pyrt.tensor(b)),
               lambda: TF.cosine_similarity(torch.tensor(a), torch.tensor(b)), RuntimeError)
    same_error(lambda: F.pairwise_distance(pyrt.tensor(a), pyrt.tensor(b)),
               lambda: TF.pairwise_distance(torch.tensor(a), torch.tensor(b)), RuntimeError)
    labels = np.arange(6).reshape(2, 3)
    same_error(lambda: F.cosine_similarity(pyrt.tensor(labels), pyrt.tensor(labels)),
               lambda: TF.cosine_similarity(torch.tensor(labels), torch.tensor(labels)),
               RuntimeError)
    same_error(lambda: F.normalize(pyrt.tensor(labels)),
               lambda: TF.normalize(torch.tensor(labels)), RuntimeError)
    same_error(lambda: F.cosine_similarity([1.0, 2.0], pyrt.tensor(a[0])),
               lambda: TF.cosine_similarity([1.0, 2.0], torch.tensor(a[0])), TypeError)
    with pytest.raises(TypeError, match="must be Tensor"):
        F.normalize([1.0, 2.0])


# ---- the CUDA backend ------------------------------------------------------------------------


@pytest.mark.skipif(not cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("output_size", [1, 2, (3, 5), (None, 4)])
def test_adaptive_pooling_on_cuda_matches_the_cpu(output_size):
    cuda.require()
    x = normal((2, 3, 8, 10), 9)
    w = normal((2, 3, 8, 10), 10)
    for f in (F.adaptive_avg_pool2d, lambda t, s: F.adaptive_max_pool2d(t, s, True)):
        results = []
        for device in ("cpu", "cuda"):
            t = pyrt.tensor(x, requires_grad=True, device=device)
            out = f(t, output_size)
            y = out[0] if isinstance(out, tuple) else out
            (y * pyrt.tensor(w[..., :y.shape[2], :y.shape[3]], device=device)).sum().backward()
            results.append([y.detach().cpu().numpy(), t.grad.cpu().numpy()]
                           + ([out[1].cpu().numpy()] if isinstance(out, tuple) else []))
        for ours, reference in zip(*results):
            np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not cuda.is_available(), reason="no CUDA device")
def test_vector_functions_on_cuda_match_the_cpu():
    cuda.require()
    a, b = normal((4, 5), 11), normal((4, 5), 12)
    labels = np.array([[0, 3], [2, 1]])
    for device in ("cpu", "cuda"):
        s = pyrt.tensor(a, requires_grad=True, device=device)
        t = pyrt.tensor(b, requires_grad=True, device=device)
        (F.cosine_similarity(s, t).sum() + F.normalize(s).sum()
         + F.pairwise_distance(s, t).sum()).backward()
        hot = F.one_hot(pyrt.tensor(labels, device=device), 5)
        if device == "cpu":
            expected = [s.grad.numpy(), t.grad.numpy(), hot.numpy()]
        else:
            for ours, reference in zip([s.grad, t.grad, hot], expected):
                np.testing.assert_allclose(ours.cpu().numpy(), reference, rtol=1e-5,
                                           atol=1e-6)
