"""pyrt.device and dtype, layouts and memory formats, pyrt.cuda without a GPU, compile, jit,
cond and while_loop, bit shifts, binomial, DLPack and buffers, and Tensor's small methods
(apply_, map_, resize_, share_memory_, the complex views of real tensors): against PyTorch
where installed, and against NumPy and definitions written out here."""

import multiprocessing
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import cuda

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
no_gpu = pytest.mark.skipif(cuda.is_available(), reason="checks the behaviour without a GPU")
SMALL = settings(max_examples=20, deadline=None, derandomize=True)


# ---- pyrt.device -------------------------------------------------------------------------------

DEVICE_ARGS = [("cpu",), ("cuda",), ("cuda:0",), ("cuda:3",), ("cpu:0",), ("cuda", 0),
               ("cuda", 2), ("cpu", 1)]
BAD_DEVICES = ["gpu", "cuda:-1", "cuda:x", "cuda:0:1", " cpu", "cuda:", "CPU"]


@pytest.mark.parametrize("args", DEVICE_ARGS)
def test_device_parses_as_torch(args):
    ours = pyrt.device(*args)
    assert (ours.type, ours.index) == (args[0].split(":")[0], _index_of(args))
    assert repr(ours).startswith("device(type=")
    if torch is not None:
        theirs = torch.device(*args)
        assert (ours.type, ours.index, str(ours), repr(ours)) == (
            theirs.type, theirs.index, str(theirs), repr(theirs))


def _index_of(args):
    if len(args) == 2:
        return args[1]
    number = args[0].partition(":")[2]
    return int(number) if number else None


@pytest.mark.parametrize("name", BAD_DEVICES)
def test_bad_device_strings_are_torchs_runtime_error(name):
    with pytest.raises(RuntimeError):
        pyrt.device(name)
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.device(name)


def test_device_argument_errors():
    with pytest.raises(RuntimeError, match="must not be negative"):
        pyrt.device("cuda", -1)
    with pytest.raises(RuntimeError, match="must not include an index"):
        pyrt.device("cuda:0", 0)
    with pytest.raises(TypeError, match="'type' must be str"):
        pyrt.device(1.5)
    with pytest.raises(TypeError, match="'index' must be int"):
        pyrt.device("cuda", "0")
    if not cuda.is_available():
        with pytest.raises(RuntimeError, match="accelerator"):
            pyrt.device(0)


def test_device_equality_hash_and_pickle():
    cpu, cuda0, cuda_ = pyrt.device("cpu"), pyrt.device("cuda:0"), pyrt.device("cuda")
    # between devices, as torch: the index counts
    assert cpu == pyrt.device("cpu") and cuda0 == pyrt.device("cuda", 0)
    assert cuda0 != cuda_ and cpu != cuda_
    if torch is not None:
        assert (torch.device("cuda:0") == torch.device("cuda")) is (cuda0 == cuda_)
    # with its name as a string: equal, and hashed alike (where torch says unequal)
    assert cpu == "cpu" and cuda0 == "cuda:0" and cuda0 != "cuda"
    assert {"cpu": 1}[cpu] == 1 and hash(cuda0) == hash("cuda:0")
    assert pyrt.device(cpu) is cpu and f"{cuda0}" == "cuda:0"
    for d in (cpu, cuda0, cuda_):
        back = pickle.loads(pickle.dumps(d))
        assert type(back) is pyrt.device and back == d and repr(back) == repr(d)


def test_tensor_device_is_a_device_equal_to_its_name():
    t = pyrt.ones(2)
    assert isinstance(t.device, pyrt.device) and t.device == "cpu"
    assert repr(t.device) == "device(type='cpu')" and t.device.type == "cpu"
    assert t.device.index is None
    if torch is not None:
        assert repr(t.device) == repr(torch.ones(2).device)


def test_device_objects_are_accepted_wherever_names_are():
    cpu = pyrt.device("cpu")
    for made in (pyrt.zeros(2, device=cpu), pyrt.ones(2, device="cpu:0"),
                 pyrt.empty(2, device=cpu), pyrt.full((2,), 1.0, device=cpu),
                 pyrt.tensor([1.0], device=cpu), pyrt.arange(3, device=cpu),
                 pyrt.randn(2, device=cpu), pyrt.eye(2, device=cpu)):
        assert made.device == "cpu"
    t = pyrt.ones(2)
    assert t.to(cpu) is t and t.to(device=cpu) is t and t.to("cpu:0") is t
    net = pyrt.nn.Linear(2, 2)
    assert net.to(cpu) is net and net.weight.device == cpu
    with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
        t.to("tpu")
    with pytest.raises(RuntimeError, match="one CUDA device"):
        t.to("cuda:1")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        t.to("cuda:x")


def test_default_device():
    assert pyrt.get_default_device() == "cpu"
    assert isinstance(pyrt.get_default_device(), pyrt.device)
    try:
        pyrt.set_default_device(pyrt.device("cpu"))
        assert pyrt.zeros(2).device == "cpu"
        if cuda.is_available():
            pyrt.set_default_device("cuda")
            assert pyrt.get_default_device() == "cuda:0"
            assert pyrt.zeros(2).device == "cuda:0" and pyrt.tensor([1]).device == "cuda:0"
            assert pyrt.zeros(2, device="cpu").device == "cpu"
        else:
            with pytest.raises(RuntimeError, match="'cuda' is not available"):
                pyrt.set_default_device("cuda")
            assert pyrt.get_default_device() == "cpu"
        with pytest.raises(ValueError, match="device must be"):
            pyrt.set_default_device("tpu")
    finally:
        pyrt.set_default_device(None)
    assert pyrt.get_default_device() == "cpu" and pyrt.randn(1).device == "cpu"


def test_dtype_is_the_type_of_the_dtypes():
    for dt in (pyrt.float32, pyrt.int64, pyrt.bool, pyrt.long, pyrt.float):
        assert isinstance(dt, pyrt.dtype)
    assert pyrt.ones(2).dtype == pyrt.float32 and pyrt.dtype("int64") == pyrt.int64


# ---- layouts and memory formats ----------------------------------------------------------------

FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


def test_layout_and_format_names():
    assert pyrt.ones(2).layout is pyrt.strided and isinstance(pyrt.strided, pyrt.layout)
    assert repr(pyrt.strided) == "pyrt.strided"
    for name in FORMATS:
        fmt = getattr(pyrt, name)
        assert isinstance(fmt, pyrt.memory_format) and repr(fmt) == f"pyrt.{name}"
        assert pickle.loads(pickle.dumps(fmt)) is fmt
        if torch is not None:
            assert repr(getattr(torch, name)) == f"torch.{name}"


def _torch_format(fmt):
    return getattr(torch, repr(fmt).removeprefix("pyrt."))


@needs_torch
@SMALL
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=5), seed=st.integers(0, 99),
       fmt=st.sampled_from(FORMATS))
def test_memory_format_calls_as_torch(shape, seed, fmt):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    ours, theirs = pyrt.tensor(x), torch.tensor(x)
    fmt = getattr(pyrt, fmt)
    tfmt = _torch_format(fmt)
    assert ours.is_contiguous(memory_format=fmt) == theirs.is_contiguous(memory_format=tfmt)
    for call in (lambda t, f: t.contiguous(memory_format=f),
                 lambda t, f: t.clone(memory_format=f),
                 lambda t, f: t.to(memory_format=f)):
        try:
            expected = call(theirs, tfmt)
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match=str(exc)[:30]):
                call(ours, fmt)
            continue
        got = call(ours, fmt)
        np.testing.assert_array_equal(got._data, expected.numpy())
        assert got._data.flags.c_contiguous


@needs_torch
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 3, 1, 1), (2, 1, 3, 3), (2, 3, 1, 4)])
def test_is_contiguous_reads_real_strides_as_torch(shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    channels_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    theirs = torch.tensor(x).contiguous(memory_format=torch.channels_last)
    ours = pyrt.Tensor(channels_last)
    assert ours.stride() == theirs.stride()
    for fmt in ("contiguous_format", "channels_last"):
        assert (ours.is_contiguous(memory_format=getattr(pyrt, fmt))
                == theirs.is_contiguous(memory_format=getattr(torch, fmt)))
    assert pyrt.tensor(x).is_contiguous(memory_format=pyrt.channels_last) == (
        torch.tensor(x).is_contiguous(memory_format=torch.channels_last))


def test_memory_format_errors_and_empty():
    x = pyrt.ones(2, 3)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last"):
        x.contiguous(memory_format=pyrt.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5"):
        pyrt.ones(1, 2, 3, 4).clone(memory_format=pyrt.channels_last_3d)
    with pytest.raises(TypeError, match="must be pyrt.memory_format"):
        x.contiguous(memory_format=pyrt.strided)
    with pytest.raises(RuntimeError, match="unsupported memory format Preserve"):
        pyrt.empty(2, 3, memory_format=pyrt.preserve_format)
    assert x.is_contiguous(memory_format=pyrt.channels_last) is False
    assert pyrt.empty(1, 2, 3, 4, memory_format=pyrt.channels_last).shape == (1, 2, 3, 4)
    assert pyrt.empty(2, 3, memory_format=pyrt.contiguous_format).shape == (2, 3)
    y = pyrt.ones(2, 3, requires_grad=True)
    y.clone(memory_format=pyrt.preserve_format).sum().backward()
    np.testing.assert_array_equal(y.grad._data, np.ones((2, 3)))
    assert y.to(memory_format=pyrt.contiguous_format) is y
    assert y.to(copy=True) is not y


# ---- pyrt.cuda without a GPU -------------------------------------------------------------------


def test_cuda_is_an_attribute_after_import_pyrt_without_cupy():
    code = ("import sys, pyrt; print(pyrt.cuda.is_available() in (True, False), "
            "'cupy' in sys.modules, pyrt.cuda.device_count() >= 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split()[:2] == ["True", "False"]


@no_gpu
def test_cuda_without_a_gpu():
    assert cuda.is_available() is False and cuda.device_count() == 0
    assert cuda.is_bf16_supported() is False
    assert cuda.memory_allocated() == 0 and cuda.max_memory_allocated() == 0
    cuda.empty_cache()
    cuda.reset_peak_memory_stats()
    assert cuda.manual_seed(0) is None and cuda.manual_seed_all(1) is None
    for call in (cuda.current_device, cuda.get_device_name, cuda.get_device_properties,
                 cuda.synchronize, lambda: cuda.set_device(0), lambda: cuda.set_device("cuda")):
        with pytest.raises(RuntimeError, match="'cuda' is not available"):
            call()
    with cuda.device(None), cuda.device(-1):
        pass
    with pytest.raises(RuntimeError, match="'cuda' is not available"), cuda.device(0):
        pass
    if torch is not None:
        assert torch.cuda.device_count() == cuda.device_count()
        assert torch.cuda.memory_allocated() == cuda.memory_allocated()


def test_cuda_argument_errors():
    with pytest.raises(RuntimeError, match="one CUDA device"):
        cuda.memory_allocated(1)
    with pytest.raises(ValueError, match="expected a cuda device"):
        cuda.set_device("cpu")
    with pytest.raises(TypeError, match="device must be None, an int"):
        cuda.memory_allocated(1.0)
    with pytest.raises(TypeError, match="seed must be an int"):
        cuda.manual_seed("0")


# ---- compile, jit, cond, while_loop ------------------------------------------------------------


def test_compile_returns_its_argument():
    net = pyrt.nn.Linear(2, 3)

    def f(x):
        return x * 2

    assert pyrt.compile(net) is net and pyrt.compile(f, mode="max-autotune") is f
    assert pyrt.compile()(f) is f and pyrt.compile(backend="eager", fullgraph=True)(f) is f

    @pyrt.compile
    def g(x):
        return x + 1

    @pyrt.compile(dynamic=True)
    def h(x):
        return x - 1

    assert g(1) == 2 and h(1) == 0
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        pyrt.compile(f, mode="fast")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        pyrt.compile(f, mode="default", options={})
    with pytest.raises(RuntimeError, match="Invalid backend"):
        pyrt.compile(f, backend="nope")
    with pytest.raises(TypeError, match="callable function is expected"):
        pyrt.compile(1)


def test_jit_is_identity_like():
    net = pyrt.nn.Linear(2, 3)

    def f(x):
        return x

    assert pyrt.jit.script(net) is net and pyrt.jit.trace(f, (pyrt.ones(1),)) is f
    assert pyrt.jit.ignore(f) is f and pyrt.jit.ignore(drop=True)(f) is f
    assert pyrt.jit.unused(f) is f and pyrt.jit.export(f) is f
    assert pyrt.jit.is_scripting() is False and pyrt.jit.is_tracing() is False
    with pytest.raises(TypeError, match="script"):
        pyrt.jit.script(3)


@pytest.mark.parametrize("pred", [True, False, 1, 0.0, "tensor_true", "tensor_false"])
def test_cond_takes_the_branch(pred):
    x = np.arange(3, dtype=np.float32)
    ours_pred = {"tensor_true": pyrt.tensor(True), "tensor_false": pyrt.tensor([False])}.get(
        pred, pred) if isinstance(pred, str) else pred
    got = pyrt.cond(ours_pred, lambda a: a + 1, lambda a: a - 1, (pyrt.tensor(x),))
    expected = x + 1 if pred in (True, 1, "tensor_true") else x - 1
    np.testing.assert_array_equal(got._data, expected)
    if torch is not None:
        their_pred = {"tensor_true": torch.tensor(True),
                      "tensor_false": torch.tensor([False])}.get(pred, pred) \
            if isinstance(pred, str) else pred
        theirs = torch.cond(their_pred, lambda a: a + 1, lambda a: a - 1, (torch.tensor(x),))
        np.testing.assert_array_equal(got._data, theirs.numpy())


def test_cond_errors():
    x = (pyrt.ones(2),)
    with pytest.raises(RuntimeError, match="single-element tensor"):
        pyrt.cond(pyrt.tensor([True, False]), lambda a: a, lambda a: a, x)
    with pytest.raises(RuntimeError, match="Expected pred to be bool or tensor"):
        pyrt.cond("a", lambda a: a, lambda a: a, x)
    with pytest.raises(RuntimeError, match="callable"):
        pyrt.cond(True, 1, lambda a: a, x)
    with pytest.raises(RuntimeError, match="operands to be a tuple or a list"):
        pyrt.cond(True, lambda a: a, lambda a: a, pyrt.ones(2))


def test_while_loop():
    i, total = pyrt.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s + i),
                               (pyrt.tensor(0), pyrt.tensor(0)))
    assert (i.item(), total.item()) == (5, 10)
    if torch is not None:
        ti, ts = torch._higher_order_ops.while_loop(
            lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (torch.tensor(0), torch.tensor(0)))
        assert (ti.item(), ts.item()) == (5, 10)
    assert pyrt.while_loop(lambda i: i < 0, lambda i: (i + 1,), [3]) == (3,)
    with pytest.raises(RuntimeError, match="callable"):
        pyrt.while_loop(1, lambda i: i, (0,))
    with pytest.raises(RuntimeError, match="carried_inputs to be a tuple"):
        pyrt.while_loop(lambda i: i < 3, lambda i: (i + 1,), pyrt.tensor(0))
    with pytest.raises(RuntimeError, match="same number of elements"):
        pyrt.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1,), (0, 0))


# ---- small top-level names ---------------------------------------------------------------------


def test_warn_always():
    assert pyrt.is_warn_always_enabled() is False
    pyrt.set_warn_always(True)
    assert pyrt.is_warn_always_enabled() is True
    pyrt.set_warn_always(False)
    with pytest.raises(TypeError, match="must be bool"):
        pyrt.set_warn_always(1)


def test_empty_strided_and_new_empty_strided():
    t = pyrt.empty_strided((2, 3), (1, 2), dtype=pyrt.int64)
    assert t.shape == (2, 3) and t.dtype == pyrt.int64 and t.device == "cpu"
    u = pyrt.ones(1, dtype=pyrt.int64).new_empty_strided((4,), (1,))
    assert u.shape == (4,) and u.dtype == pyrt.int64
    assert pyrt.empty_strided((2,), (1,), requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        pyrt.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match="non-negative"):
        pyrt.empty_strided((2,), (-1,))
    with pytest.raises(TypeError, match="'size' must be a tuple of ints"):
        pyrt.empty_strided(2, (1,))


@needs_torch
def test_fill_out_of_place_with_gradient():
    x = pyrt.ones(2, 3, requires_grad=True)
    v = pyrt.tensor(2.5, requires_grad=True)
    out = pyrt.fill(x, v)
    tx, tv = torch.ones(2, 3, requires_grad=True), torch.tensor(2.5, requires_grad=True)
    tout = torch.fill(tx, tv)
    np.testing.assert_array_equal(out._data, tout.detach().numpy())
    (out * pyrt.tensor(np.arange(6.0).reshape(2, 3))).sum().backward()
    (tout * torch.arange(6.0).reshape(2, 3)).sum().backward()
    np.testing.assert_allclose(v.grad._data, tv.grad.numpy())
    assert x.grad is None or np.all(x.grad._data == 0)
    np.testing.assert_array_equal(x._data, np.ones((2, 3)))
    assert pyrt.fill(pyrt.ones(2, dtype=pyrt.int64), 3).tolist() == [3, 3]
    with pytest.raises(TypeError, match="'input' must be a Tensor"):
        pyrt.fill([1.0], 2)


def test_unsafe_splits_are_the_splits():
    x = pyrt.arange(10)
    for got, expected in ((pyrt.unsafe_chunk(x, 3), x.chunk(3)),
                          (pyrt.unsafe_split(x, 4), x.split(4)),
                          (pyrt.unsafe_split_with_sizes(x, [3, 7]), x.split_with_sizes([3, 7])),
                          (x.unsafe_split(3), x.split(3))):
        assert [t.tolist() for t in got] == [t.tolist() for t in expected]


def test_top_level_in_place_number_functions():
    a = pyrt.tensor([12, 18, -8])
    assert pyrt.gcd_(a, pyrt.tensor([8, 12, 6])) is a and a.tolist() == [4, 6, 2]
    assert pyrt.lcm_(a, pyrt.tensor([6, 4, 3])).tolist() == [12, 12, 6]
    f = pyrt.tensor([0.0, 1.0])
    pyrt.i0_(f)
    np.testing.assert_allclose(f._data, np.i0([0.0, 1.0]), rtol=1e-6)
    g = pyrt.tensor([1.0, 3.0])
    pyrt.ldexp_(g, pyrt.tensor([2, 3]))
    assert g.tolist() == [4.0, 24.0]


# ---- bit shifts --------------------------------------------------------------------------------


def _shift_reference(a, s, left):
    """a << s or a >> s over Python ints, as PyTorch defines them on int64."""
    if s < 0 or s >= 64:
        return 0 if left or a >= 0 else -1
    if not left:
        return a >> s
    value = (a << s) & (2 ** 64 - 1)
    return value - 2 ** 64 if value >= 2 ** 63 else value


INT64 = st.integers(-2 ** 63, 2 ** 63 - 1)


@SMALL
@given(values=st.lists(st.tuples(st.one_of(st.integers(-50, 50), INT64),
                                 st.integers(-3, 70)), min_size=1, max_size=12))
def test_shifts_against_a_reference_and_torch(values):
    a = pyrt.tensor([v for v, _ in values])
    s = pyrt.tensor([k for _, k in values])
    for left, ours in ((True, pyrt.bitwise_left_shift(a, s)), (False, a >> s)):
        assert ours.dtype == pyrt.int64
        assert ours.tolist() == [_shift_reference(v, k, left) for v, k in values]
        if torch is not None:
            ta, ts = torch.tensor(a.tolist()), torch.tensor(s.tolist())
            theirs = ta << ts if left else torch.bitwise_right_shift(ta, ts)
            assert ours.tolist() == theirs.tolist()


def test_shift_forms_and_operators():
    x = pyrt.tensor([1, 2, -3])
    assert (x << 2).tolist() == [4, 8, -12] and (x >> 1).tolist() == [0, 1, -2]
    assert (1 << x).tolist() == [2, 4, 0] and (64 >> pyrt.tensor([1, 3])).tolist() == [32, 8]
    assert x.bitwise_left_shift(1).tolist() == [2, 4, -6]
    assert pyrt.bitwise_right_shift(x, pyrt.tensor([0, 1, 1])).tolist() == [1, 1, -2]
    assert (pyrt.tensor([[1], [2]]) << pyrt.tensor([0, 1])).tolist() == [[1, 2], [2, 4]]
    assert (pyrt.tensor([True, False]) << 1).tolist() == [2, 0]
    y = pyrt.tensor([1, 2, 3])
    ref = y
    y <<= 3
    assert y is ref and y.tolist() == [8, 16, 24]
    y >>= pyrt.tensor([1, 2, 3])
    assert y is ref and y.tolist() == [4, 4, 3]
    assert y.bitwise_left_shift_(1) is y and y.bitwise_right_shift_(2).tolist() == [2, 2, 1]
    with pytest.raises(NotImplementedError, match="'Float'"):
        pyrt.ones(2) << 1
    with pytest.raises(NotImplementedError, match="'Float'"):
        x << 1.5
    with pytest.raises(NotImplementedError, match="'Bool'"):
        pyrt.tensor([True]) << True
    with pytest.raises(TypeError, match="must be a Tensor"):
        pyrt.bitwise_left_shift(1, 2)
    with pytest.raises(TypeError, match="other must be a Tensor, an int"):
        x << "a"
    with pytest.raises(RuntimeError, match="must match the size"):
        x << pyrt.tensor([1, 2])


# ---- binomial ----------------------------------------------------------------------------------


def test_binomial_statistics_and_seed():
    count = pyrt.full((20000,), 10.0)
    prob = pyrt.full((20000,), 0.3)
    pyrt.manual_seed(3)
    draws = pyrt.binomial(count, prob)
    pyrt.manual_seed(3)
    again = pyrt.binomial(count, prob)
    np.testing.assert_array_equal(draws._data, again._data)
    d = draws._data.astype(np.float64)
    assert draws.dtype == pyrt.float32 and np.all((d >= 0) & (d <= 10) & (d == np.floor(d)))
    # the mean and variance of Binomial(10, 0.3), 3 and 2.1, within a few standard errors
    assert abs(d.mean() - 3.0) < 4 * np.sqrt(2.1 / d.size)
    assert abs(d.var() - 2.1) < 0.1
    edge = pyrt.binomial(pyrt.tensor([5.0, 5.0, 0.0]), pyrt.tensor([0.0, 1.0, 0.5]))
    assert edge.tolist() == [0.0, 5.0, 0.0]
    assert pyrt.binomial(pyrt.tensor([3.0, 4.0]), pyrt.tensor([1.0])).tolist() == [3.0, 4.0]
    seeded = pyrt.binomial(count[:5], prob[:5], generator=np.random.default_rng(0))
    assert seeded.tolist() == pyrt.binomial(count[:5], prob[:5],
                                            generator=np.random.default_rng(0)).tolist()


def test_binomial_errors():
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        pyrt.binomial(pyrt.tensor([3]), pyrt.tensor([0.5]))
    with pytest.raises(ValueError, match="non-negative whole numbers"):
        pyrt.binomial(pyrt.tensor([-1.0]), pyrt.tensor([0.5]))
    with pytest.raises(ValueError, match="non-negative whole numbers"):
        pyrt.binomial(pyrt.tensor([1.5]), pyrt.tensor([0.5]))
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        pyrt.binomial(pyrt.tensor([2.0]), pyrt.tensor([1.5]))
    with pytest.raises(TypeError, match="'prob' must be a Tensor"):
        pyrt.binomial(pyrt.tensor([2.0]), 0.5)


# ---- embedding_renorm_, frombuffer, DLPack -----------------------------------------------------


def test_embedding_renorm_against_a_reference_and_torch():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((6, 4)) * 2).astype(np.float32)
    idx = np.array([[0, 2], [2, 5]])
    ours = pyrt.tensor(w)
    assert pyrt.embedding_renorm_(ours, pyrt.tensor(idx), 1.5, 2.0) is ours
    expected = w.astype(np.float64)
    for row in np.unique(idx):
        norm = np.linalg.norm(expected[row])
        if norm > 1.5:
            expected[row] *= 1.5 / (norm + 1e-7)
    np.testing.assert_allclose(ours._data, expected, rtol=1e-6)
    if torch is not None:
        theirs = torch.tensor(w)
        torch.embedding_renorm_(theirs, torch.tensor(idx), 1.5, 1.0)
        mine = pyrt.tensor(w)
        pyrt.embedding_renorm_(mine, pyrt.tensor(idx), 1.5, 1.0)
        np.testing.assert_allclose(mine._data, theirs.numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following"):
        pyrt.embedding_renorm_(ours, pyrt.tensor([0.0]), 1.0, 2.0)
    with pytest.raises(IndexError, match="out of range"):
        pyrt.embedding_renorm_(ours, pyrt.tensor([6]), 1.0, 2.0)


def test_frombuffer_shares_memory():
    buf = bytearray(np.arange(6, dtype=np.float32).tobytes())
    t = pyrt.frombuffer(buf, dtype=pyrt.float32, count=3, offset=8)
    assert t.tolist() == [2.0, 3.0, 4.0]
    t._data[0] = 9.0
    assert np.frombuffer(buf, np.float32)[2] == 9.0
    if torch is not None:
        theirs = torch.frombuffer(buf, dtype=torch.float32, count=3, offset=8)
        assert theirs.tolist() == t.tolist()
    assert pyrt.frombuffer(buf, dtype=pyrt.int64).shape == (3,)
    with pytest.warns(UserWarning, match="not writable"):
        pyrt.frombuffer(b"\x00" * 8, dtype=pyrt.int64)
    with pytest.raises(ValueError, match="must not be greater"):
        pyrt.frombuffer(buf, dtype=pyrt.float32, count=7)
    with pytest.raises(ValueError, match="multiple of element size"):
        pyrt.frombuffer(buf, dtype=pyrt.int64, offset=4)
    with pytest.raises(TypeError, match="buffer protocol"):
        pyrt.frombuffer([1, 2], dtype=pyrt.float32)
    with pytest.raises(TypeError, match="real or bool dtype"):
        pyrt.frombuffer(buf, dtype=np.complex64)


def test_dlpack_round_trips_with_numpy():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    t = pyrt.from_dlpack(a)
    t._data[0, 0] = 7
    assert a[0, 0] == 7
    back = np.from_dlpack(t)
    back[1, 1] = -1
    assert t._data[1, 1] == -1
    u = pyrt.utils.dlpack.from_dlpack(pyrt.utils.dlpack.to_dlpack(t))
    assert np.shares_memory(u._data, a)
    with pytest.raises(RuntimeError, match="require gradient"):
        pyrt.to_dlpack(pyrt.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="float32, int64 or bool"):
        pyrt.from_dlpack(np.ones(2, np.float64))
    with pytest.raises(TypeError, match="__dlpack__"):
        pyrt.from_dlpack([1, 2])
    capsule = pyrt.to_dlpack(t)
    pyrt.from_dlpack(capsule)
    with pytest.raises(RuntimeError, match="used already"):
        pyrt.from_dlpack(capsule)


@needs_torch
def test_dlpack_round_trips_with_torch():
    theirs = torch.arange(4.0)
    ours = pyrt.from_dlpack(theirs)
    ours._data[0] = 5.0
    assert theirs[0].item() == 5.0
    capsule = torch.utils.dlpack.to_dlpack(torch.arange(3))
    assert pyrt.utils.dlpack.from_dlpack(capsule).tolist() == [0, 1, 2]
    mine = pyrt.tensor([1.0, 2.0])
    shared = torch.from_dlpack(mine)
    shared[1] = 8.0
    assert mine.tolist() == [1.0, 8.0]
    via_capsule = torch.utils.dlpack.from_dlpack(pyrt.to_dlpack(mine))
    assert via_capsule.data_ptr() == mine._data.ctypes.data


# ---- Tensor's small methods --------------------------------------------------------------------


def test_pinned_and_shared_memory():
    t = pyrt.ones(2, 3)
    assert t.is_pinned() is False and t.is_shared() is False
    if cuda.is_available():
        assert t.pin_memory() is t
    else:
        with pytest.raises(RuntimeError, match="accelerator"):
            t.pin_memory()
    view = t._data
    assert t.share_memory_() is t and t.is_shared() and t.share_memory_() is t
    assert t.tolist() == [[1.0] * 3] * 2 and view is not t._data
    if "fork" in multiprocessing.get_all_start_methods():
        child = multiprocessing.get_context("fork").Process(target=_fill_with_seven, args=(t,))
        child.start()
        child.join(10)
        assert child.exitcode == 0 and t.tolist() == [[7.0] * 3] * 2


def _fill_with_seven(t):
    t.fill_(7.0)


@needs_torch
def test_apply_and_maps_as_torch():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    other, third = np.arange(3, dtype=np.float32), np.float32([[1.0], [2.0]])
    ours, theirs = pyrt.tensor(x), torch.tensor(x)
    assert ours.apply_(lambda v: v * v - 1) is ours
    theirs.apply_(lambda v: v * v - 1)
    ours.map_(pyrt.tensor(other), lambda a, b: a + 10 * b)
    theirs.map_(torch.tensor(other), lambda a, b: a + 10 * b)
    ours.map2_(pyrt.tensor(other), pyrt.tensor(third), lambda a, b, c: a * c - b)
    theirs.map2_(torch.tensor(other), torch.tensor(third), lambda a, b, c: a * c - b)
    np.testing.assert_array_equal(ours._data, theirs.numpy())
    ints = pyrt.tensor([1, 2, 3])
    assert ints.apply_(lambda v: v * 2.7).tolist() == (
        torch.tensor([1, 2, 3]).apply_(lambda v: v * 2.7).tolist())


def test_apply_and_map_errors():
    with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that requires"):
        pyrt.ones(2, requires_grad=True).apply_(lambda v: v)
    with pytest.raises(RuntimeError, match=r"Can't call map_\(\)"):
        pyrt.ones(2, requires_grad=True).map_(pyrt.ones(2), lambda a, b: a)
    with pytest.raises(TypeError, match="callable"):
        pyrt.ones(2).apply_(1)
    with pytest.raises(TypeError, match="must return a real number"):
        pyrt.ones(2).apply_(lambda v: "a")
    with pytest.raises(TypeError, match="'other' must be Tensor"):
        pyrt.ones(2).map_(1, lambda a, b: a)
    with pytest.raises(RuntimeError, match="cannot be expanded"):
        pyrt.ones(3).map_(pyrt.ones(2, 3), lambda a, b: a)
    x = pyrt.ones(2)
    with pytest.raises(TypeError, match="must return a real number"):
        x.map_(pyrt.ones(2), lambda a, b: None)
    assert x.tolist() == [1.0, 1.0]


@needs_torch
@pytest.mark.parametrize(("start", "new"), [((2, 3), (4,)), ((2, 3), (2, 4)), ((6,), (2, 3)),
                                             ((2, 3), (3, 2)), ((2, 3), (0,))])
def test_resize_keeps_values_in_order_as_torch(start, new):
    x = np.arange(np.prod(start), dtype=np.float32).reshape(start)
    ours, theirs = pyrt.tensor(x), torch.tensor(x)
    assert ours.resize_(*new) is ours
    theirs.resize_(*new)
    kept = min(np.prod(start), np.prod(new))
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours._data.reshape(-1)[:kept], theirs.reshape(-1)[:kept])
    template = pyrt.ones(3, 1)
    assert pyrt.tensor(x).resize_as_(template).shape == (3, 1)


def test_resize_refuses_a_tensor_that_requires_grad():
    x = pyrt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        x.resize_(3)
    with pyrt.no_grad(), pytest.raises(RuntimeError, match="cannot resize"):
        x.resize_as_(pyrt.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        pyrt.ones(2).resize_(-1)
    with pytest.raises(TypeError, match="must be a Tensor"):
        pyrt.ones(2).resize_as_([1, 2])


@needs_torch
def test_narrow_copy_hardshrink_prelu_methods():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    ours, theirs = pyrt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, expected = ours.narrow_copy(1, 1, 2), theirs.narrow_copy(1, 1, 2)
    np.testing.assert_array_equal(got._data, expected.detach().numpy())
    (got * 2).sum().backward()
    (expected * 2).sum().backward()
    np.testing.assert_array_equal(ours.grad._data, theirs.grad.numpy())
    np.testing.assert_array_equal(pyrt.narrow_copy(pyrt.tensor(x), 0, 1, 1)._data, x[1:2])
    np.testing.assert_allclose(pyrt.tensor(x).hardshrink(0.7)._data,
                               torch.tensor(x).hardshrink(0.7).numpy())
    w = np.float32([0.25])
    np.testing.assert_allclose(pyrt.tensor(x).prelu(pyrt.tensor(w))._data,
                               torch.tensor(x).prelu(torch.tensor(w)).numpy())


def test_complex_views_of_real_tensors():
    x = pyrt.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.conj() is x and pyrt.conj(x) is x and x.resolve_conj() is x
    assert pyrt.resolve_neg(x) is x and x.real is x and pyrt.real(x) is x
    assert x.is_conj() is False and pyrt.is_neg(x) is False and x.output_nr == 0
    assert pyrt.isreal(x).tolist() == [[True, True], [True, True]]
    assert pyrt.isreal(x).dtype == pyrt.bool
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-comp"):
        x.imag  # noqa: B018
    with pytest.raises(RuntimeError, match="non-complex"):
        pyrt.imag(x)
    np.testing.assert_array_equal(pyrt.adjoint(x)._data, x._data.T)
    with pytest.raises(RuntimeError, match=r"tensor.adjoint\(\) is only supported on matrices"):
        pyrt.ones(3).adjoint()
    if torch is not None:
        assert torch.isreal(torch.ones(2)).tolist() == pyrt.isreal(pyrt.ones(2)).tolist()
        with pytest.raises(RuntimeError, match="tensor.adjoint"):
            torch.ones(3).adjoint()


def test_no_warning_from_device_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pyrt.ones(2, device=pyrt.device("cpu")).to(pyrt.get_default_device())
