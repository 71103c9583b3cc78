"""The lazy layers: after the first input each is the layer it stands for, with the same
parameters (bitwise) as that layer made at the same point of the seeded stream, the same
outputs, and its Parameter objects kept, so that an optimizer made beforehand trains it."""

import numpy as np
import pytest

import pyrt
import pyrt.nn as nn

F32 = np.float32

# (lazy class, eager class, lazy arguments, input shape; the eager layer takes the input's
# size first)
CASES = [
    ("LazyLinear", "Linear", (5,), {}, (4, 3)),
    ("LazyLinear", "Linear", (2,), {"bias": False}, (2, 6, 7)),
    ("LazyConv1d", "Conv1d", (4, 3), {"padding": 1}, (2, 3, 9)),
    ("LazyConv1d", "Conv1d", (4, 3), {}, (3, 9)),  # unbatched
    ("LazyConv2d", "Conv2d", (6, 3), {"stride": 2, "groups": 2}, (2, 4, 7, 7)),
    ("LazyConv3d", "Conv3d", (2, 2), {"bias": False}, (1, 3, 4, 4, 4)),
    ("LazyConvTranspose1d", "ConvTranspose1d", (3, 2), {"stride": 2}, (2, 4, 5)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (4, 3), {"groups": 2}, (1, 2, 4, 4)),
    ("LazyConvTranspose3d", "ConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3)),
    ("LazyBatchNorm1d", "BatchNorm1d", (), {}, (4, 6)),
    ("LazyBatchNorm1d", "BatchNorm1d", (), {"momentum": 0.3}, (4, 6, 5)),
    ("LazyBatchNorm2d", "BatchNorm2d", (), {"affine": False}, (3, 5, 4, 4)),
    ("LazyBatchNorm3d", "BatchNorm3d", (), {}, (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", "InstanceNorm1d", (), {"affine": True}, (3, 7)),
    ("LazyInstanceNorm2d", "InstanceNorm2d", (), {"track_running_stats": True},
     (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", "InstanceNorm3d", (), {}, (1, 2, 3, 3, 3)),
]


def size_of(lazy, shape):
    if lazy == "LazyLinear":
        return shape[-1]
    unbatched = lazy.endswith(("1d",)) and len(shape) == 2 and "BatchNorm" not in lazy
    return shape[0] if unbatched else shape[1]


@pytest.mark.parametrize("lazy,eager,args,kwargs,shape", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_becomes_the_layer_it_stands_for(lazy, eager, args, kwargs, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(F32)
    pyrt.manual_seed(7)
    m = getattr(nn, lazy)(*args, **kwargs)
    params = list(m.parameters())
    assert all(p.numel() == 0 for p in params)
    assert "uninitialized" in repr(m)
    opt = pyrt.optim.SGD(m.parameters(), lr=0.1) if params else None
    pyrt.manual_seed(7)
    y = m(pyrt.tensor(x))
    pyrt.manual_seed(7)
    ref = getattr(nn, eager)(size_of(lazy, shape), *args, **kwargs)
    assert type(m) is type(ref) and repr(m) == repr(ref)
    assert [p is q for p, q in zip(m.parameters(), params)] == [True] * len(params)
    y_ref = ref(pyrt.tensor(x))  # (batch norm's running statistics move on, as m's did)
    for (name, a), (_, b) in zip(m.state_dict().items(), ref.state_dict().items()):
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(y.detach().numpy(), y_ref.detach().numpy())
    if opt is not None:  # the optimizer made before the first call steps the real weights
        ref_opt = pyrt.optim.SGD(ref.parameters(), lr=0.1)
        for model, optimizer in ((m, opt), (ref, ref_opt)):
            optimizer.zero_grad()
            (model(pyrt.tensor(x)) ** 2).sum().backward()
            optimizer.step()
        for a, b in zip(m.parameters(), ref.parameters()):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_the_stream_is_untouched_until_the_first_call():
    pyrt.manual_seed(3)
    nn.LazyLinear(4)
    nn.LazyConv2d(3, 3, groups=3)
    drawn = pyrt.randn(5).numpy()
    pyrt.manual_seed(3)
    np.testing.assert_array_equal(pyrt.randn(5).numpy(), drawn)


def test_errors():
    with pytest.raises(RuntimeError, match="not initialized yet: call it on an input first"):
        nn.LazyLinear(3).load_state_dict({"weight": np.zeros((3, 2), F32)})
    with pytest.raises(ValueError, match="at least 1 dimension"):
        nn.LazyLinear(3)(pyrt.tensor(1.0))
    with pytest.raises(ValueError, match="expected a 3-D"):
        nn.LazyConv2d(3, 3)(pyrt.ones(2, 2))
    with pytest.raises(ValueError, match="expected a batched input"):
        nn.LazyBatchNorm1d()(pyrt.ones(4))
    with pytest.raises(TypeError, match="must be a pyrt Tensor"):
        nn.LazyLinear(3)(np.ones((2, 2), F32))
