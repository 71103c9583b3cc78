"""RMSprop, Adagrad and the schedules (LinearLR, ConstantLR, PolynomialLR, MultiplicativeLR,
OneCycleLR, SequentialLR, ChainedScheduler, ReduceLROnPlateau) against torch.optim: an MLP and
its torch twin, holding the same weights, trained side by side under every combination of
options (the same losses and weights to float32 rounding); state_dict round trips (5 + 5 steps
through a saved state = 10 steps straight, bitwise); torch's errors for bad hyper-parameters;
loaded states that step() could not use refused; the schedules' lrs equal to torch's."""

import itertools
import pickle
import re

import numpy as np
import pytest

import pyrt
from pyrt import cuda, nn, optim

torch = pytest.importorskip("torch")

F32 = np.float32
SHAPES = [(5, 3), (7,), (2, 3, 4)]


def rng(seed):
    return np.random.default_rng(seed)


def make_params(seed):
    r = rng(seed)
    return [nn.Parameter(r.standard_normal(shape)) for shape in SHAPES]


def set_grads(params, seed):
    r = rng(seed)
    for p in params:
        p.grad = pyrt.tensor(r.standard_normal(p.shape).astype(F32))


def run(opt, params, steps, seed):
    """`steps` steps with seeded random gradients."""
    for s in range(steps):
        set_grads(params, seed + s)
        opt.step()


def run_torch(opt, params, steps, seed):
    for s in range(steps):
        r = rng(seed + s)
        for p in params:
            p.grad = torch.from_numpy(r.standard_normal(tuple(p.shape)).astype(F32))
        opt.step()


def torch_twin(params):
    return [torch.tensor(p._data.copy(), requires_grad=True) for p in params]


def assert_close(got, ref, rtol=1e-5, what=""):
    """rtol relative to the largest magnitude in play: float32 rounding, a few times a step,
    in orders that differ between the libraries (matrix products, fused multiply-adds)."""
    ref = np.asarray(ref, np.float64)
    scale = float(np.max(np.abs(ref), initial=0.0))
    np.testing.assert_allclose(np.asarray(got, np.float64), ref, rtol=rtol, atol=rtol * scale,
                               err_msg=what)


# ---- a model trained side by side with its torch twin ----------------------------------------


def twin_models(seed):
    """A pyrt MLP and a torch MLP with the same float32 weights."""
    pyrt.manual_seed(seed)
    ours = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for p, tp in zip(ours.parameters(), theirs.parameters(), strict=True):
            assert tuple(p.shape) == tuple(tp.shape)
            tp.copy_(torch.from_numpy(p._data.copy()))
    return ours, theirs


def batches(seed, steps):
    """Inputs and the targets of a fixed smooth function of them, which the model can learn."""
    r = rng(seed)
    teacher = r.standard_normal((6, 3))
    xs = [r.standard_normal((10, 6)) for _ in range(steps)]
    return [(x.astype(F32), np.tanh(x @ teacher).astype(F32)) for x in xs]


def train(model, opt, data):
    """The loss of each step, through a closure as torch users write it."""
    loss_fn, losses = nn.MSELoss(), []
    for x, y in data:
        def closure(x=x, y=y):
            opt.zero_grad()
            loss = loss_fn(model(pyrt.tensor(x)), pyrt.tensor(y))
            loss.backward()
            return loss

        losses.append(opt.step(closure).item())
    return losses


def train_torch(model, opt, data):
    loss_fn, losses = torch.nn.MSELoss(), []
    for x, y in data:
        def closure(x=x, y=y):
            opt.zero_grad()
            loss = loss_fn(model(torch.from_numpy(x)), torch.from_numpy(y))
            loss.backward()
            return loss

        losses.append(opt.step(closure).item())
    return losses


def assert_trained_alike(kind, cfg, seed, steps=25):
    ours, theirs = twin_models(seed)
    data = batches(seed + 1, steps)
    losses = train(ours, getattr(optim, kind)(ours.parameters(), **cfg), data)
    ref = train_torch(theirs, getattr(torch.optim, kind)(theirs.parameters(), **cfg), data)
    assert_close(losses, ref, what="losses")
    assert losses[-1] < losses[0]  # it did train
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        assert_close(p._data, tp.detach().numpy(), what=kind)
    return ours


RMSPROP_OPTIONS = list(itertools.product([0.0, 0.05], [0.0, 0.9], [False, True], [0.99, 0.9]))


@pytest.mark.parametrize("weight_decay,momentum,centered,alpha", RMSPROP_OPTIONS)
def test_rmsprop_trains_as_torch(weight_decay, momentum, centered, alpha):
    i = RMSPROP_OPTIONS.index((weight_decay, momentum, centered, alpha))
    cfg = {"lr": [3e-3, 1e-3][i % 2], "alpha": alpha, "eps": [1e-8, 1e-4][i // 2 % 2],
           "weight_decay": weight_decay, "momentum": momentum, "centered": centered}
    assert_trained_alike("RMSprop", cfg, seed=i)


ADAGRAD_OPTIONS = list(itertools.product([0.0, 0.05], [0.0, 0.05], [0.0, 0.1], [1e-10, 1e-3]))


NEW_OPTIMIZER_OPTIONS = [
    ("Adamax", {"lr": 1e-2}),
    ("Adamax", {"lr": 5e-3, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.05}),
    ("NAdam", {"lr": 1e-2}),
    ("NAdam", {"lr": 5e-3, "betas": (0.85, 0.995), "weight_decay": 0.05,
               "momentum_decay": 0.01}),
    ("NAdam", {"lr": 5e-3, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 5e-3}),
    ("RAdam", {"lr": 5e-3, "betas": (0.9, 0.9), "eps": 1e-6, "weight_decay": 0.05}),
    ("RAdam", {"lr": 2e-2, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.05}),
]


@pytest.mark.parametrize("kind,cfg", NEW_OPTIMIZER_OPTIONS)
def test_adamax_nadam_radam_adadelta_train_as_torch(kind, cfg):
    """RAdam's first steps (rho_t <= 5, momentum alone) and the rectified ones after, with
    betas that reach them sooner in one case."""
    assert_trained_alike(kind, cfg, seed=200 + NEW_OPTIMIZER_OPTIONS.index((kind, cfg)),
                         steps=30)


@pytest.mark.parametrize("lr_decay,weight_decay,initial_accumulator_value,eps",
                         ADAGRAD_OPTIONS)
def test_adagrad_trains_as_torch(lr_decay, weight_decay, initial_accumulator_value, eps):
    i = ADAGRAD_OPTIONS.index((lr_decay, weight_decay, initial_accumulator_value, eps))
    cfg = {"lr": [0.05, 0.01][i % 2], "lr_decay": lr_decay, "weight_decay": weight_decay,
           "initial_accumulator_value": initial_accumulator_value, "eps": eps}
    assert_trained_alike("Adagrad", cfg, seed=100 + i)


def test_defaults_train_as_torchs_defaults():
    for kind in ("RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta"):
        assert_trained_alike(kind, {}, seed=7, steps=30)
        ours = getattr(optim, kind)(make_params(0)).param_groups[0]
        theirs = getattr(torch.optim, kind)([torch.zeros(1, requires_grad=True)]).param_groups[0]
        for key in ours:
            if key != "params":
                assert ours[key] == theirs[key], (kind, key)


@pytest.mark.parametrize("kind,cfg", [
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.5,
                 "weight_decay": 0.1})])
def test_groups_step_with_their_own_hyper_parameters(kind, cfg):
    p = make_params(30)
    tp = torch_twin(p)
    groups = [{"params": p[:2]}, {"params": p[2:], "lr": 0.2, "weight_decay": 0.0}]
    tgroups = [{"params": tp[:2]}, {"params": tp[2:], "lr": 0.2, "weight_decay": 0.0}]
    run(getattr(optim, kind)(groups, **cfg), p, 20, 31)
    run_torch(getattr(torch.optim, kind)(tgroups, **cfg), tp, 20, 31)
    for q, tq in zip(p, tp):
        assert_close(q._data, tq.detach().numpy())


# ---- state_dict ------------------------------------------------------------------------------

ALL_ON = [
    ("RMSprop", {"lr": 5e-3, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.01, "momentum": 0.9,
                 "centered": True}),
    ("RMSprop", {"lr": 5e-3}),
    ("Adagrad", {"lr": 0.05, "lr_decay": 0.01, "weight_decay": 0.01,
                 "initial_accumulator_value": 0.1, "eps": 1e-6}),
    ("Adamax", {"lr": 5e-3, "betas": (0.8, 0.99), "weight_decay": 0.01}),
    ("NAdam", {"lr": 5e-3, "weight_decay": 0.01, "momentum_decay": 0.01}),
    ("RAdam", {"lr": 5e-3, "betas": (0.9, 0.9), "weight_decay": 0.01,
               "decoupled_weight_decay": True}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.01}),
]


@pytest.mark.parametrize("kind,cfg", ALL_ON)
def test_state_dict_resumes_training_exactly(kind, cfg):
    """5 steps, save model and optimizer, load both into fresh objects (other weights, other
    hyper-parameters), 5 more steps: bitwise the weights and state of 10 steps straight."""
    make = getattr(optim, kind)
    data = batches(40, 10)
    straight, _ = twin_models(41)
    straight_opt = make(straight.parameters(), **cfg)
    train(straight, straight_opt, data)

    first, _ = twin_models(41)
    opt = make(first.parameters(), **cfg)
    train(first, opt, data[:5])
    saved = pickle.dumps((first.state_dict(), opt.state_dict()))

    resumed, _ = twin_models(42)
    resumed_opt = make(resumed.parameters(), lr=123.0)
    model_state, opt_state = pickle.loads(saved)
    resumed.load_state_dict(model_state)
    resumed_opt.load_state_dict(opt_state)
    assert resumed_opt.param_groups[0] == {**opt.param_groups[0],
                                           "params": resumed_opt.param_groups[0]["params"]}
    train(resumed, resumed_opt, data[5:])

    for name, value in straight.state_dict().items():
        assert np.array_equal(resumed.state_dict()[name], value), name
    a, b = straight_opt.state_dict()["state"], resumed_opt.state_dict()["state"]
    assert sorted(a) == sorted(b)
    for i in a:
        assert sorted(a[i]) == sorted(b[i]) and a[i]["step"] == b[i]["step"] == 10
        for key in a[i]:
            assert np.array_equal(a[i][key], b[i][key]), (i, key)


@pytest.mark.parametrize("kind,cfg", ALL_ON)
def test_state_dict_layout_matches_torch_and_torchs_state_loads(kind, cfg):
    """The same entries with the same values as torch's state after 3 steps; torch's state
    (tensors, float step counts, its flags off) loads and training goes on as torch's."""
    p = make_params(50)
    tp = torch_twin(p)
    ours = getattr(optim, kind)(p, **cfg)
    theirs = getattr(torch.optim, kind)(tp, **cfg)
    run(ours, p, 3, 51)
    run_torch(theirs, tp, 3, 51)
    a, b = ours.state_dict(), theirs.state_dict()
    assert sorted(a["state"]) == sorted(b["state"]) == [0, 1, 2]
    for i in a["state"]:
        assert sorted(a["state"][i]) == sorted(b["state"][i])
        for key, value in a["state"][i].items():
            assert_close(value, np.asarray(b["state"][i][key]), what=key)
        assert type(a["state"][i]["step"]) is int
    assert a["param_groups"][0] == {k: v for k, v in b["param_groups"][0].items()
                                    if k in a["param_groups"][0]}

    again = getattr(optim, kind)(p, lr=1.0)
    again.load_state_dict(b)
    assert again.param_groups[0]["lr"] == cfg["lr"] and "foreach" not in again.param_groups[0]
    for q, tq in zip(p, tp):
        q._data[...] = tq.detach().numpy()
    run(again, p, 5, 52)
    run_torch(theirs, tp, 5, 52)
    for q, tq in zip(p, tp):
        assert_close(q._data, tq.detach().numpy())
    assert all(s["step"] == 8 for s in again.state.values())


@pytest.mark.parametrize("kind", ["RMSprop", "Adagrad"])
def test_state_dict_of_a_0d_parameter_resumes_training_exactly(kind):
    # the state arrays of a 0-d parameter are 0-d too: they load as arrays, not as numbers
    cfg = dict(ALL_ON[0][1] if kind == "RMSprop" else ALL_ON[2][1])
    straight = [nn.Parameter(np.array(1.5, F32)), nn.Parameter(rng(53).standard_normal(3))]
    resumed = [nn.Parameter(p._data.copy()) for p in straight]
    tp = torch_twin(straight)
    run(getattr(optim, kind)(straight, **cfg), straight, 4, 54)
    run_torch(getattr(torch.optim, kind)(tp, **cfg), tp, 4, 54)
    first = getattr(optim, kind)(resumed, **cfg)
    run(first, resumed, 2, 54)
    second = getattr(optim, kind)(resumed, **cfg)
    second.load_state_dict(first.state_dict())
    for p in resumed:
        assert all(np.ndim(v) == 0 if k == "step" else v.shape == p.shape
                   for k, v in second.state[p].items())
    run(second, resumed, 2, 56)  # the gradients of steps 3 and 4 above
    for a, b, t in zip(straight, resumed, tp):
        np.testing.assert_array_equal(a._data, b._data)
        assert_close(a._data, t.detach().numpy())


def test_adagrad_makes_its_state_with_its_groups_as_torch():
    p = make_params(60)
    tp = torch_twin(p)
    ours = optim.Adagrad(p[:2], initial_accumulator_value=0.25)
    theirs = torch.optim.Adagrad(tp[:2], initial_accumulator_value=0.25)
    a, b = ours.state_dict()["state"], theirs.state_dict()["state"]
    assert sorted(a) == sorted(b) == [0, 1]
    for i in a:
        assert a[i]["step"] == b[i]["step"].item() == 0
        np.testing.assert_array_equal(a[i]["sum"], b[i]["sum"].numpy())
    # a group added later starts from its own value (torch takes the constructor's)
    ours.add_param_group({"params": p[2:], "initial_accumulator_value": 2.0})
    assert ours.state[p[2]]["step"] == 0
    np.testing.assert_array_equal(ours.state[p[2]]["sum"], np.full(SHAPES[2], 2.0, F32))
    # a parameter without a gradient keeps its state and its values
    before = p[1]._data.copy()
    set_grads(p, 61)
    p[1].grad = None
    ours.step()
    assert [ours.state[q]["step"] for q in p] == [1, 0, 1]
    np.testing.assert_array_equal(p[1]._data, before)
    # a loaded state that leaves a parameter out: its state is made on its first step
    fresh = optim.Adagrad(p[:2], initial_accumulator_value=0.25)
    saved = fresh.state_dict()
    del saved["state"][1]
    fresh.load_state_dict(saved)
    assert p[1] not in fresh.state
    set_grads(p, 62)
    fresh.step()
    assert fresh.state[p[1]]["step"] == 1
    np.testing.assert_allclose(fresh.state[p[1]]["sum"], 0.25 + p[1].grad._data ** 2, rtol=1e-6)


def test_rmsprop_makes_state_on_the_first_step_and_buffers_when_switched_on():
    """As torch, only parameters that stepped have a state, with the buffers their options
    ask for; momentum and centering switched on later start their buffers at zero (torch
    raises KeyError: it is given the same zero buffers here to compare)."""
    p = make_params(63)
    tp = torch_twin(p)
    ours = optim.RMSprop(p, lr=0.01)
    theirs = torch.optim.RMSprop(tp, lr=0.01)
    for step in range(3):  # only the first parameter has a gradient
        g = rng(64 + step).standard_normal(SHAPES[0]).astype(F32)
        p[0].grad, tp[0].grad = pyrt.tensor(g), torch.from_numpy(g)
        ours.step()
        theirs.step()
    assert list(ours.state) == [p[0]] and sorted(ours.state[p[0]]) == ["square_avg", "step"]
    assert sorted(theirs.state[tp[0]]) == ["square_avg", "step"]
    for opt in (ours, theirs):
        opt.param_groups[0].update(momentum=0.9, centered=True)
    theirs.state[tp[0]].update(momentum_buffer=torch.zeros_like(tp[0]),
                               grad_avg=torch.zeros_like(tp[0]))
    run(ours, p, 5, 67)
    run_torch(theirs, tp, 5, 67)
    for q, tq in zip(p, tp):
        assert_close(q._data, tq.detach().numpy())
        assert sorted(ours.state[q]) == ["grad_avg", "momentum_buffer", "square_avg", "step"]
        for key, value in ours.state[q].items():
            assert_close(value, np.asarray(theirs.state[tq][key]), what=key)


@pytest.mark.parametrize("kind", ["RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta"])
def test_a_step_counts_as_a_write_for_autograd(kind):
    """A graph that read the parameters before the step refuses its backward after it, as
    torch's version counters make it refuse."""
    model, _ = twin_models(70)
    opt = getattr(optim, kind)(model.parameters())
    for p in model.parameters():
        p.grad = pyrt.tensor(np.ones(p.shape, F32))
    y = model(pyrt.tensor(rng(71).standard_normal((4, 6)).astype(F32))).sum()
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    assert all(p.is_leaf and p.requires_grad for p in model.parameters())


def test_zero_grad_and_steps_without_a_closure():
    for kind in ("RMSprop", "Adagrad"):
        p = make_params(72)
        opt = getattr(optim, kind)(p)
        set_grads(p, 73)
        assert opt.step() is None
        opt.zero_grad(set_to_none=False)
        assert all(q.grad is not None and not q.grad._data.any() for q in p)
        before = [q._data.copy() for q in p]
        opt.step()  # zero gradients: RMSprop's update is 0 / (sqrt(v) + eps), Adagrad's too
        for q, b in zip(p, before):
            np.testing.assert_array_equal(q._data, b)
        opt.zero_grad()
        assert all(q.grad is None for q in p)


# ---- errors ----------------------------------------------------------------------------------

HYPERPARAMETER_ERRORS = [
    ("RMSprop", {"lr": -0.01}, "Invalid learning rate: -0.01"),
    ("RMSprop", {"eps": -1e-8}, "Invalid epsilon value: -1e-08"),
    ("RMSprop", {"momentum": -0.9}, "Invalid momentum value: -0.9"),
    ("RMSprop", {"weight_decay": -0.1}, "Invalid weight_decay value: -0.1"),
    ("RMSprop", {"alpha": -0.5}, "Invalid alpha value: -0.5"),
    ("RMSprop", {"lr": -1.0, "alpha": -1.0}, "Invalid learning rate: -1.0"),  # torch's order
    ("Adagrad", {"lr": -0.01}, "Invalid learning rate: -0.01"),
    ("Adagrad", {"lr_decay": -0.1}, "Invalid lr_decay value: -0.1"),
    ("Adagrad", {"weight_decay": -1.0}, "Invalid weight_decay value: -1.0"),
    ("Adagrad", {"initial_accumulator_value": -0.1},
     "Invalid initial_accumulator_value value: -0.1"),
    ("Adagrad", {"eps": -1e-10}, "Invalid epsilon value: -1e-10"),
    ("Adagrad", {"eps": -1.0, "lr_decay": -1.0}, "Invalid lr_decay value: -1.0"),
    ("Adamax", {"lr": -0.01}, "Invalid learning rate: -0.01"),
    ("Adamax", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
    ("Adamax", {"eps": -1.0}, "Invalid epsilon value: -1.0"),
    ("NAdam", {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
    ("NAdam", {"momentum_decay": -0.1}, "Invalid momentum_decay value: -0.1"),
    ("NAdam", {"weight_decay": -0.1}, "Invalid weight_decay value: -0.1"),
    ("RAdam", {"lr": -1.0}, "Invalid learning rate: -1.0"),
    ("RAdam", {"weight_decay": -0.5}, "Invalid weight_decay value: -0.5"),
    ("Adadelta", {"rho": 1.5}, "Invalid rho value: 1.5"),
    ("Adadelta", {"eps": -1e-6}, "Invalid epsilon value: -1e-06"),
    ("Adadelta", {"lr": -1.0, "rho": 2.0}, "Invalid learning rate: -1.0"),
]


@pytest.mark.parametrize("kind,cfg,message", HYPERPARAMETER_ERRORS)
def test_invalid_hyper_parameters_raise_as_torch(kind, cfg, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        getattr(optim, kind)(make_params(80), **cfg)
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, kind)([torch.zeros(2, requires_grad=True)], **cfg)
    assert str(theirs.value) == message


@pytest.mark.parametrize("kind", ["RMSprop", "Adagrad"])
def test_hyper_parameters_of_the_wrong_type_and_of_groups(kind):
    with pytest.raises(TypeError, match="lr must be a real number, got str"):
        getattr(optim, kind)(make_params(81), lr="0.1")
    with pytest.raises(TypeError, match="eps must be a real number, got NoneType"):
        getattr(optim, kind)(make_params(81), eps=None)
    # a group's own values are checked before any parameter is written
    p = make_params(82)
    opt = getattr(optim, kind)([{"params": p[:1]}, {"params": p[1:2]}])
    if kind == "Adagrad":  # its state is made with the group: the group is checked then
        with pytest.raises(ValueError, match="Invalid lr_decay value: -1.0"):
            opt.add_param_group({"params": p[2:], "lr_decay": -1.0})
        assert len(opt.param_groups) == 2 and p[2] not in opt.state
    set_grads(p[:2], 83)
    before = [q._data.copy() for q in p]
    opt.param_groups[1]["lr"] = -1.0
    with pytest.raises(ValueError, match="Invalid learning rate: -1.0"):
        opt.step()
    for q, b in zip(p, before):
        np.testing.assert_array_equal(q._data, b)


def _change(entry, **values):
    return lambda s: s["state"][entry].update(values)


@pytest.mark.parametrize("kind, change, error", [
    ("RMSprop", lambda s: s["state"][2].pop("square_avg"), "parameter 2 lacks square_avg"),
    ("RMSprop", lambda s: s["state"][0].pop("step"), "parameter 0 lacks step"),
    ("RMSprop", _change(0, momentum_buffer="0"),
     "'momentum_buffer' of parameter 0 must be an array of shape (5, 3), got str"),
    ("RMSprop", _change(1, grad_avg=np.zeros(2, F32)),
     "'grad_avg' of parameter 1 has shape (2,), expected (7,)"),
    ("RMSprop", _change(1, step="3"), "'step' of parameter 1 must be an integer, got str"),
    ("RMSprop", _change(1, step=-1), "'step' of parameter 1 must be in [0, 2**63), got -1"),
    ("RMSprop", _change(2, step=True), "'step' of parameter 2 must be an integer, got bool"),
    ("RMSprop", lambda s: s["param_groups"][1].update(alpha=-0.5), "Invalid alpha value: -0.5"),
    ("RMSprop", lambda s: s["param_groups"][0].update(maximize=True),
     "sets maximize=True, which RMSprop does not implement"),
    ("Adagrad", lambda s: s["state"][0].pop("sum"), "parameter 0 lacks sum"),
    ("Adagrad", _change(0, sum=[1.0]), "'sum' of parameter 0 must be an array"),
    ("Adagrad", _change(2, step=2.5), "'step' of parameter 2 must be an integer, got float"),
    ("Adagrad", lambda s: s["param_groups"][1].update(lr_decay=-1),
     "Invalid lr_decay value: -1.0"),
    ("Adagrad", lambda s: s["param_groups"][0].update(fused=True),
     "sets fused=True, which Adagrad does not implement"),
])
def test_a_state_that_step_could_not_use_is_refused_on_loading(kind, change, error):
    p = make_params(84)
    extra = {"momentum": 0.9, "centered": True} if kind == "RMSprop" else {}
    opt = getattr(optim, kind)([{"params": p[:2]}, {"params": p[2:]}], lr=0.1, **extra)
    run(opt, p, 2, 85)
    state = opt.state_dict()
    before = ([q._data.copy() for q in p], repr(opt.param_groups), opt.state_dict())
    change(state)
    with pytest.raises(ValueError, match=re.escape(error)):
        opt.load_state_dict(state)
    # nothing was loaded: the optimizer goes on as before
    assert repr(opt.param_groups) == before[1]
    for i, entry in opt.state_dict()["state"].items():
        for key, value in entry.items():
            assert np.array_equal(value, before[2]["state"][i][key])
    run(opt, p, 1, 86)
    assert all(not np.array_equal(q._data, old) for q, old in zip(p, before[0]))


@pytest.mark.skipif(not cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("kind,cfg", ALL_ON)
def test_on_the_gpu_as_on_the_cpu(kind, cfg):
    """The same steps on CuPy arrays; the optimizer made before Module.to() moves its state
    with the parameters, and its state_dict loads on the CPU."""
    data = batches(90, 10)
    host, _ = twin_models(91)
    device, _ = twin_models(91)
    host_opt = getattr(optim, kind)(host.parameters(), **cfg)
    device_opt = getattr(optim, kind)(device.parameters(), **cfg)
    train(host, host_opt, data[:5])
    train(device, device_opt, data[:5])
    device.to("cuda")
    loss_fn = nn.MSELoss()
    for x, y in data[5:]:
        device_opt.zero_grad()
        loss_fn(device(pyrt.tensor(x, device="cuda")), pyrt.tensor(y, device="cuda")).backward()
        device_opt.step()
    train(host, host_opt, data[5:])
    for p, q in zip(device.parameters(), host.parameters()):
        assert p.device == "cuda:0"
        assert_close(p.detach().cpu().numpy(), q._data, rtol=1e-4)
    assert all(type(v).__module__.startswith("cupy")
               for s in device_opt.state.values() for v in s.values() if hasattr(v, "shape"))
    back = getattr(optim, kind)(host.parameters(), lr=1.0)
    back.load_state_dict(device_opt.state_dict())
    assert all(s["step"] == 10 for s in back.state.values())


# ---- learning-rate schedules -----------------------------------------------------------------


def _two_groups(params):
    return [{"params": params[:1], "lr": 0.1}, {"params": params[1:], "lr": 0.03}]


def twin_optimizers(kind="SGD", **cfg):
    cfg = cfg or {"lr": 1.0, "momentum": 0.9}
    return (getattr(optim, kind)(_two_groups(make_params(1)), **cfg),
            getattr(torch.optim, kind)(_two_groups(torch_twin(make_params(1))), **cfg))


def _momenta(opt):
    return [(g.get("momentum"), g.get("betas")) for g in opt.param_groups]


SCHEDULES = [
    ("LinearLR", {}, 30),
    ("LinearLR", {"start_factor": 0.1, "end_factor": 0.5, "total_iters": 12}, 30),
    ("LinearLR", {"start_factor": 1.0, "end_factor": 0.0, "total_iters": 7}, 30),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 40}, 40),
    ("OneCycleLR", {"max_lr": [1.0, 0.2], "epochs": 6, "steps_per_epoch": 7, "pct_start": 0.4,
                    "anneal_strategy": "linear", "div_factor": 10.0, "final_div_factor": 100.0},
     42),
    ("OneCycleLR", {"max_lr": 0.3, "total_steps": 50, "three_phase": True, "base_momentum": 0.8,
                    "max_momentum": [0.9, 0.99]}, 50),
    ("OneCycleLR", {"max_lr": 0.3, "total_steps": 33, "three_phase": True, "pct_start": 0.2,
                    "anneal_strategy": "linear", "cycle_momentum": False}, 33),
    ("PolynomialLR", {}, 12),
    ("PolynomialLR", {"total_iters": 20, "power": 2.5}, 30),
    ("MultiplicativeLR", {"lr_lambda": lambda t: 0.9 if t % 3 else 1.05}, 30),
    ("MultiplicativeLR", {"lr_lambda": [lambda t: 0.95, lambda t: 1.0 - 0.01 * t]}, 30),
]


@pytest.mark.parametrize("name,cfg,steps", SCHEDULES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(SCHEDULES)])
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_schedules_set_torchs_learning_rates(name, cfg, steps, kind):
    """Every step of the schedule on two parameter groups: the lrs (and OneCycleLR's momenta,
    or Adam's beta1) of PyTorch to the last bit, including after a resume from state_dict
    halfway, the schedule built before the optimizer's state is loaded (as torch advises)."""
    ours, theirs = twin_optimizers(kind, **({"lr": 1.0} if kind == "Adam" else {}))
    mine = getattr(optim.lr_scheduler, name)(ours, **cfg)
    ref = getattr(torch.optim.lr_scheduler, name)(theirs, **cfg)
    assert mine.get_last_lr() == ref.get_last_lr() and _momenta(ours) == _momenta(theirs)
    history = []
    for step in range(steps - 1):  # OneCycleLR's last lr is at total_steps - 1
        ours.step()
        theirs.step()
        mine.step()
        ref.step()
        assert mine.get_last_lr() == ref.get_last_lr(), step
        assert _momenta(ours) == _momenta(theirs), step
        assert [g["lr"] for g in ours.param_groups] == mine.get_last_lr()
        history.append(mine.get_last_lr())
        if step == steps // 2:
            saved = pickle.loads(pickle.dumps((ours.state_dict(), mine.state_dict())))
    assert len({lr[0] for lr in history}) >= 5  # the lr moved
    again, _ = twin_optimizers(kind, **({"lr": 1.0} if kind == "Adam" else {}))
    resumed = getattr(optim.lr_scheduler, name)(again, **cfg)
    again.load_state_dict(saved[0])
    resumed.load_state_dict(saved[1])
    for step in range(steps // 2 + 1, steps - 1):
        resumed.step()
        assert resumed.get_last_lr() == history[step], step
        assert [g["lr"] for g in again.param_groups] == history[step]


# Schedules built on one optimizer and composed: (name, config) of each, then the composition
# (SequentialLR's milestones, or None for ChainedScheduler).
COMPOSED = [
    ([("LinearLR", {"start_factor": 0.1, "total_iters": 5}),
      ("CosineAnnealingLR", {"T_max": 20, "eta_min": 0.01})], [5]),
    ([("ConstantLR", {"factor": 0.5, "total_iters": 3}), ("ExponentialLR", {"gamma": 0.9}),
      ("StepLR", {"step_size": 4, "gamma": 0.5})], [3, 10]),
    ([("LinearLR", {}), ("MultiStepLR", {"milestones": [2, 6, 6], "gamma": 0.3}),
      ("PolynomialLR", {"total_iters": 8, "power": 1.5})], [4, 12]),
    ([("ConstantLR", {"factor": 0.25, "total_iters": 6}), ("ExponentialLR", {"gamma": 0.95})],
     None),
    ([("LinearLR", {"start_factor": 0.2, "total_iters": 8}),
      ("CosineAnnealingLR", {"T_max": 10})], None),
]


def _compose(module, opt, parts, milestones):
    schedules = [getattr(module, name)(opt, **cfg) for name, cfg in parts]
    if milestones is None:
        return module.ChainedScheduler(schedules)
    return module.SequentialLR(opt, schedules, milestones)


@pytest.mark.parametrize("parts,milestones", COMPOSED, ids=range(len(COMPOSED)))
def test_composed_schedules_set_torchs_learning_rates(parts, milestones):
    """SequentialLR and ChainedScheduler over two parameter groups: PyTorch's lrs to the last
    bit at every step (a schedule taking over at a milestone starts from its closed form, as
    torch's does), and the same after a resume from state_dict."""
    ours, theirs = twin_optimizers()
    mine = _compose(optim.lr_scheduler, ours, parts, milestones)
    ref = _compose(torch.optim.lr_scheduler, theirs, parts, milestones)
    assert mine.get_last_lr() == ref.get_last_lr()
    assert [g["lr"] for g in ours.param_groups] == [g["lr"] for g in theirs.param_groups]
    history = []
    for step in range(25):
        ours.step()
        theirs.step()
        mine.step()
        ref.step()
        assert mine.get_last_lr() == ref.get_last_lr(), step
        assert [g["lr"] for g in ours.param_groups] == [g["lr"] for g in theirs.param_groups]
        history.append(mine.get_last_lr())
        if step == 8:
            saved = pickle.loads(pickle.dumps((ours.state_dict(), mine.state_dict())))
    assert len({lr[0] for lr in history}) >= 5
    again, _ = twin_optimizers()
    resumed = _compose(optim.lr_scheduler, again, parts, milestones)
    again.load_state_dict(saved[0])
    resumed.load_state_dict(saved[1])
    for step in range(9, 25):
        again.step()
        resumed.step()
        assert resumed.get_last_lr() == history[step], step


def test_constant_lr_sets_torchs_learning_rates():
    ours, theirs = twin_optimizers()
    mine = optim.lr_scheduler.ConstantLR(ours, factor=0.3, total_iters=4)
    ref = torch.optim.lr_scheduler.ConstantLR(theirs, factor=0.3, total_iters=4)
    for step in range(8):
        assert mine.get_last_lr() == ref.get_last_lr(), step
        ours.step()
        theirs.step()
        mine.step()
        ref.step()
    assert mine.get_last_lr() == [g["initial_lr"] for g in ours.param_groups]


def test_composed_schedules_raise_as_torch():
    for module in (optim.lr_scheduler, torch.optim.lr_scheduler):
        opt, other = (twin_optimizers()[0], twin_optimizers()[0]) if module is optim.lr_scheduler \
            else (twin_optimizers()[1], twin_optimizers()[1])
        first, second = module.ExponentialLR(opt, 0.9), module.StepLR(opt, 3)
        with pytest.raises(ValueError, match="SequentialLR expects at least one scheduler, but "
                                             "got no scheduler."):
            module.SequentialLR(opt, [], [])
        with pytest.raises(ValueError, match="ChainedScheduler expects at least one scheduler "
                                             "to be chained, but got no scheduler."):
            module.ChainedScheduler([])
        with pytest.raises(ValueError, match="expects number of schedulers provided to be one "
                                             "more than the number of milestone points"):
            module.SequentialLR(opt, [first, second], [2, 5])
        with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
            module.ChainedScheduler([first, module.ReduceLROnPlateau(opt)])
        with pytest.raises(ValueError, match="expects all schedulers to belong to the same "
                                             "optimizer"):
            module.SequentialLR(opt, [first, module.StepLR(other, 3)], [2])
        with pytest.raises(TypeError, match="at index 1 should have `optimizer` as its "
                                            "attribute"):
            module.ChainedScheduler([first, object()])
        with pytest.raises(ValueError, match="Constant multiplicative factor expected to be "
                                             "between 0 and 1."):
            module.ConstantLR(opt, factor=1.5)


def test_one_cycle_resumed_with_last_epoch_goes_on_as_torchs():
    """The optimizer's state loaded first (its groups hold the cycle's bounds), then the
    schedule built with last_epoch: the next lrs and momenta are torch's."""
    cfg = {"max_lr": 0.5, "total_steps": 30, "three_phase": True}
    ours, theirs = twin_optimizers()
    mine = optim.lr_scheduler.OneCycleLR(ours, **cfg)
    ref = torch.optim.lr_scheduler.OneCycleLR(theirs, **cfg)
    for _ in range(10):
        ours.step()
        theirs.step()
        mine.step()
        ref.step()
    again, again_torch = twin_optimizers()
    again.load_state_dict(pickle.loads(pickle.dumps(ours.state_dict())))
    again_torch.load_state_dict(theirs.state_dict())
    mine = optim.lr_scheduler.OneCycleLR(again, last_epoch=10, **cfg)
    ref = torch.optim.lr_scheduler.OneCycleLR(again_torch, last_epoch=10, **cfg)
    assert mine.get_last_lr() == ref.get_last_lr()
    for _ in range(19):  # up to step 30, one past the end of the cycle, as torch allows
        again.step()
        again_torch.step()
        mine.step()
        ref.step()
        assert mine.get_last_lr() == ref.get_last_lr()
        assert _momenta(again) == _momenta(again_torch)
    with pytest.raises(ValueError, match="^Tried to step 31 times. The specified number of "
                                         "total steps is 30$"):
        mine.step()
    with pytest.raises(ValueError, match="Tried to step 31 times"):
        ref.step()


def test_one_cycle_with_a_warm_up_of_no_steps():
    """pct_start * total_steps == 1 leaves the warm-up a single step, where torch divides by
    zero: the lr starts at max_lr, then anneals as torch's from step 1."""
    ours, theirs = twin_optimizers()
    mine = optim.lr_scheduler.OneCycleLR(ours, max_lr=0.5, total_steps=10, pct_start=0.1)
    with pytest.raises(ZeroDivisionError):
        torch.optim.lr_scheduler.OneCycleLR(theirs, max_lr=0.5, total_steps=10, pct_start=0.1)
    assert mine.get_last_lr() == [0.5, 0.5]
    # torch's schedule resumed at step 0 (its groups hold the bounds) takes step 1 at once
    ref = torch.optim.lr_scheduler.OneCycleLR(theirs, max_lr=0.5, total_steps=10, pct_start=0.1,
                                              last_epoch=0)
    mine.step()
    assert mine.get_last_lr() == ref.get_last_lr()
    for _ in range(8):
        ours.step()
        theirs.step()
        mine.step()
        ref.step()
        assert mine.get_last_lr() == ref.get_last_lr()


PLATEAUS = [
    {},
    {"patience": 2, "factor": 0.5, "threshold": 0.01},
    {"mode": "max", "patience": 1, "threshold": 0.05, "cooldown": 2, "factor": 0.8},
    {"patience": 0, "threshold_mode": "abs", "threshold": 0.1, "min_lr": [0.01, 0.001],
     "factor": 0.3},
    {"mode": "max", "threshold_mode": "abs", "threshold": 0.02, "patience": 3, "cooldown": 1,
     "min_lr": 1e-3, "eps": 1e-4, "factor": 0.8},
]


@pytest.mark.parametrize("cfg", PLATEAUS)
def test_reduce_on_plateau_sets_torchs_learning_rates(cfg):
    """A fixed metric sequence (noisy; falling, flat, rising slower than the thresholds
    above, rising fast, flat): torch's lrs at every step, also after a resume from
    state_dict, and torch's state loads."""
    r = rng(95)
    trend = np.concatenate([np.linspace(1.0, 0.5, 15), np.full(20, 0.5), np.linspace(0.5, 0.6, 25),
                            np.linspace(0.6, 1.5, 15), np.full(15, 1.5)])
    metrics = [float(m) for m in trend + 0.003 * r.standard_normal(len(trend))]
    ours, theirs = twin_optimizers()
    mine = optim.lr_scheduler.ReduceLROnPlateau(ours, **cfg)
    ref = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **cfg)
    history = []
    for i, metric in enumerate(metrics):
        mine.step(pyrt.tensor(metric) if i % 2 else metric)  # a number or a tensor
        ref.step(metric)
        assert mine.get_last_lr() == ref.get_last_lr(), i
        assert [g["lr"] for g in ours.param_groups] == mine.get_last_lr()
        history.append(mine.get_last_lr())
        if i == 40:
            saved = pickle.loads(pickle.dumps((ours.state_dict(), mine.state_dict())))
            from_torch = ref.state_dict()
    assert len({lr[0] for lr in history}) >= 3  # the lr came down more than once
    assert sorted(mine.state_dict()) == sorted(ref.state_dict())
    for state in (saved[1], from_torch):
        again, _ = twin_optimizers()
        again.load_state_dict(saved[0])
        resumed = optim.lr_scheduler.ReduceLROnPlateau(again)
        resumed.load_state_dict(state)
        for i in range(41, len(metrics)):
            resumed.step(metrics[i])
            assert resumed.get_last_lr() == history[i], i


def test_reduce_on_plateau_with_a_group_added():
    opt = optim.SGD(make_params(2)[:1], lr=1.0)
    sched = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=0.2)
    opt.add_param_group({"params": make_params(3)[1:], "lr": 0.5})
    sched.step(1.0)
    sched.step(2.0)  # a bad step: both groups come down, the new one to the default minimum
    assert sched.get_last_lr() == [0.2, 0.2]
    per_group = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.1, 0.1])
    opt.add_param_group({"params": make_params(4)[2:], "lr": 0.5})
    per_group.step(1.0)
    with pytest.raises(RuntimeError, match=r"param groups in the `optimizer` \(3\) differs from "
                                           r"when `ReduceLROnPlateau` was initialized \(2\)"):
        per_group.step(2.0)


SCHEDULE_ERRORS = [
    ("LinearLR", {"start_factor": 0.0}, ValueError,
     "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."),
    ("LinearLR", {"start_factor": 1.5}, ValueError, "Starting multiplicative factor"),
    ("LinearLR", {"end_factor": -0.1}, ValueError,
     "Ending multiplicative factor expected to be between 0 and 1."),
    ("LinearLR", {"end_factor": 1.5}, ValueError, "Ending multiplicative factor"),
    ("OneCycleLR", {"max_lr": 0.1}, ValueError,
     "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    ("OneCycleLR", {"max_lr": 0.1, "total_steps": 0}, ValueError,
     "Expected positive integer total_steps, but got 0"),
    ("OneCycleLR", {"max_lr": 0.1, "epochs": 2.5, "steps_per_epoch": 3}, ValueError,
     "Expected positive integer epochs, but got 2.5"),
    ("OneCycleLR", {"max_lr": 0.1, "epochs": 2, "steps_per_epoch": -3}, ValueError,
     "Expected positive integer steps_per_epoch, but got -3"),
    ("OneCycleLR", {"max_lr": 0.1, "total_steps": 10, "pct_start": 1.5}, ValueError,
     "Expected float between 0 and 1 pct_start, but got 1.5"),
    ("OneCycleLR", {"max_lr": 0.1, "total_steps": 10, "anneal_strategy": "exp"}, ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
    ("OneCycleLR", {"max_lr": [0.1, 0.2, 0.3], "total_steps": 10}, ValueError,
     ("max_lr must have the same length as optimizer.param_groups. max_lr has 3 values, "
      "param_groups has 2.")),
    ("ReduceLROnPlateau", {"factor": 1.0}, ValueError, "Factor should be < 1.0."),
    ("ReduceLROnPlateau", {"mode": "least"}, ValueError, "mode least is unknown!"),
    ("ReduceLROnPlateau", {"threshold_mode": "relative"}, ValueError,
     "threshold mode relative is unknown!"),
    ("ReduceLROnPlateau", {"min_lr": [0.1]}, ValueError, "expected 2 min_lrs, got 1"),
]


@pytest.mark.parametrize("name,cfg,error,message", SCHEDULE_ERRORS)
def test_schedules_raise_as_torch(name, cfg, error, message):
    ours, theirs = twin_optimizers()
    with pytest.raises(error, match=re.escape(message)):
        getattr(optim.lr_scheduler, name)(ours, **cfg)
    with pytest.raises(error, match=re.escape(message)):
        getattr(torch.optim.lr_scheduler, name)(theirs, **cfg)


def test_schedules_check_what_torch_leaves_unchecked():
    opt = optim.SGD(make_params(2), lr=0.1)
    with pytest.raises(ValueError, match="total_iters must be an integer >= 0"):
        optim.lr_scheduler.LinearLR(opt, total_iters=-1)
    with pytest.raises(ValueError, match="div_factor must be > 0, got 0"):
        optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=10, div_factor=0)
    with pytest.raises(TypeError, match="max_lr must be a real number, got str"):
        optim.lr_scheduler.OneCycleLR(opt, "0.1", total_steps=10)
    with pytest.raises(ValueError, match="patience must be an integer >= 0"):
        optim.lr_scheduler.ReduceLROnPlateau(opt, patience=-1)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        optim.lr_scheduler.ReduceLROnPlateau([1.0])
    # OneCycleLR's momentum needs an optimizer with one, as torch's
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        optim.lr_scheduler.OneCycleLR(optim.Adagrad(make_params(2)), 0.1, total_steps=10)
    sched = optim.lr_scheduler.ReduceLROnPlateau(opt)
    state = sched.state_dict()
    state["mode"] = "lowest"
    with pytest.raises(ValueError, match="mode lowest is unknown!"):
        sched.load_state_dict(state)
