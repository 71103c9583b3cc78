"""torch.nn.utils and torch.nn.init names added beside the layers: get_total_norm,
clip_grads_with_norm_, clip_grad_norm, stateless.functional_call, the fusion of a batch norm
into the layer before it, and nn.init's deprecated names without the underscore.

Without PyTorch: norms written out in NumPy, a fused layer against the two layers it replaces,
functional_call against the module holding the same weights (and the module's own weights
untouched afterwards), errors. With PyTorch: the same calls give the same values, gradients
and messages."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn as nn
from pyrt.nn.utils import stateless

try:  # the reference for the comparisons marked needs_torch
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- get_total_norm, clip_grads_with_norm_, clip_grad_norm -------------------------------------


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 3)), min_size=1, max_size=4),
       st.sampled_from([1.0, 2.0, 3.0, float("inf")]), st.floats(0.01, 10),
       st.integers(0, 2 ** 16))
def test_total_norm_and_clipping_by_it(shapes, norm_type, max_norm, seed):
    arrays = [normal(shape, seed + i) for i, shape in enumerate(shapes)]
    flat = np.concatenate([a.ravel() for a in arrays]).astype(np.float64)
    want = np.abs(flat).max() if norm_type == float("inf") else (
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type))
    total = nn.utils.get_total_norm([pyrt.tensor(a) for a in arrays], norm_type)
    assert total.shape == () and total.dtype == pyrt.float32
    np.testing.assert_allclose(total.item(), want if flat.size else 0, rtol=1e-5)
    params = [pyrt.tensor(np.zeros_like(a), requires_grad=True) for a in arrays]
    for p, a in zip(params, arrays):
        p.grad = pyrt.tensor(a.copy())
    nn.utils.clip_grads_with_norm_(params, max_norm, total)
    scale = min(1.0, max_norm / (total.item() + 1e-6))
    for p, a in zip(params, arrays):
        np.testing.assert_allclose(p.grad.numpy(), a * scale, rtol=1e-5, atol=1e-7)
    if torch is not None:
        theirs = torch.nn.utils.get_total_norm([torch.tensor(a) for a in arrays], norm_type)
        np.testing.assert_allclose(total.item(), theirs.item(), rtol=1e-5)


def test_total_norm_errors_and_the_deprecated_clip_grad_norm():
    assert nn.utils.get_total_norm([]).item() == 0
    bad = pyrt.tensor(np.array([1.0, np.inf], np.float32))
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.get_total_norm(bad, error_if_nonfinite=True)
    with pytest.raises(TypeError, match="norm_type"):
        nn.utils.get_total_norm(bad, norm_type="2")
    p = pyrt.tensor(np.zeros(4, np.float32), requires_grad=True)
    p.grad = pyrt.tensor(np.full(4, 3.0, np.float32))
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        total = nn.utils.clip_grad_norm(p, 1.0)
    np.testing.assert_allclose(total.item(), 6.0)
    np.testing.assert_allclose(np.linalg.norm(p.grad.numpy()), 1.0, rtol=1e-5)


# ---- stateless.functional_call -----------------------------------------------------------------


def test_functional_call_uses_the_given_tensors_and_restores_the_modules():
    pyrt.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4), nn.Linear(4, 2))
    own = {k: np.array(v) for k, v in model.state_dict().items()}  # (arrays: copies)
    given_ = {k: pyrt.tensor(normal(v.shape, i), requires_grad=True)
              for i, (k, v) in enumerate(model.state_dict().items())}
    x = pyrt.tensor(normal((5, 3), 9))
    with pytest.warns(FutureWarning, match="functional_call` is deprecated"):
        y = stateless.functional_call(model, given_, x)
    twin = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4), nn.Linear(4, 2))
    twin.load_state_dict({k: v.detach() for k, v in given_.items()})
    np.testing.assert_allclose(y.detach().numpy(), twin(x).detach().numpy(), rtol=1e-6)
    for k, v in model.state_dict().items():  # the module's own weights are back
        np.testing.assert_array_equal(np.asarray(v), own[k])
    y.sum().backward()
    twin(x).sum().backward()
    for (name, p), q in zip(given_.items(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, err_msg=name)
    assert all(p.grad is None for p in model.parameters())
    if torch is not None:
        theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
                                     torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
        want = torch.func.functional_call(
            theirs, {k: torch.tensor(v.detach().numpy()) for k, v in given_.items()},
            torch.tensor(x.numpy()))
        np.testing.assert_allclose(y.detach().numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2, bias=False)
        self.b = nn.Linear(2, 2, bias=False)
        self.b.weight = self.a.weight
        self.register_buffer("offset", pyrt.zeros(2))

    def forward(self, x):
        return self.b(self.a(x)) + self.offset


def test_functional_call_ties_weights_and_checks_keys_when_strict():
    m = Tied()
    w = pyrt.tensor(np.eye(2, dtype=np.float32) * 2)
    x = pyrt.tensor(np.ones((1, 2), np.float32))
    with pytest.warns(FutureWarning):
        y = stateless.functional_call(m, {"a.weight": w}, (x,))
        np.testing.assert_allclose(y.numpy(), [[4, 4]])  # b.weight tied to the given a.weight
        y = stateless.functional_call(m, {"a.weight": w}, (x,), tie_weights=False)
        assert not np.allclose(y.detach().numpy(), [[4, 4]])
        with pytest.raises(ValueError, match="which are tied"):
            stateless.functional_call(m, {"a.weight": w, "b.weight": w * 1}, x)
        with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'offset'"):
            stateless.functional_call(m, {"a.weight": w}, x, strict=True)
        with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'c'"):
            stateless.functional_call(m, {"a.weight": w, "offset": w[0], "c": w}, x,
                                      strict=True)
        with pytest.raises(RuntimeError, match="nn.DataParallel"):
            stateless.functional_call(nn.DataParallel(m), {}, x)
        with pytest.raises(TypeError, match="must be a Tensor"):
            stateless.functional_call(m, {"a.weight": np.eye(2)}, x)
    assert m.b.weight is m.a.weight and "offset" in m._buffers
    if torch is not None:
        assert torch.nn.utils.stateless.functional_call is not None


# ---- fusion ------------------------------------------------------------------------------------


def eval_batch_norm(cls, features, seed):
    bn = cls(features)
    r = np.random.default_rng(seed)
    bn.running_mean.data[...] = r.standard_normal(features)
    bn.running_var.data[...] = r.random(features) + 0.5
    bn.weight.data[...] = r.standard_normal(features)
    bn.bias.data[...] = r.standard_normal(features)
    return bn.eval()


@pytest.mark.parametrize("make, transpose, shape", [
    (lambda: nn.Conv2d(3, 4, 3), False, (2, 3, 6, 6)),
    (lambda: nn.Conv2d(3, 4, 3, bias=False), False, (2, 3, 5, 5)),
    (lambda: nn.ConvTranspose2d(3, 4, 2, stride=2), True, (2, 3, 3, 3)),
    (lambda: nn.Conv1d(3, 4, 2), False, (2, 3, 7)),
])
def test_conv_bn_fusion_computes_both_layers(make, transpose, shape):
    pyrt.manual_seed(1)
    conv = make().eval()
    bn = eval_batch_norm(nn.BatchNorm2d if len(shape) == 4 else nn.BatchNorm1d, 4, 2)
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    x = pyrt.tensor(normal(shape, 3))
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    assert fused is not conv and isinstance(fused.weight, nn.Parameter)
    if torch is not None:
        w, b = nn.utils.fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean,
                                             bn.running_var, bn.eps, bn.weight, bn.bias,
                                             transpose)
        t = lambda v: None if v is None else torch.tensor(v.detach().numpy())  # noqa: E731
        tw, tb = torch.nn.utils.fuse_conv_bn_weights(
            t(conv.weight), t(conv.bias), t(bn.running_mean), t(bn.running_var), bn.eps,
            t(bn.weight), t(bn.bias), transpose)
        np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-5)
        np.testing.assert_allclose(b.detach().numpy(), tb.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_linear_bn_fusion_and_its_errors():
    pyrt.manual_seed(2)
    linear = nn.Linear(5, 4).eval()
    bn = eval_batch_norm(nn.BatchNorm1d, 4, 4)
    x = pyrt.tensor(normal((6, 5), 5))
    fused = nn.utils.fuse_linear_bn_eval(linear, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(linear(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(5, 4), bn)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(5, 3).eval(), bn)
    with pytest.raises(AssertionError, match="must not be None"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 4, 1).eval(),
                                   nn.BatchNorm2d(4, track_running_stats=False).eval())


# ---- nn.init's deprecated names ----------------------------------------------------------------


@pytest.mark.parametrize("name, args", [("uniform", ()), ("normal", ()), ("constant", (0.5,)),
                                        ("eye", ()), ("xavier_uniform", ()),
                                        ("xavier_normal", ()), ("kaiming_uniform", ()),
                                        ("kaiming_normal", ()), ("orthogonal", ()),
                                        ("sparse", (0.5,))])
def test_init_names_without_underscore_warn_and_fill_alike(name, args):
    a, b = pyrt.zeros(4, 6), pyrt.zeros(4, 6)
    pyrt.manual_seed(3)
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of "
                                           f"`nn.init.{name}_`"):
        getattr(nn.init, name)(a, *args)
    pyrt.manual_seed(3)
    getattr(nn.init, name + "_")(b, *args)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert getattr(nn.init, name).__name__ == name
    if torch is not None:
        assert hasattr(torch.nn.init, name)
    w = pyrt.zeros(2, 2, 3)
    with pytest.warns(FutureWarning):
        nn.init.dirac(w)
    assert w.numpy()[0, 0, 1] == 1
