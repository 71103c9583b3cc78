"""Bad input to the newer nn layers, losses, optimizers and schedules: each is refused with an
error naming the argument, before anything is changed (no parameter, optimizer state, schedule
or container left half updated), and where torch accepts the input the results are torch's."""

import warnings

import numpy as np
import pytest

import pyrt
from pyrt import nn, optim
from pyrt.nn import functional as F
from pyrt.optim import lr_scheduler

torch = pytest.importorskip("torch")

F32 = np.float32


def rng(seed):
    return np.random.default_rng(seed)


# ---- kl_div ----------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["sum", "batchmean", "none"])
def test_kl_div_zero_target_is_silent_and_matches_torch(reduction):
    # one-hot targets hold zeros: 0 * log(0) is masked to 0, and must not warn
    r = rng(0)
    x = np.log(r.dirichlet(np.ones(5), size=4)).astype(F32)
    t = np.eye(5, dtype=F32)[r.integers(0, 5, 4)]
    px = pyrt.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = F.kl_div(px, pyrt.tensor(t), reduction=reduction)
    ty = torch.nn.functional.kl_div(tx, torch.tensor(t), reduction=reduction)
    np.testing.assert_allclose(y._data, ty.detach().numpy(), rtol=1e-6, atol=1e-6)
    g = np.ones(y.shape, F32)
    y.backward(pyrt.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(px.grad._data, tx.grad.numpy(), rtol=1e-6)


# ---- ModuleDict ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad, error", [
    ({"b": nn.Tanh(), "c": 5}, TypeError),
    ({"b": nn.Tanh(), "keys": nn.ReLU()}, KeyError),
    ([("b", nn.Tanh()), (1, nn.ReLU())], TypeError),
    ([("b", nn.Tanh()), ("c.d", nn.ReLU())], KeyError),
])
def test_module_dict_update_refused_leaves_it_unchanged(bad, error):
    d = nn.ModuleDict({"a": nn.Linear(2, 2)})
    before = list(d.items())
    with pytest.raises(error):
        d.update(bad)
    assert list(d.items()) == before
    assert [name for name, _ in d.named_parameters()] == ["a.weight", "a.bias"]


# ---- RMSprop and Adagrad ---------------------------------------------------------------------

OPTIMIZERS = [(optim.RMSprop, {"momentum": 0.9, "centered": True}),
              (optim.Adagrad, {"lr_decay": 0.1})]


def _params(seed):
    r = rng(seed)
    params = [nn.Parameter(r.standard_normal(shape).astype(F32)) for shape in [(3,), (2, 3)]]
    for p in params:
        p.grad = pyrt.tensor(r.standard_normal(p.shape).astype(F32))
    return params


def _snapshot(opt, params):
    state = {i: {k: np.array(v, copy=True) for k, v in opt.state.get(p, {}).items()}
             for i, p in enumerate(params)}
    return [p._data.copy() for p in params], state


def _assert_same(a, b):
    (pa, sa), (pb, sb) = a, b
    for x, y in zip(pa, pb):
        np.testing.assert_array_equal(x, y)
    assert sa.keys() == sb.keys()
    for i in sa:
        assert sa[i].keys() == sb[i].keys()
        for k in sa[i]:
            np.testing.assert_array_equal(sa[i][k], sb[i][k])


@pytest.mark.parametrize("Opt, options", OPTIMIZERS)
def test_step_with_a_mismatched_grad_is_refused_before_any_write(Opt, options):
    a, b = _params(1)
    opt = Opt([a, b], lr=0.1, **options)
    opt.step()
    before = _snapshot(opt, [a, b])
    b._grad = pyrt.tensor(np.ones(3, F32))  # would broadcast over b's rows
    with pytest.raises(ValueError, match="grad has shape"):
        opt.step()
    _assert_same(before, _snapshot(opt, [a, b]))


@pytest.mark.parametrize("Opt, options", OPTIMIZERS)
def test_step_with_a_bad_parameter_is_refused_before_any_write(Opt, options):
    a, b = _params(2)
    opt = Opt([a, b], lr=0.1, **options)
    opt.step()
    before = _snapshot(opt, [a, b])
    b._data = np.ascontiguousarray(b._data.T).T  # same shape, not C-contiguous
    with pytest.raises(ValueError, match="param must be C-contiguous"):
        opt.step()
    _assert_same(before, _snapshot(opt, [a, b]))
    b._data = np.ones((3, 2), F32)  # reshaped: its state no longer fits
    b._grad = pyrt.tensor(np.ones((3, 2), F32))
    with pytest.raises(ValueError, match="has shape \\(2, 3\\)"):
        opt.step()
    np.testing.assert_array_equal(a._data, before[0][0])


@pytest.mark.parametrize("Opt, options, name", [
    (optim.RMSprop, {"momentum": 0.5}, "momentum_buffer"),
    (optim.RMSprop, {"centered": True}, "grad_avg"),
    (optim.RMSprop, {}, "square_avg"),
    (optim.Adagrad, {}, "sum"),
])
def test_load_state_dict_refuses_none_state_arrays(Opt, options, name):
    (p,) = _params(3)[:1]
    opt = Opt([p], **options)
    opt.step()
    saved = opt.state_dict()
    saved["state"][0][name] = None
    before = _snapshot(opt, [p])
    with pytest.raises(ValueError, match=f"'{name}' of parameter 0 must be an array"):
        opt.load_state_dict(saved)
    opt.step()  # the state as it was still steps
    assert opt.state[p]["step"] == before[1][0]["step"] + 1


@pytest.mark.parametrize("Opt", [optim.RMSprop, optim.Adagrad])
@pytest.mark.parametrize("values", [np.array([1 + 2j, 2]), np.array(["a", "b"])])
def test_load_state_dict_refuses_arrays_of_non_real_numbers(Opt, values):
    (p,) = _params(4)[:1]
    p._data = p._data[:2].copy()
    p._grad = pyrt.tensor(np.ones(2, F32))
    opt = Opt([p])
    opt.step()
    saved = opt.state_dict()
    name = "square_avg" if Opt is optim.RMSprop else "sum"
    saved["state"][0][name] = values
    with pytest.raises(ValueError, match=f"'{name}' of parameter 0 must hold real numbers"):
        opt.load_state_dict(saved)


@pytest.mark.parametrize("Opt, options", OPTIMIZERS)
def test_good_steps_still_match_torch(Opt, options):
    params = _params(5)
    twins = [torch.nn.Parameter(torch.tensor(p._data.copy())) for p in params]
    opt = Opt(params, lr=0.05, **options)
    topt = getattr(torch.optim, Opt.__name__)(twins, lr=0.05, **options)
    r = rng(6)
    for _ in range(4):
        for p, t in zip(params, twins):
            g = r.standard_normal(p.shape).astype(F32)
            p.grad = pyrt.tensor(g)
            t.grad = torch.tensor(g)
        opt.step()
        topt.step()
    for p, t in zip(params, twins):
        np.testing.assert_allclose(p._data, t.detach().numpy(), rtol=1e-5, atol=1e-6)


# ---- schedules -------------------------------------------------------------------------------


def _sgd():
    return optim.SGD([nn.Parameter(np.ones(2, F32))], lr=0.1, momentum=0.9)


@pytest.mark.parametrize("make, kwargs, error", [
    (lambda: optim.Adagrad([nn.Parameter(np.ones(2, F32))], lr=0.01), {}, ValueError),
    (_sgd, {"max_momentum": "x"}, TypeError),
    (_sgd, {"base_momentum": [0.8, 0.9]}, ValueError),
    (_sgd, {"last_epoch": "x"}, ValueError),
])
def test_one_cycle_refused_leaves_the_optimizer_unchanged(make, kwargs, error):
    opt = make()
    before = [dict(group) for group in opt.param_groups]
    with pytest.raises(error):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, **kwargs)
    assert [dict(group) for group in opt.param_groups] == before
    # a schedule built next starts from the optimizer's own lr
    lr_scheduler.LambdaLR(opt, lambda epoch: 1.0)
    assert opt.param_groups[0]["lr"] == before[0]["lr"]


@pytest.mark.filterwarnings("ignore:Detected call of")
def test_one_cycle_stepped_past_its_end_counts_no_step():
    opt = _sgd()
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    twin = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1, momentum=0.9)
    tsched = torch.optim.lr_scheduler.OneCycleLR(twin, max_lr=1.0, total_steps=3)
    for _ in range(3):
        sched.step()
        tsched.step()
    assert sched.get_last_lr() == tsched.get_last_lr()
    for _ in range(2):
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            sched.step()
    assert (sched.last_epoch, sched._step_count) == (3, 4)
    assert opt.param_groups[0]["lr"] == sched.get_last_lr()[0]


def test_lambda_lr_failing_function_counts_no_step():
    opt = _sgd()
    calls = []

    def factor(epoch):
        calls.append(epoch)
        if epoch == 2:
            raise ArithmeticError("bad epoch")
        return 0.5 ** epoch

    sched = lr_scheduler.LambdaLR(opt, factor)
    sched.step()
    with pytest.raises(ArithmeticError):
        sched.step()
    assert sched.last_epoch == 1 and opt.param_groups[0]["lr"] == pytest.approx(0.05)


@pytest.mark.parametrize("metrics, error", [(None, TypeError), ([1.0], TypeError),
                                            ("abc", ValueError)])
def test_reduce_on_plateau_bad_metrics_named(metrics, error):
    sched = lr_scheduler.ReduceLROnPlateau(_sgd())
    with pytest.raises(error, match="metrics must be a real number"):
        sched.step(metrics)
    assert sched.last_epoch == 0 and sched.num_bad_epochs == 0


def test_reduce_on_plateau_refused_state_leaves_it_unchanged():
    opt = _sgd()
    sched = lr_scheduler.ReduceLROnPlateau(opt, mode="max", patience=0)
    sched.step(1.0)
    before = dict(sched.__dict__)
    saved = sched.state_dict()
    saved.update(mode="avg", best=5.0)
    with pytest.raises(ValueError, match="mode avg is unknown"):
        sched.load_state_dict(saved)
    assert sched.__dict__ == before
    sched.step(0.5)  # still mode "max": a worse metric, past patience
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
