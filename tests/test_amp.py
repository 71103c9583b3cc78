"""pyrt.amp: autocast's arguments, warnings and per-thread record, and GradScaler's scales,
skipped steps and parameters, step for step against torch's GradScaler on the CPU and
against a NumPy float64 model of its rule."""

import pickle
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
from pyrt import amp
from pyrt.amp import GradScaler, autocast_mode

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")


# ---- autocast -------------------------------------------------------------------------------

def test_autocast_records_the_region_and_restores_it():
    assert not autocast_mode.is_autocast_enabled("cpu")
    with amp.autocast("cpu") as region:
        assert autocast_mode.is_autocast_enabled("cpu")
        assert autocast_mode.get_autocast_dtype("cpu") == "bfloat16"
        assert region.fast_dtype == "bfloat16"
        with amp.autocast("cpu", enabled=False):
            assert not autocast_mode.is_autocast_enabled("cpu")
        assert autocast_mode.is_autocast_enabled("cpu")
    assert not autocast_mode.is_autocast_enabled("cpu")
    assert autocast_mode.get_autocast_dtype("cuda") == np.float16


def test_autocast_changes_no_dtype_and_no_value():
    x = pyrt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    with amp.autocast("cpu", dtype=np.float16):
        y = (x @ x).sum()
    assert y.dtype == pyrt.float32
    y.backward()
    np.testing.assert_array_equal(y.item(), (x.detach().numpy() @ x.detach().numpy()).sum())


def test_autocast_as_a_decorator():
    @amp.autocast("cpu")
    def forward(x):
        return autocast_mode.is_autocast_enabled("cpu"), x * 2

    on, out = forward(pyrt.ones(2))
    assert on and not autocast_mode.is_autocast_enabled("cpu")
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])


def test_autocast_is_per_thread():
    seen = []
    with amp.autocast("cpu"):
        thread = threading.Thread(target=lambda: seen.append(
            autocast_mode.is_autocast_enabled("cpu")))
        thread.start()
        thread.join()
    assert seen == [False]


@pytest.mark.skipif(pyrt.cuda.is_available(), reason="CUDA is available")
def test_cuda_autocast_without_cuda_warns_and_disables_itself():
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling autocast."):
        region = pyrt.autocast("cuda") if hasattr(pyrt, "autocast") else amp.autocast("cuda")
    assert region._enabled is False


def test_unsupported_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                         "supported. Disabling autocast.\nCPU Autocast only "
                                         "supports dtypes of bfloat16, float16 currently."):
        region = amp.autocast("cpu", dtype=pyrt.float32)
    assert region._enabled is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert amp.autocast("cpu", dtype=np.float16)._enabled


def test_autocast_argument_errors():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: "
                                         "`<class 'int'>`"):
        amp.autocast(1)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* device type at "
                                           "start of device string: foo"):
        amp.autocast("foo")
    with pytest.raises(RuntimeError, match="User specified an unsupported autocast "
                                           "device_type 'opengl'"):
        amp.autocast("opengl")
    with pytest.raises(RuntimeError, match="unsupported scalarType"):
        amp.autocast("meta")
    with pytest.raises(TypeError, match=r"autocast\(\)\(func\) requires a callable, but got "
                                        r"int"):
        amp.autocast("cpu")(3)
    with pytest.raises(TypeError, match="argument 'enabled' .* must be bool, not str"):
        with amp.autocast("cpu", enabled="x"):
            pass
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        amp.custom_fwd(device_type=0)


@needs_torch
@pytest.mark.parametrize("device", ["cpu", "cuda", "xpu", "hpu", "cuda:0"])
def test_enabled_and_dtype_match_torch(device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = amp.autocast(device), torch.autocast(device)
    assert ours._enabled == theirs._enabled
    assert str(ours.fast_dtype) == str(theirs.fast_dtype).removeprefix("torch.")


def test_custom_fwd_and_bwd_keep_the_forward_state():
    class Double(pyrt.autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=np.float16)
        def forward(ctx, x):
            ctx.inside = autocast_mode.is_autocast_enabled("cpu")
            return x * 2

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            ctx.inside_bwd = autocast_mode.is_autocast_enabled("cpu")
            return g * 2

    x = pyrt.ones(3, requires_grad=True)
    with amp.autocast("cpu"):
        y = Double.apply(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_deprecated_device_names_warn_as_torch():
    from pyrt.cpu import amp as cpu_amp
    from pyrt.cuda import amp as cuda_amp

    with pytest.warns(FutureWarning, match=r"`pyrt.cpu.amp.autocast\(args...\)` is "
                                           r"deprecated. Please use `pyrt.amp.autocast"):
        region = cpu_amp.autocast()
    assert region.device == "cpu" and region.fast_dtype == "bfloat16"
    with pytest.warns(FutureWarning, match=r"pyrt.cpu.amp.GradScaler\(args...\)` is dep"):
        assert cpu_amp.GradScaler(init_scale=8.0).get_scale() == 8.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = cuda_amp.GradScaler()
    assert scaler.is_enabled() == pyrt.cuda.is_available()
    assert cuda_amp.amp_definitely_not_available() == (not pyrt.cuda.is_available())


# ---- GradScaler -----------------------------------------------------------------------------

class NumpyScaler:
    """torch's rule in float64 Python (exact here: power-of-two factors)."""

    def __init__(self, init_scale, growth_factor, backoff_factor, growth_interval):
        self.scale, self.tracker = init_scale, 0
        self.gf, self.bf, self.gi = growth_factor, backoff_factor, growth_interval

    def update(self, found_inf):
        if found_inf:
            self.scale, self.tracker = self.scale * self.bf, 0
        elif self.tracker + 1 == self.gi:
            self.scale, self.tracker = self.scale * self.gf, 0
        else:
            self.tracker += 1


def _run(lib, scaler, injections, coefficients, w0, optimizer="SGD"):
    """Train w on loss = sum(c * w), scaled, with inf/nan written into the gradient at the
    steps `injections` names; the scales, skips and final parameters."""
    w = lib.nn.Parameter(lib.tensor(w0))
    opt = getattr(lib.optim, optimizer)([w], lr=0.1)
    scales, skipped = [], []
    for inject, c in zip(injections, coefficients, strict=True):
        opt.zero_grad()
        scaler.scale((lib.tensor(c) * w).sum()).backward()
        if inject is not None:
            w.grad[inject[0]] = inject[1]
        before = w.detach().numpy().copy()
        scaler.step(opt)
        scaler.update()
        skipped.append(bool((w.detach().numpy() == before).all()))
        scales.append(scaler.get_scale())
    return scales, skipped, w.detach().numpy(), scaler.state_dict()


INJECT = st.one_of(st.none(), st.tuples(st.integers(0, 5),
                                        st.sampled_from([np.inf, -np.inf, np.nan])))


@settings(max_examples=20, deadline=None)
@given(injections=st.lists(INJECT, min_size=1, max_size=12), seed=st.integers(0, 2**16),
       interval=st.integers(1, 3), factors=st.sampled_from([(2.0, 0.5), (1.7, 0.3)]),
       optimizer=st.sampled_from(["SGD", "Adam"]))
def test_grad_scaler_matches_torch_step_for_step(injections, seed, interval, factors,
                                                 optimizer):
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal(6).astype(np.float32)
    coefficients = [rng.standard_normal(6).astype(np.float32) for _ in injections]
    kwargs = dict(init_scale=3.0, growth_factor=factors[0], backoff_factor=factors[1],
                  growth_interval=interval)
    ours = _run(pyrt, GradScaler("cpu", **kwargs), injections, coefficients, w0, optimizer)
    assert ours[1] == [inject is not None for inject in injections]
    if factors == (2.0, 0.5):
        model = NumpyScaler(3.0, *factors, interval)
        for inject in injections:
            model.update(inject is not None)
        assert ours[0][-1] == model.scale
    if torch is not None:
        theirs = _run(torch, torch.amp.GradScaler("cpu", **kwargs), injections,
                      coefficients, w0, optimizer)
        assert ours[0] == theirs[0] and ours[1] == theirs[1] and ours[3] == theirs[3]
        # SGD's update rounds as torch's does; pyrt's Adam may differ from torch's in the
        # last bit of a step, whatever the scaler
        tolerance = 0 if optimizer == "SGD" else 1e-6
        np.testing.assert_allclose(ours[2], theirs[2], rtol=tolerance, atol=0)


def _scaled_step(scaler, grad):
    w = pyrt.nn.Parameter(pyrt.zeros(len(grad)))
    opt = pyrt.optim.SGD([w], lr=1.0)
    scaler.scale(w.sum()).backward()
    w.grad = pyrt.tensor(np.asarray(grad, np.float32))
    return w, opt


def test_unscale_divides_in_place_and_step_returns_the_step_result():
    scaler = GradScaler("cpu", init_scale=4.0)
    w, opt = _scaled_step(scaler, [4.0, 8.0])
    scaler.unscale_(opt)
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0])
    assert scaler.step(opt) is None  # SGD.step() returns None (closure's loss otherwise)
    np.testing.assert_array_equal(w.detach().numpy(), [-1.0, -2.0])
    scaler.update()
    assert scaler.get_scale() == 4.0 and scaler.state_dict()["_growth_tracker"] == 1


def test_scale_takes_nested_sequences():
    scaler = GradScaler("cpu", init_scale=2.0)
    a, b = pyrt.ones(2), pyrt.full((1,), 3.0)
    out = scaler.scale([a, (b, [a])])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    np.testing.assert_array_equal(out[1][1][0].numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(out[1][0].numpy(), [6.0])
    assert [t.item() for t in scaler.scale(iter([b]))] == [6.0]
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([a, 3])


def test_grad_scaler_state_errors_match_torch():
    scaler = GradScaler("cpu")
    w = pyrt.nn.Parameter(pyrt.zeros(2))
    opt = pyrt.optim.SGD([w], lr=1.0)
    for call in (lambda: scaler.unscale_(opt), lambda: scaler.step(opt), scaler.update):
        with pytest.raises(AssertionError, match=r"Attempted .* but _scale is None.  This may "
                                                 r"indicate your script did not use "
                                                 r"scaler.scale\(loss or outputs\)"):
            call()
    scaler.scale(w.sum())
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer"):
        scaler.step(opt)
    scaler = GradScaler("cpu")
    w, opt = _scaled_step(scaler, [1.0, 1.0])
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this "
                                           r"optimizer since the last update\(\)."):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the "
                                           r"last update\(\)."):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if "
                                           "GradScaler is enabled."):
        scaler.step(opt, closure=lambda: None)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
        scaler.update()
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        GradScaler("cpu", backoff_factor=1.0)
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(pyrt.ones(2))
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        scaler.load_state_dict({})


def test_update_with_a_new_scale_and_state_dict_round_trip():
    scaler = GradScaler("cpu", init_scale=4.0, growth_interval=5)
    _, opt = _scaled_step(scaler, [1.0])
    scaler.step(opt)
    scaler.update(16.0)
    assert scaler.get_scale() == 16.0
    scaler.update(pyrt.tensor(8.0))
    assert scaler.get_scale() == 8.0
    other = GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.state_dict() == scaler.state_dict()
    copy = pickle.loads(pickle.dumps(scaler))
    assert copy.get_scale() == 8.0 and copy.state_dict() == scaler.state_dict()
    scaler.set_growth_factor(3.0)
    scaler.set_backoff_factor(0.25)
    scaler.set_growth_interval(7)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(),
            scaler.get_growth_interval()) == (3.0, 0.25, 7)


def test_disabled_scaler_passes_through():
    scaler = GradScaler("cpu", enabled=False)
    x = pyrt.ones(2)
    assert scaler.scale(x) is x and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    w, opt = _scaled_step(scaler, [np.inf, 1.0])
    scaler.step(opt)  # steps even on an inf: nothing is checked
    assert np.isinf(w.detach().numpy()[0])
    scaler.update()
    scaler.unscale_(opt)
    scaler.load_state_dict({})
    assert not scaler.is_enabled()


@pytest.mark.skipif(pyrt.cuda.is_available(), reason="CUDA is available")
def test_cuda_scaler_without_cuda_warns_and_disables_itself():
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available.  "
                                         "Disabling."):
        scaler = GradScaler()
    assert not scaler.is_enabled()
    if torch is not None:
        with pytest.warns(UserWarning):
            assert torch.amp.GradScaler().is_enabled() == scaler.is_enabled()
