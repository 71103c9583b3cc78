"""pyrt's process-wide state and dtype helpers: the random state (pyrt.random), the print
options and how tensors print, the default dtype and the recorded flags, finfo/iinfo and
the promotion rules, and the functions torch keeps at its top level (comparisons, and those
beside torch.nn.functional with their top-level signatures), checked against torch where
it is installed and against definitions written out here."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.random

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="needs torch")


@pytest.fixture
def default_printoptions():
    yield
    pyrt.set_printoptions(profile="default")
    if torch is not None:
        torch.set_printoptions(profile="default")


@pytest.fixture
def saved_rng():
    state = pyrt.get_rng_state()
    yield
    pyrt.set_rng_state(state)


# ---- random state ------------------------------------------------------------------------------


def test_rng_state_round_trip_repeats_the_draws(saved_rng):
    pyrt.manual_seed(11)
    pyrt.rand(3)  # the state mid-stream, with a float32 half-draw pending
    state = pyrt.get_rng_state()
    assert state.dtype == np.uint8 and state.ndim == 1
    first = [pyrt.randn(5).numpy().copy(), pyrt.randint(0, 100, (4,)).numpy().copy(),
             pyrt.randperm(6).numpy().copy()]
    pyrt.manual_seed(99)
    pyrt.set_rng_state(state)
    again = [pyrt.randn(5).numpy(), pyrt.randint(0, 100, (4,)).numpy(),
             pyrt.randperm(6).numpy()]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert pyrt.initial_seed() == 11


def test_rng_state_keeps_large_seeds_and_the_generator_changes_nothing(saved_rng):
    pyrt.manual_seed(2**70 + 3)
    state = pyrt.get_rng_state()
    before = state.numpy().copy()
    pyrt.manual_seed(0)
    pyrt.set_rng_state(state)
    assert pyrt.initial_seed() == 2**70 + 3
    np.testing.assert_array_equal(state.numpy(), before)
    np.testing.assert_array_equal(pyrt.get_rng_state().numpy(), before)


def test_seed_initial_seed_and_pyrt_random(saved_rng):
    s = pyrt.seed()
    assert isinstance(s, int) and 0 <= s < 2**64 and pyrt.initial_seed() == s
    assert pyrt.random.manual_seed is pyrt.manual_seed
    pyrt.random.manual_seed(7)
    assert pyrt.random.initial_seed() == 7
    a = pyrt.rand(4).numpy().copy()
    pyrt.random.manual_seed(7)
    np.testing.assert_array_equal(pyrt.rand(4).numpy(), a)


def test_fork_rng_restores_the_state(saved_rng):
    pyrt.manual_seed(3)
    with pyrt.random.fork_rng():
        pyrt.randn(10)
    a = pyrt.randn(3).numpy().copy()
    pyrt.manual_seed(3)
    np.testing.assert_array_equal(pyrt.randn(3).numpy(), a)
    with pyrt.random.fork_rng(enabled=False):
        pyrt.randn(10)
    assert not np.array_equal(pyrt.randn(3).numpy(), a)
    with pytest.raises(RuntimeError), pyrt.random.fork_rng():
        pyrt.randn(2)
        raise RuntimeError("the state still comes back")
    pyrt.manual_seed(3)
    with pyrt.random.fork_rng():
        pyrt.manual_seed(4)
    assert pyrt.initial_seed() == 3


def test_set_rng_state_errors(saved_rng):
    with pytest.raises(TypeError, match="uint8"):
        pyrt.set_rng_state(pyrt.zeros(45))
    with pytest.raises(TypeError, match="uint8"):
        pyrt.set_rng_state([0] * 45)
    with pytest.raises(RuntimeError, match="wrong size"):
        pyrt.set_rng_state(pyrt.get_rng_state()[:20])
    bad = pyrt.get_rng_state().numpy().copy()
    bad[16] &= 0xFE  # an even increment
    with pytest.raises(RuntimeError, match="not a state"):
        pyrt.set_rng_state(pyrt.Tensor(bad))


# ---- printing -----------------------------------------------------------------------------------

_ARRAYS = [
    np.array([1.12345, -2.5, 3.0], np.float32),
    np.array([1.0, 2.0, -3.0], np.float32),
    np.array([1e-5, 1.0, 2e3], np.float32),
    np.array([[0.1, np.nan], [np.inf, -np.inf]], np.float32),
    np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7,
    np.arange(2000, dtype=np.int64),
    np.linspace(-1e9, 1e9, 30, dtype=np.float32).reshape(5, 6),
    np.array([True, False, True]),
    np.array(3.25, np.float32),
    np.arange(40, dtype=np.int64).reshape(8, 5) * 1000,
    np.zeros((0, 3), np.float32),
    np.zeros(0, np.int64),
]
_OPTIONS = [
    {},
    {"precision": 2},
    {"precision": 6, "sci_mode": True},
    {"sci_mode": False},
    {"threshold": 5},
    {"threshold": 5, "edgeitems": 1},
    {"threshold": 5, "edgeitems": 0},
    {"linewidth": 30},
    {"profile": "short"},
    {"profile": "full"},
]


@needs_torch
@pytest.mark.parametrize("options", _OPTIONS)
def test_repr_matches_torch(options, default_printoptions):
    pyrt.set_printoptions(**options)
    torch.set_printoptions(**options)
    for array in _ARRAYS:
        expected = repr(torch.tensor(array)).replace("torch.", "")
        assert repr(pyrt.tensor(array)) == expected, (options, array)
        assert str(pyrt.tensor(array)) == expected


@needs_torch
@settings(max_examples=20, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
       scale=st.sampled_from([1e-6, 1e-2, 1.0, 1e3, 1e9]), seed=st.integers(0, 2**16))
def test_repr_of_random_tensors_matches_torch(shape, scale, seed):
    array = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
    assert repr(pyrt.tensor(array)) == repr(torch.tensor(array))
    grad = pyrt.tensor(array, requires_grad=True)
    assert repr(grad) == repr(torch.tensor(array, requires_grad=True))


def test_repr_by_definition(default_printoptions):
    # no torch needed: the strings torch's documentation shows
    pyrt.set_printoptions(precision=2)
    assert repr(pyrt.tensor([1.12345])) == "tensor([1.12])"
    pyrt.set_printoptions(threshold=5)
    assert repr(pyrt.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    pyrt.set_printoptions(profile="default")
    assert repr(pyrt.tensor([1.12345])) == "tensor([1.1235])"
    assert repr(pyrt.arange(10)) == "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"
    assert repr(pyrt.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(pyrt.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(pyrt.tensor([[1, 2], [3, 4]])) == "tensor([[1, 2],\n        [3, 4]])"
    assert repr(pyrt.zeros(2).int()) == "tensor([0, 0], dtype=int32)"
    assert repr(pyrt.ones(1, requires_grad=True)) == "tensor([1.], requires_grad=True)"
    pyrt.set_printoptions(sci_mode=True, precision=1)
    assert repr(pyrt.tensor([250.0])) == "tensor([2.5e+02])"


def test_set_printoptions_errors(default_printoptions):
    with pytest.raises(ValueError, match="profile"):
        pyrt.set_printoptions(profile="long")
    with pytest.raises(TypeError, match="precision"):
        pyrt.set_printoptions(precision=2.5)
    with pytest.raises(ValueError, match="linewidth"):
        pyrt.set_printoptions(linewidth=0)
    with pytest.raises(TypeError, match="sci_mode"):
        pyrt.set_printoptions(sci_mode="yes")


# ---- settings -----------------------------------------------------------------------------------


def test_default_dtype_is_float32_only():
    assert pyrt.get_default_dtype() == pyrt.float32
    pyrt.set_default_dtype(pyrt.float32)
    pyrt.set_default_dtype(np.float32)
    with pytest.raises(TypeError, match="float32"):
        pyrt.set_default_dtype(np.float64)
    with pytest.raises(TypeError, match="floating-point"):
        pyrt.set_default_dtype(pyrt.int64)
    with pytest.raises(TypeError, match="dtype"):
        pyrt.set_default_dtype("not a dtype")
    assert pyrt.get_default_dtype() == pyrt.float32


def test_deterministic_flags_and_debug_mode():
    assert not pyrt.are_deterministic_algorithms_enabled()
    try:
        for mode, (on, warn) in (("warn", (True, True)), ("error", (True, False)),
                                 (1, (True, True)), ("default", (False, False))):
            pyrt.set_deterministic_debug_mode(mode)
            assert pyrt.are_deterministic_algorithms_enabled() is on
            assert pyrt.is_deterministic_algorithms_warn_only_enabled() is warn
            if torch is not None:
                torch.set_deterministic_debug_mode(mode)
                assert pyrt.get_deterministic_debug_mode() == \
                    torch.get_deterministic_debug_mode()
        pyrt.use_deterministic_algorithms(True)
        assert pyrt.get_deterministic_debug_mode() == 2
        with pytest.raises(TypeError, match="bool"):
            pyrt.use_deterministic_algorithms(1)
        with pytest.raises(RuntimeError, match="debug_mode"):
            pyrt.set_deterministic_debug_mode("loud")
        with pytest.raises(RuntimeError, match="debug_mode"):
            pyrt.set_deterministic_debug_mode(3)
    finally:
        pyrt.use_deterministic_algorithms(False)
        if torch is not None:
            torch.use_deterministic_algorithms(False)


def test_precision_denormals_threads_and_inference_mode():
    assert pyrt.get_float32_matmul_precision() == "highest"
    try:
        pyrt.set_float32_matmul_precision("medium")
        assert pyrt.get_float32_matmul_precision() == "medium"
        with pytest.raises(ValueError, match="highest"):
            pyrt.set_float32_matmul_precision("low")
    finally:
        pyrt.set_float32_matmul_precision("highest")
    assert pyrt.set_flush_denormal(True) is False
    with pytest.raises(TypeError):
        pyrt.set_flush_denormal("on")
    assert pyrt.get_num_interop_threads() >= 1
    with pytest.raises(RuntimeError, match="positive"):
        pyrt.set_num_interop_threads(0)
    with pytest.raises(TypeError):
        pyrt.set_num_interop_threads(2.0)
    assert not pyrt.is_inference_mode_enabled()
    with pyrt.inference_mode():
        assert pyrt.is_inference_mode_enabled() and not pyrt.is_grad_enabled()
        with pyrt.inference_mode(False):
            assert not pyrt.is_inference_mode_enabled()
        assert pyrt.is_inference_mode_enabled()
    assert not pyrt.is_inference_mode_enabled()

    @pyrt.inference_mode
    def inside():
        return pyrt.is_inference_mode_enabled()

    assert inside() and not pyrt.is_inference_mode_enabled()


# ---- dtypes -------------------------------------------------------------------------------------

_FLOATS = [np.float16, np.float32, np.float64]
_INTS = [np.uint8, np.int8, np.int16, np.int32, np.int64]
_ALL = [np.bool_, *_INTS, *_FLOATS]


def _torch_dtype(dtype):
    return getattr(torch, np.dtype(dtype).name.replace("bool", "bool"))


def test_finfo_iinfo_by_definition():
    info = pyrt.finfo()
    assert info.bits == 32 and info.dtype == "float32"
    assert info.eps == 2.0 ** -23 and info.max == (2 - 2.0 ** -23) * 2.0 ** 127
    assert info.min == -info.max and info.tiny == info.smallest_normal == 2.0 ** -126
    assert info.resolution == 1e-6
    assert pyrt.finfo(np.float64).eps == np.finfo(np.float64).eps
    assert pyrt.iinfo(pyrt.int64).max == 2**63 - 1 and pyrt.iinfo(pyrt.int64).min == -2**63
    assert pyrt.iinfo(np.uint8).bits == 8
    with pytest.raises(TypeError, match="floating point"):
        pyrt.finfo(pyrt.int64)
    with pytest.raises(TypeError, match="bool"):
        pyrt.iinfo(pyrt.bool)
    with pytest.raises(TypeError, match="integer"):
        pyrt.iinfo(pyrt.float32)


@needs_torch
def test_finfo_iinfo_match_torch():
    for dtype in _FLOATS:
        ours, theirs = pyrt.finfo(dtype), torch.finfo(_torch_dtype(dtype))
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                      "dtype"):
            assert getattr(ours, field) == getattr(theirs, field), (dtype, field)
        assert repr(ours) == repr(theirs)
    assert repr(pyrt.finfo()) == repr(torch.finfo())
    for dtype in _INTS:
        ours, theirs = pyrt.iinfo(dtype), torch.iinfo(_torch_dtype(dtype))
        for field in ("bits", "max", "min", "dtype"):
            assert getattr(ours, field) == getattr(theirs, field), (dtype, field)
        assert repr(ours) == repr(theirs)


@needs_torch
def test_promote_types_and_can_cast_match_torch():
    for a in _ALL:
        for b in _ALL:
            expected = torch.promote_types(_torch_dtype(a), _torch_dtype(b))
            assert pyrt.promote_types(a, b).name == str(expected).removeprefix("torch."), (a, b)
            assert pyrt.can_cast(a, b) == torch.can_cast(_torch_dtype(a), _torch_dtype(b))


def test_promote_types_by_definition():
    assert pyrt.promote_types(pyrt.int64, pyrt.float32) == pyrt.float32  # NumPy: float64
    assert pyrt.promote_types(pyrt.bool, pyrt.int64) == pyrt.int64
    assert pyrt.promote_types(np.uint8, np.int8) == np.int16
    assert not pyrt.can_cast(pyrt.float32, pyrt.int64)
    assert pyrt.can_cast(pyrt.bool, pyrt.float32) and not pyrt.can_cast(pyrt.int64, pyrt.bool)
    with pytest.raises(TypeError, match="type1"):
        pyrt.promote_types("nope", pyrt.int64)


_OPERANDS = [
    lambda lib: lib.tensor([1, 2]), lambda lib: lib.tensor([1.0, 2.0]),
    lambda lib: lib.tensor([True]), lambda lib: lib.tensor(3), lambda lib: lib.tensor(2.5),
    lambda lib: lib.tensor(False), lambda lib: lib.tensor([1, 2]).int(),
    lambda lib: 2, lambda lib: 2.5, lambda lib: True,
]


@needs_torch
def test_result_type_matches_torch():
    for make_a in _OPERANDS:
        for make_b in _OPERANDS:
            a, b = make_a(pyrt), make_b(pyrt)
            ta, tb = make_a(torch), make_b(torch)
            expected = str(torch.result_type(ta, tb)).removeprefix("torch.")
            assert pyrt.result_type(a, b).name == expected, (a, b)


def test_result_type_by_definition_and_errors():
    assert pyrt.result_type(pyrt.tensor([1]), 2.5) == pyrt.float32
    assert pyrt.result_type(pyrt.tensor([1]).int(), pyrt.tensor(5)) == np.int32
    assert pyrt.result_type(pyrt.tensor([True]), 3) == pyrt.int64
    assert pyrt.result_type(True, False) == pyrt.bool
    with pytest.raises(TypeError, match="other"):
        pyrt.result_type(pyrt.tensor([1]), "a")


@settings(max_examples=20, deadline=None, derandomize=True)
@given(shapes=st.lists(st.lists(st.integers(1, 4), max_size=3), min_size=1, max_size=3),
       ones=st.lists(st.booleans(), min_size=9, max_size=9))
def test_broadcast_shapes(shapes, ones):
    flags = iter(ones)
    shapes = [tuple(1 if next(flags) else n for n in s) for s in shapes]
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(RuntimeError, match="broadcast"):
            pyrt.broadcast_shapes(*shapes)
        return
    assert pyrt.broadcast_shapes(*shapes) == expected
    if torch is not None:
        assert pyrt.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))


def test_broadcast_shapes_ints_and_errors():
    assert pyrt.broadcast_shapes(5, (2, 1)) == (2, 5)
    with pytest.raises(TypeError, match=r"shapes\[1\]"):
        pyrt.broadcast_shapes((2,), "3")
    with pytest.raises(RuntimeError, match="negative"):
        pyrt.broadcast_shapes((-1,))


def test_typename_and_predicates():
    assert pyrt.typename(pyrt.ones(2)) == "torch.FloatTensor"
    assert pyrt.typename(pyrt.tensor([True])) == "torch.BoolTensor"
    assert pyrt.typename(1) == "int"
    assert pyrt.typename(pyrt.nn.Linear) == "pyrt.nn.modules.linear.Linear" or \
        pyrt.typename(pyrt.nn.Linear).endswith(".Linear")
    assert pyrt.is_floating_point(pyrt.ones(1)) and not pyrt.is_floating_point(pyrt.arange(2))
    assert not pyrt.is_complex(pyrt.ones(1))
    assert pyrt.is_signed(pyrt.arange(2)) and not pyrt.is_signed(pyrt.tensor([True]))
    assert pyrt.is_nonzero(pyrt.tensor([2.0])) and not pyrt.is_nonzero(pyrt.tensor(0))
    with pytest.raises(RuntimeError, match="more than one value"):
        pyrt.is_nonzero(pyrt.ones(2))
    with pytest.raises(RuntimeError, match="no values"):
        pyrt.is_nonzero(pyrt.ones(0))
    assert pyrt.is_same_size(pyrt.ones(2, 3), pyrt.zeros(2, 3))
    assert not pyrt.is_same_size(pyrt.ones(2, 3), pyrt.zeros(3, 2))
    with pytest.raises(TypeError, match="input"):
        pyrt.is_floating_point(np.ones(2))
    with pytest.raises(TypeError, match="other"):
        pyrt.is_same_size(pyrt.ones(2), [1.0, 2.0])


# ---- top-level functions ------------------------------------------------------------------------


@settings(max_examples=20, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 999))
def test_top_level_comparisons(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, shape).astype(np.float32)
    b = rng.integers(-2, 3, shape).astype(np.float32)
    for name, op in (("eq", np.equal), ("ne", np.not_equal), ("gt", np.greater),
                     ("ge", np.greater_equal), ("lt", np.less), ("le", np.less_equal)):
        out = getattr(pyrt, name)(pyrt.tensor(a), pyrt.tensor(b))
        np.testing.assert_array_equal(out.numpy(), op(a, b))
        np.testing.assert_array_equal(getattr(pyrt, name)(pyrt.tensor(a), 0.0).numpy(),
                                      op(a, 0.0))
        if torch is not None:
            expected = getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
            np.testing.assert_array_equal(out.numpy(), expected)
    with pytest.raises(TypeError, match="input"):
        pyrt.eq(a, b)


def test_other_top_level_methods():
    x = pyrt.tensor([[0.5, -1.0, 2.0]])
    np.testing.assert_array_equal(pyrt.moveaxis(x, 0, 1).numpy(), x.numpy().T)
    np.testing.assert_array_equal(pyrt.swapdims(x, 0, 1).numpy(), x.numpy().T)
    t1, t2 = pyrt.tensor([[1.0, 2.0, 3.0]]), pyrt.tensor([[2.0, 4.0, 8.0]])
    np.testing.assert_allclose(pyrt.addcdiv(x, t1, t2, value=2).numpy(),
                               x.numpy() + 2 * t1.numpy() / t2.numpy())
    from scipy.special import erfc

    np.testing.assert_allclose(pyrt.erfc(x).numpy(), erfc(x.numpy().astype(np.float64)),
                               rtol=1e-5, atol=1e-7)


def _pair(shape, seed, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if positive:
        a = np.abs(a) + 0.1
    return pyrt.tensor(a), torch.tensor(a)


def _close(ours, theirs, rtol=1e-5, atol=1e-6):
    if isinstance(theirs, tuple):
        for o, t in zip(ours, theirs):
            _close(o, t, rtol, atol)
        return
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


@needs_torch
def test_nn_functions_at_the_top_level_match_torch_positionally():
    x, tx = _pair((2, 4, 9), 0)
    x4, tx4 = _pair((2, 4, 6, 6), 1)
    x5, tx5 = _pair((1, 2, 4, 4, 4), 2)
    w1, tw1 = _pair((3, 4, 3), 3)
    w2, tw2 = _pair((4, 2, 3, 3), 4)
    w3, tw3 = _pair((3, 2, 2, 2, 2), 5)
    b, tb = _pair((3,), 6)
    _close(pyrt.conv1d(x, w1, b, 2, 1, 1, 1), torch.conv1d(tx, tw1, tb, 2, 1, 1, 1))
    _close(pyrt.conv2d(x4, w2, None, 1, 1, 1, 2), torch.conv2d(tx4, tw2, None, 1, 1, 1, 2))
    _close(pyrt.conv3d(x5, w3, b, 1, 0, 1, 1), torch.conv3d(tx5, tw3, tb, 1, 0, 1, 1))
    wt, twt = _pair((4, 2, 3), 7)
    _close(pyrt.conv_transpose1d(x, wt, None, 2, 1, 1, 1, 1),
           torch.conv_transpose1d(tx, twt, None, 2, 1, 1, 1, 1))
    wt2, twt2 = _pair((4, 2, 3, 3), 8)
    _close(pyrt.conv_transpose2d(x4, wt2, None, 2, 1, 1, 1, 1),
           torch.conv_transpose2d(tx4, twt2, None, 2, 1, 1, 1, 1))
    wt3, twt3 = _pair((2, 3, 2, 2, 2), 9)
    _close(pyrt.conv_transpose3d(x5, wt3, None, 1, 0, 0, 1, 1),
           torch.conv_transpose3d(tx5, twt3, None, 1, 0, 0, 1, 1))
    _close(pyrt.avg_pool1d(x, 3, 2, 1, True, False), torch.avg_pool1d(tx, 3, 2, 1, True, False))
    _close(pyrt.max_pool1d(x, 3), torch.max_pool1d(tx, 3))
    _close(pyrt.max_pool1d(x, 3, 2, 1, 1, True), torch.max_pool1d(tx, 3, 2, 1, 1, True))
    _close(pyrt.max_pool1d_with_indices(x, 2), torch.max_pool1d_with_indices(tx, 2))
    _close(pyrt.max_pool2d(x4, 2), torch.max_pool2d(tx4, 2))
    _close(pyrt.max_pool2d(x4, 3, 2, 1), torch.max_pool2d(tx4, 3, 2, 1))
    _close(pyrt.max_pool3d(x5, 2), torch.max_pool3d(tx5, 2))
    _close(pyrt.adaptive_avg_pool1d(x, 4), torch.adaptive_avg_pool1d(tx, 4))
    _close(pyrt.adaptive_max_pool1d(x, 4), torch.adaptive_max_pool1d(tx, 4))
    weight, tweight = _pair((4,), 10, positive=True)
    mean, tmean = _pair((4,), 11)
    var, tvar = _pair((4,), 12, positive=True)
    for training in (False, True):
        _close(pyrt.batch_norm(x, weight, b[:1].expand(4), mean.clone(), var.clone(), training,
                               0.1, 1e-5, False),
               torch.batch_norm(tx, tweight, tb[:1].expand(4), tmean.clone(), tvar.clone(),
                                training, 0.1, 1e-5, False), rtol=1e-4, atol=1e-5)
    _close(pyrt.instance_norm(x, weight, None, None, None, True, 0.1, 1e-5, False),
           torch.instance_norm(tx, tweight, None, None, None, True, 0.1, 1e-5, False),
           rtol=1e-4, atol=1e-5)
    _close(pyrt.dropout(x, 0.3, False), torch.dropout(tx, 0.3, False))
    _close(pyrt.feature_alpha_dropout(x, 0.3, False), torch.feature_alpha_dropout(tx, 0.3, False))
    for name, args in (("celu", (0.7,)), ("selu", ()), ("hardshrink", (0.4,)),
                       ("threshold", (0.1, -2.0)), ("rrelu", (0.1, 0.3, False))):
        _close(getattr(pyrt, name)(x, *args), getattr(torch, name)(tx, *args))
        _close(getattr(pyrt, name + "_")(x.clone(), *args) if hasattr(pyrt, name + "_")
               else getattr(pyrt, name)(x, *args),
               getattr(torch, name + "_")(tx.clone(), *args) if hasattr(torch, name + "_")
               else getattr(torch, name)(tx, *args))
    _close(pyrt.relu_(x.clone()), torch.relu_(tx.clone()))
    slope, tslope = _pair((4,), 13)
    _close(pyrt.prelu(x, slope), torch.prelu(tx, tslope))
    _close(pyrt.channel_shuffle(x4, 2), torch.channel_shuffle(tx4, 2))
    _close(pyrt.pixel_shuffle(x4, 2), torch.pixel_shuffle(tx4, 2))
    _close(pyrt.pixel_unshuffle(x4, 2), torch.pixel_unshuffle(tx4, 2))
    y, ty = _pair((2, 4, 9), 14)
    _close(pyrt.cosine_similarity(x, y, 2, 1e-8), torch.cosine_similarity(tx, ty, 2, 1e-8))
    _close(pyrt.pairwise_distance(x[0], y[0], 1.0, 1e-6, True),
           torch.pairwise_distance(tx[0], ty[0], 1.0, 1e-6, True))


@needs_torch
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_at_the_top_level_take_reduction_as_int(reduction):
    x, tx = _pair((3, 5), 20)
    y, ty = _pair((3, 5), 21)
    target01 = (np.random.default_rng(22).random((3, 5)) > 0.5).astype(np.float32)
    t, tt = pyrt.tensor(target01), torch.tensor(target01)
    sign = np.where(target01[:, 0] > 0, 1.0, -1.0).astype(np.float32)
    s, ts = pyrt.tensor(sign), torch.tensor(sign)
    w, tw = _pair((3, 5), 23, positive=True)
    pw, tpw = _pair((5,), 24, positive=True)
    _close(pyrt.binary_cross_entropy_with_logits(x, t, None, None, reduction),
           torch.binary_cross_entropy_with_logits(tx, tt, None, None, reduction))
    _close(pyrt.binary_cross_entropy_with_logits(x * 30, t, w, pw, reduction),
           torch.binary_cross_entropy_with_logits(tx * 30, tt, tw, tpw, reduction), rtol=1e-4)
    _close(pyrt.cosine_embedding_loss(x, y, s, 0.2, reduction),
           torch.cosine_embedding_loss(tx, ty, ts, 0.2, reduction))
    _close(pyrt.hinge_embedding_loss(x, t * 2 - 1, 0.5, reduction),
           torch.hinge_embedding_loss(tx, tt * 2 - 1, 0.5, reduction))
    _close(pyrt.kl_div(x.log_softmax(1), y.softmax(1), reduction),
           torch.kl_div(tx.log_softmax(1), ty.softmax(1), reduction))
    _close(pyrt.margin_ranking_loss(x[:, 0], y[:, 0], s, 0.1, reduction),
           torch.margin_ranking_loss(tx[:, 0], ty[:, 0], ts, 0.1, reduction))
    _close(pyrt.poisson_nll_loss(x, y.abs(), True, True, 1e-8, reduction),
           torch.poisson_nll_loss(tx, ty.abs(), True, True, 1e-8, reduction), rtol=1e-4)
    z, tz = _pair((3, 5), 25)
    _close(pyrt.triplet_margin_loss(x, y, z, 1.0, 2.0, 1e-6, True, reduction),
           torch.triplet_margin_loss(tx, ty, tz, 1.0, 2.0, 1e-6, True, reduction), rtol=1e-4)
    logits = np.random.default_rng(26).standard_normal((6, 2, 4)).astype(np.float32)
    lp, tlp = pyrt.tensor(logits).log_softmax(2), torch.tensor(logits).log_softmax(2)
    targets = np.array([[1, 2, 3], [3, 1, 0]], np.int64)
    _close(pyrt.ctc_loss(lp, pyrt.tensor(targets), [6, 5], [3, 2], 0, reduction, False),
           torch.ctc_loss(tlp, torch.tensor(targets), [6, 5], [3, 2], 0, reduction, False),
           rtol=1e-4)


def test_bce_with_weights_by_definition_and_gradient():
    rng = np.random.default_rng(30)
    x = rng.standard_normal((4, 3)) * 5
    t = (rng.random((4, 3)) > 0.5).astype(np.float64)
    w = rng.random((4, 3)) + 0.5
    pw = rng.random(3) + 0.5
    sig = 1 / (1 + np.exp(-x))
    expected = -w * (pw * t * np.log(sig) + (1 - t) * np.log(1 - sig))
    xt = pyrt.tensor(x.astype(np.float32), requires_grad=True)
    loss = pyrt.binary_cross_entropy_with_logits(
        xt, pyrt.tensor(t.astype(np.float32)), pyrt.tensor(w.astype(np.float32)),
        pyrt.tensor(pw.astype(np.float32)), 2)
    np.testing.assert_allclose(loss.item(), expected.sum(), rtol=1e-5)
    loss.backward()
    # d/dx of the loss: w [(1 - t) - (1 + (pw - 1) t) (1 - sigmoid(x))]
    grad = w * ((1 - t) - (1 + (pw - 1) * t) * (1 - sig))
    np.testing.assert_allclose(xt.grad.numpy(), grad, rtol=1e-4, atol=1e-6)


def test_top_level_nn_errors():
    x = pyrt.ones(2, 3)
    with pytest.raises(ValueError, match="reduction"):
        pyrt.kl_div(x, x, 3)
    with pytest.raises(TypeError, match="reduction"):
        pyrt.kl_div(x, x, "mean")
    with pytest.raises(TypeError, match="train"):
        pyrt.dropout(x, 0.5, None)
    with pytest.raises(TypeError):
        pyrt.dropout(x, 0.5)  # no defaults, as torch.dropout
    with pytest.raises(TypeError, match="cudnn_enabled"):
        pyrt.batch_norm(x, None, None, None, None, True, 0.1, 1e-5, "yes")
    with pytest.raises(TypeError, match="generator"):
        pyrt.rrelu(x, 0.1, 0.3, True, object())


def test_tensors_made_by_recorded_ops_print_their_grad_fn_as_torch(default_printoptions):
    x = pyrt.ones(2, requires_grad=True)
    cases = {
        "mul": (lambda lib, x: x * 2, "tensor([2., 2.], grad_fn=<MulBackward0>)"),
        "sum": (lambda lib, x: (x * 2).sum(), "tensor(4., grad_fn=<SumBackward0>)"),
        "relu": (lambda lib, x: x.relu(), "tensor([1., 1.], grad_fn=<ReluBackward0>)"),
        "exp": (lambda lib, x: x.exp(), "tensor([2.7183, 2.7183], grad_fn=<ExpBackward0>)"),
        "cross_entropy": (lambda lib, x: lib.nn.functional.cross_entropy(
            x.reshape(1, 2), lib.tensor([0])), "tensor(0.6931, grad_fn=<NllLossBackward0>)"),
        "bce": (lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(
            x, x.detach()), "tensor(0.3133, grad_fn=<BinaryCrossEntropyWithLogitsBackward0>)"),
    }
    try:
        import torch
    except ImportError:
        torch = None
    for name, (make, expected) in cases.items():
        y = make(pyrt, x)
        assert repr(y) == expected, name
        if torch is not None:
            assert repr(make(torch, torch.ones(2, requires_grad=True))) == expected, name
    y = x * 2
    y.retain_grad()  # hooks around the closure keep its name
    assert repr(y) == "tensor([2., 2.], grad_fn=<MulBackward0>)"
    y.sum().backward()  # freed by backward: pyrt no longer knows the op's name
    assert repr(y) == "tensor([2., 2.], requires_grad=True)"
    assert repr(x) == "tensor([1., 1.], requires_grad=True)"
