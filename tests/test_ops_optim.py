"""sgd_step and adam_step against a NumPy re-implementation of PyTorch's update formulas and,
where PyTorch is installed, against torch.optim.SGD and Adam over 20 steps; results bitwise
identical at any thread count; PyTorch's hyper-parameter errors; in-place argument rules."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrt._pyrt_cffi import ffi, lib

import pyrt
from pyrt.ops.optim import adam_step, sgd_step

F32 = np.float32
THREADS = [1, 2, 4]
SIZES = [0, 1, 7, 8, 9, 33, 1000, 20_011]
STEPS = 20


def rng(seed):
    return np.random.default_rng(seed)


def assert_close(got, ref, what, scale=0.0):
    """1e-6 relative to the size the values took: after 20 steps the two sides differ by a
    few roundings per step (FMA against separate multiply and add, a 1-ULP sqrt in PyTorch),
    each relative to the magnitudes in play then (the parameter's, the update's: about lr,
    the gradients'), 20 * 2**-24 ~ 1.2e-6 at worst and far less on average. `scale` is the
    largest of those magnitudes that the final array may no longer show."""
    ref = np.asarray(ref)
    scale = max(scale, float(np.max(np.abs(ref), initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6 * scale, err_msg=what)


# ---- NumPy references: PyTorch's single-tensor formulas, in float32 ---------------------


def sgd_reference(p, g, buf, *, lr, momentum, dampening, weight_decay, nesterov, first):
    if weight_decay:
        g = g + F32(weight_decay) * p
    if momentum:
        buf = g.copy() if first else buf * F32(momentum) + F32(1 - dampening) * g
        g = g + F32(momentum) * buf if nesterov else buf
    return p - F32(lr) * g, buf


def adam_reference(p, g, m, v, *, step, lr, betas, eps, weight_decay):
    beta1, beta2 = betas
    if weight_decay:
        g = g + F32(weight_decay) * p
    m = m + F32(1 - beta1) * (g - m)  # lerp_(g, 1 - beta1)
    v = v * F32(beta2) + F32(1 - beta2) * g * g
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr / bias_correction1
    denom = np.sqrt(v) / F32(bias_correction2**0.5) + F32(eps)
    return p + F32(-step_size) * m / denom, m, v


SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.05, weight_decay=0.01),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.01, momentum=0.9, dampening=0.1, weight_decay=1e-4),
    dict(lr=0.05, momentum=0.5, nesterov=True),
    dict(lr=0.02, momentum=0.99, nesterov=True, weight_decay=0.1),
]
ADAM_CONFIGS = [
    dict(),
    # weight_decay a power of two: weight_decay * param is exact, so grad + weight_decay *
    # param rounds once whether the kernel fuses it into an FMA or not. With 0.1 the two
    # roundings differ, and where grad nearly cancels weight_decay * param Adam's normalised
    # step magnifies that difference far past the tolerance (1 element in ~1e6).
    dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.125),
    dict(lr=0.1, betas=(0.5, 0.9), eps=1e-3),
    dict(lr=3e-4, betas=(0.0, 0.999), eps=1e-6),
    dict(lr=1e-3, betas=(0.9, 0.0)),
]


def sgd_defaults(cfg):
    return dict(dict(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False), **cfg)


def adam_defaults(cfg):
    return dict(dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0), **cfg)


@settings(max_examples=40, deadline=None)
@given(cfg=st.sampled_from(SGD_CONFIGS), n=st.sampled_from(SIZES),
       threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_sgd_matches_numpy_reference(cfg, n, threads, seed):
    r = rng(seed)
    p = r.standard_normal(n).astype(F32)
    buf = np.zeros(n, F32)
    ref_p, ref_buf = p.copy(), None
    kw = sgd_defaults(cfg)
    p_max = g_max = 0.0
    with pyrt.num_threads(threads):
        for step in range(STEPS):
            g = r.standard_normal(n).astype(F32)
            p_max = max(p_max, float(np.max(np.abs(p), initial=0.0)))
            g_max = max(g_max, float(np.max(np.abs(g), initial=0.0)))
            sgd_step(p, g, buf, first_step=step == 0, **kw)
            ref_p, ref_buf = sgd_reference(ref_p, g, ref_buf, first=step == 0, **kw)
    # the buffer sums up to 1 / (1 - momentum) gradients
    buf_scale = (g_max + kw["weight_decay"] * p_max) / (1 - kw["momentum"])
    assert_close(p, ref_p, "param", max(p_max, kw["lr"] * buf_scale))
    if kw["momentum"]:
        assert_close(buf, ref_buf, "momentum_buffer", buf_scale)


@settings(max_examples=40, deadline=None)
@given(cfg=st.sampled_from(ADAM_CONFIGS), n=st.sampled_from(SIZES),
       threads=st.sampled_from(THREADS), seed=st.integers(0, 2**16))
def test_adam_matches_numpy_reference(cfg, n, threads, seed):
    r = rng(seed)
    p = r.standard_normal(n).astype(F32)
    m, v = np.zeros(n, F32), np.zeros(n, F32)
    ref_p, ref_m, ref_v = p.copy(), m.copy(), v.copy()
    kw = adam_defaults(cfg)
    p_max = g_max = 0.0
    with pyrt.num_threads(threads):
        for step in range(1, STEPS + 1):
            g = r.standard_normal(n).astype(F32)
            p_max = max(p_max, float(np.max(np.abs(p), initial=0.0)))
            g_max = max(g_max, float(np.max(np.abs(g), initial=0.0)))
            adam_step(p, g, m, v, step=step, **kw)
            ref_p, ref_m, ref_v = adam_reference(ref_p, g, ref_m, ref_v, step=step, **kw)
    g_max += kw["weight_decay"] * p_max
    assert_close(p, ref_p, "param", max(p_max, kw["lr"]))  # an Adam update is about lr
    assert_close(m, ref_m, "exp_avg", g_max)
    assert_close(v, ref_v, "exp_avg_sq", g_max**2)


@pytest.mark.parametrize("cfg", SGD_CONFIGS)
def test_sgd_matches_torch(cfg):
    torch = pytest.importorskip("torch")
    r = rng(1)
    p = r.standard_normal((37, 29)).astype(F32)
    buf = np.zeros_like(p)
    tp = torch.tensor(p.copy(), requires_grad=True)
    opt = torch.optim.SGD([tp], foreach=False, **cfg)
    for step in range(STEPS):
        g = r.standard_normal(p.shape).astype(F32)
        tp.grad = torch.tensor(g)
        opt.step()
        sgd_step(p, g, buf, first_step=step == 0, **sgd_defaults(cfg))
    assert_close(p, tp.detach().numpy(), "param")
    if cfg.get("momentum"):
        assert_close(buf, opt.state[tp]["momentum_buffer"].numpy(), "momentum_buffer")


@pytest.mark.parametrize("cfg", ADAM_CONFIGS)
def test_adam_matches_torch(cfg):
    torch = pytest.importorskip("torch")
    r = rng(2)
    p = r.standard_normal((41, 23)).astype(F32)
    m, v = np.zeros_like(p), np.zeros_like(p)
    tp = torch.tensor(p.copy(), requires_grad=True)
    opt = torch.optim.Adam([tp], foreach=False, **cfg)
    for step in range(1, STEPS + 1):
        g = r.standard_normal(p.shape).astype(F32)
        tp.grad = torch.tensor(g)
        opt.step()
        adam_step(p, g, m, v, step=step, **adam_defaults(cfg))
    state = opt.state[tp]
    assert_close(p, tp.detach().numpy(), "param")
    assert_close(m, state["exp_avg"].numpy(), "exp_avg")
    assert_close(v, state["exp_avg_sq"].numpy(), "exp_avg_sq")


@pytest.mark.parametrize("which", ["sgd", "adam"])
def test_results_do_not_depend_on_thread_count(which):
    results = []
    for threads in [1, 2, 3, 4]:
        r = rng(5)
        p = r.standard_normal(300_007).astype(F32)
        state = [np.zeros_like(p), np.zeros_like(p)]
        with pyrt.num_threads(threads):
            for step in range(1, 4):
                g = r.standard_normal(p.size).astype(F32)
                if which == "sgd":
                    sgd_step(p, g, state[0], lr=0.1, momentum=0.9, nesterov=True,
                             weight_decay=0.01, first_step=step == 1)
                else:
                    adam_step(p, g, *state, step=step, lr=0.01, weight_decay=0.01)
        results.append([p] + state)
    for got in results[1:]:
        for x, y in zip(got, results[0]):
            assert np.array_equal(x.view(np.uint32), y.view(np.uint32))


def test_sgd_buffer_rules():
    p = np.ones(10, F32)
    g = np.full(10, 2.0, F32)
    buf = np.full(10, 5.0, F32)
    sgd_step(p, g, buf, lr=0.5)  # no momentum: the buffer is not touched
    np.testing.assert_array_equal(p, np.zeros(10, F32))
    np.testing.assert_array_equal(buf, np.full(10, 5.0, F32))
    sgd_step(p, g, buf, lr=0.5, momentum=0.9, first_step=True)  # the old contents are ignored
    np.testing.assert_array_equal(buf, g)
    np.testing.assert_array_equal(p, np.full(10, -1.0, F32))
    # a non-contiguous gradient is only read, so it may be a view
    gg = np.repeat(g, 2)[::2]
    sgd_step(p, gg, lr=1.0)
    np.testing.assert_array_equal(p, np.full(10, -3.0, F32))
    # weight decay 0 never multiplies param (inf * 0 would be nan)
    q = np.array([np.inf], F32)
    sgd_step(q, np.zeros(1, F32), lr=0.1)
    assert q[0] == np.inf


@pytest.mark.parametrize("threads", [1, 2])
def test_subnormal_state_is_stored_as_zero(threads):
    # a state decaying under a zero gradient reaches zero instead of lingering among subnormal
    # numbers (slow on the CPU); normal values, infinities and NaN are kept, and the parameter
    # moves as it would without the flush. 37 elements: whole vectors and a partial one.
    tiny, small = np.finfo(F32).tiny, np.float32(1e-3)  # tiny: the smallest normal float32
    n = 37
    state = np.full(n, tiny, F32)
    state[::3], state[1::3] = small, np.nan
    state[5] = -np.inf
    expect_buf = np.where(np.abs(state * F32(0.9)) < np.finfo(F32).tiny, F32(0), state * F32(0.9))
    p = np.ones(n, F32)
    with pyrt.num_threads(threads):
        sgd_step(p, np.zeros(n, F32), state.copy(), lr=0.1, momentum=0.9)
        buf = state.copy()
        sgd_step(np.ones(n, F32), np.zeros(n, F32), buf, lr=0.1, momentum=0.9)
    np.testing.assert_array_equal(buf, expect_buf)
    assert np.count_nonzero(buf == 0) == np.count_nonzero(np.abs(state) == tiny)
    np.testing.assert_array_equal(p, 1 - F32(0.1) * expect_buf)
    # Adam: m decays by beta1, v by beta2; both flushed the same way
    m, v = np.full(n, tiny, F32), np.full(n, tiny, F32)
    m[::2] = v[::2] = small
    q = np.ones(n, F32)
    with pyrt.num_threads(threads):
        adam_step(q, np.zeros(n, F32), m, v, step=10, lr=0.01)
    assert np.all(m[1::2] == 0) and np.all(v[1::2] == 0)
    np.testing.assert_array_equal(m[::2], np.full(m[::2].shape, small * F32(0.9), F32))
    assert np.all(np.abs(m[::2]) >= np.finfo(F32).tiny) and np.all(v[::2] > 0)
    np.testing.assert_array_equal(q[1::2], np.ones(q[1::2].shape, F32))


# ---- errors -------------------------------------------------------------------------------


def test_sgd_hyper_parameter_errors():
    p, g = np.zeros(3, F32), np.zeros(3, F32)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        sgd_step(p, g, lr=-1)
    with pytest.raises(ValueError, match="Invalid momentum value: -0.5"):
        sgd_step(p, g, np.zeros(3, F32), lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match="Invalid weight_decay value: -0.1"):
        sgd_step(p, g, lr=0.1, weight_decay=-0.1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero"):
        sgd_step(p, g, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero"):
        sgd_step(p, g, np.zeros(3, F32), lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="momentum_buffer is required"):
        sgd_step(p, g, lr=0.1, momentum=0.9)
    with pytest.raises(TypeError, match="lr must be a real number"):
        sgd_step(p, g, lr="0.1")


def test_adam_hyper_parameter_errors():
    p, g, m, v = (np.zeros(3, F32) for _ in range(4))
    with pytest.raises(ValueError, match="Invalid learning rate: -0.001"):
        adam_step(p, g, m, v, step=1, lr=-1e-3)
    with pytest.raises(ValueError, match="Invalid epsilon value: -1e-08"):
        adam_step(p, g, m, v, step=1, eps=-1e-8)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0: 1.0"):
        adam_step(p, g, m, v, step=1, betas=(1.0, 0.999))
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: -0.1"):
        adam_step(p, g, m, v, step=1, betas=(0.9, -0.1))
    with pytest.raises(ValueError, match="Invalid weight_decay value: -1"):
        adam_step(p, g, m, v, step=1, weight_decay=-1)
    with pytest.raises(ValueError, match="Invalid step: 0"):
        adam_step(p, g, m, v, step=0)
    with pytest.raises(TypeError, match="step must be an integer"):
        adam_step(p, g, m, v, step=1.0)
    with pytest.raises(TypeError, match="betas must be a pair"):
        adam_step(p, g, m, v, step=1, betas=0.9)


def test_array_errors():
    p, g = np.zeros((4, 3), F32), np.zeros((4, 3), F32)
    m, v = np.zeros((4, 3), F32), np.zeros((4, 3), F32)
    with pytest.raises(ValueError, match=r"grad has shape \(3, 4\)"):
        sgd_step(p, g.T, lr=0.1)
    with pytest.raises(ValueError, match=r"momentum_buffer has shape \(12,\)"):
        sgd_step(p, g, np.zeros(12, F32), lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match=r"exp_avg_sq has shape \(4, 4\)"):
        adam_step(p, g, m, np.zeros((4, 4), F32), step=1)
    with pytest.raises(ValueError, match="param must be C-contiguous"):
        sgd_step(np.zeros((3, 4), F32).T, g, lr=0.1)
    with pytest.raises(ValueError, match="exp_avg must be C-contiguous"):
        adam_step(p, g, np.zeros((3, 4), F32).T, v, step=1)
    ro = np.zeros((4, 3), F32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="param is read-only"):
        sgd_step(ro, g, lr=0.1)
    with pytest.raises(ValueError, match="momentum_buffer is read-only"):
        sgd_step(p, g, ro, lr=0.1, momentum=0.9)
    with pytest.raises(TypeError, match="param must have dtype float32"):
        sgd_step(np.zeros((4, 3)), g, lr=0.1)
    with pytest.raises(TypeError, match="param must be a float32 numpy.ndarray"):
        adam_step([0.0], g, m, v, step=1)
    with pytest.raises(TypeError, match="grad must have dtype float32"):
        adam_step(p, np.zeros((4, 3)), m, v, step=1)


def test_arrays_updated_in_place_must_not_overlap():
    rng = np.random.default_rng(5)
    p, g = rng.standard_normal(8).astype(F32), rng.standard_normal(8).astype(F32)
    z = np.zeros(8, F32)
    with pytest.raises(ValueError, match="param and momentum_buffer overlap"):
        sgd_step(p, g, p, lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="param and exp_avg overlap"):
        adam_step(p, g, p, z.copy(), step=1)
    with pytest.raises(ValueError, match="exp_avg and exp_avg_sq overlap"):
        adam_step(p, g, z, z, step=1)
    with pytest.raises(ValueError, match="grad partially overlaps param"):
        big = np.ones(9, F32)
        sgd_step(big[1:], big[:-1], lr=0.1)
    # the kernels refuse such arguments themselves
    c = ffi.new("float[9]")
    assert lib.pyrt_sgd_step(c, c + 4, c + 1, 4, 0.1, 0.9, 0.0, 0.0, 0, 0) == lib.PYRT_EOVERLAP
    assert lib.pyrt_sgd_step(c, c + 1, ffi.NULL, 4, 0.1, 0.0, 0.0, 0.0, 0, 0) == lib.PYRT_EOVERLAP
    assert lib.pyrt_sgd_step(c, c, c + 4, 4, 0.1, 0.9, 0.0, 0.0, 0, 0) == lib.PYRT_OK
    assert lib.pyrt_adam_step(c, c, c + 4, c + 5, 4, 0.1, 0.9, 0.99, 1e-8, 0.0, 1) == \
        lib.PYRT_EOVERLAP
    assert lib.pyrt_adam_step(c, c + 2, c + 4, c + 8, 1, 0.1, 0.9, 0.99, 1e-8, 0.0, 1) == \
        lib.PYRT_OK
    # the gradient may be the parameter itself: each element is read before it is written
    q = p.copy()
    sgd_step(q, q, lr=0.25)
    np.testing.assert_array_equal(q, p - np.float32(0.25) * p)


def test_scalars_out_of_range():
    p, g, m, v = (np.zeros(3, F32) for _ in range(4))
    with pytest.raises(ValueError, match="lr is too large for a float"):
        sgd_step(p, g, lr=10**400)
    with pytest.raises(ValueError, match="Invalid step: 9223372036854775808"):
        adam_step(p, g, m, v, step=2**63)
    with pytest.raises(TypeError, match="step must be an integer, got bool"):
        adam_step(p, g, m, v, step=True)
