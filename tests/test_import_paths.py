"""torch's import paths in pyrt: every (path, name) of the table imports from pyrt and, where
torch is installed, exists in torch too; torch's private base classes relate to pyrt's layers
as to torch's; a ported _Loss subclass, _LRScheduler subclass and RemovableHandle behave as
torch's."""

import importlib
import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn.modules

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")

TABLE = [
    ("utils.data.sampler", "RandomSampler"), ("utils.data.sampler", "BatchSampler"),
    ("utils.data.sampler", "Sampler"), ("utils.data.sampler", "WeightedRandomSampler"),
    ("utils.data.dataset", "Dataset"), ("utils.data.dataset", "TensorDataset"),
    ("utils.data.dataset", "random_split"), ("utils.data.dataset", "IterableDataset"),
    ("utils.data.dataloader", "DataLoader"), ("utils.data.dataloader", "get_worker_info"),
    ("utils.data.distributed", "DistributedSampler"),
    ("utils.data._utils.collate", "default_collate"),
    ("utils.data._utils.collate", "default_convert"),
    ("utils.data", "DataLoader"), ("utils.hooks", "RemovableHandle"),
    ("nn.modules", "Linear"), ("nn.modules.module", "Module"), ("nn.modules.linear", "Linear"),
    ("nn.modules.linear", "Identity"), ("nn.modules.conv", "Conv2d"),
    ("nn.modules.conv", "_ConvNd"), ("nn.modules.conv", "_ConvTransposeNd"),
    ("nn.modules.loss", "_Loss"), ("nn.modules.loss", "_WeightedLoss"),
    ("nn.modules.loss", "CrossEntropyLoss"), ("nn.modules.batchnorm", "_BatchNorm"),
    ("nn.modules.batchnorm", "_NormBase"), ("nn.modules.batchnorm", "_LazyNormBase"),
    ("nn.modules.instancenorm", "_InstanceNorm"), ("nn.modules.activation", "ReLU"),
    ("nn.modules.activation", "MultiheadAttention"), ("nn.modules.pooling", "_MaxPoolNd"),
    ("nn.modules.pooling", "_AvgPoolNd"), ("nn.modules.pooling", "_AdaptiveAvgPoolNd"),
    ("nn.modules.pooling", "_AdaptiveMaxPoolNd"), ("nn.modules.pooling", "_LPPoolNd"),
    ("nn.modules.pooling", "_MaxUnpoolNd"), ("nn.modules.dropout", "_DropoutNd"),
    ("nn.modules.dropout", "Dropout"), ("nn.modules.container", "Sequential"),
    ("nn.modules.rnn", "RNNBase"), ("nn.modules.rnn", "LSTM"), ("nn.modules.sparse", "Embedding"),
    ("nn.modules.normalization", "LayerNorm"), ("nn.modules.transformer", "Transformer"),
    ("nn.modules.flatten", "Flatten"), ("nn.modules.padding", "_ReflectionPadNd"),
    ("nn.modules.padding", "_ConstantPadNd"), ("nn.modules.pixelshuffle", "PixelShuffle"),
    ("nn.modules.upsampling", "Upsample"), ("nn.modules.distance", "PairwiseDistance"),
    ("nn.modules.fold", "Fold"), ("nn.modules.channelshuffle", "ChannelShuffle"),
    ("nn.modules.adaptive", "AdaptiveLogSoftmaxWithLoss"), ("nn.modules.linear", "LazyLinear"),
    ("nn.modules.utils", "_pair"), ("nn.modules.utils", "_single"),
    ("nn.modules.utils", "_triple"), ("nn.modules.utils", "_ntuple"),
    ("nn.modules.utils", "consume_prefix_in_state_dict_if_present"),
    ("nn.parameter", "Parameter"), ("nn.parameter", "UninitializedParameter"),
    ("nn.parameter", "UninitializedBuffer"), ("nn.common_types", "_size_2_t"),
    ("nn.common_types", "_ratio_any_t"), ("nn.utils.clip_grad", "clip_grad_norm_"),
    ("nn.utils.clip_grad", "clip_grad_value_"), ("autograd.function", "Function"),
    ("autograd.function", "FunctionCtx"), ("autograd.function", "once_differentiable"),
    ("autograd.grad_mode", "no_grad"), ("autograd.grad_mode", "enable_grad"),
    ("autograd.grad_mode", "set_grad_enabled"), ("autograd.grad_mode", "inference_mode"),
    ("autograd.variable", "Variable"), ("autograd.functional", "jacobian"),
    ("optim.lr_scheduler", "_LRScheduler"), ("types", "Number"), ("types", "_size"),
    ("types", "Device"), ("distributed", "is_available"), ("distributed", "get_rank"),
    ("multiprocessing", "spawn"), ("multiprocessing", "get_context"),
    ("multiprocessing", "set_start_method"), ("multiprocessing", "Queue"),
    ("multiprocessing", "set_sharing_strategy"), ("multiprocessing", "get_all_sharing_strategies"),
    ("nn.init", "kaiming_uniform_"), ("nn.functional", "relu"),
]


@pytest.mark.parametrize("path,name", TABLE)
def test_path_imports_in_pyrt(path, name):
    module = importlib.import_module(f"pyrt.{path}")
    assert hasattr(module, name), f"pyrt.{path} has no {name}"


@needs_torch
@pytest.mark.parametrize("path,name", TABLE)
def test_path_exists_in_torch(path, name):
    assert hasattr(importlib.import_module(f"torch.{path}"), name)


def test_utils_data_names_are_pyrt_data():
    from pyrt.utils.data._utils.collate import default_collate
    from pyrt.utils.data.sampler import RandomSampler
    assert RandomSampler is pyrt.data.RandomSampler
    assert default_collate is pyrt.data.default_collate


# ---- private bases -------------------------------------------------------------------------

BASES = {"loss": ["_Loss", "_WeightedLoss"], "conv": ["_ConvNd", "_ConvTransposeNd"],
         "batchnorm": ["_BatchNorm", "_NormBase", "_LazyNormBase"],
         "instancenorm": ["_InstanceNorm"],
         "pooling": ["_MaxPoolNd", "_AvgPoolNd", "_AdaptiveAvgPoolNd", "_AdaptiveMaxPoolNd",
                     "_LPPoolNd", "_MaxUnpoolNd"],
         "dropout": ["_DropoutNd"], "rnn": ["RNNBase"],
         "padding": ["_ConstantPadNd", "_ReflectionPadNd", "_ReplicationPadNd", "_CircularPadNd"]}
PAIRS = [(sub, base) for sub, names in BASES.items() for base in names]
# the lazy layers are pyrt's _LazyModule until their first call, then their layer's class
LAYERS = sorted(n for n in pyrt.nn.__all__ if inspect.isclass(getattr(pyrt.nn, n))
                and issubclass(getattr(pyrt.nn, n), pyrt.nn.Module) and not n.startswith("Lazy"))


@needs_torch
@pytest.mark.parametrize("sub,base", PAIRS)
def test_subclass_relation_as_torch(sub, base):
    mine = getattr(getattr(pyrt.nn.modules, sub), base)
    theirs = getattr(importlib.import_module(f"torch.nn.modules.{sub}"), base)
    differ = [n for n in LAYERS if hasattr(torch.nn, n)
              and issubclass(getattr(pyrt.nn, n), mine)
              != issubclass(getattr(torch.nn, n), theirs)]
    assert differ == []


def test_isinstance_without_torch():
    M = pyrt.nn.modules
    assert isinstance(pyrt.nn.MSELoss(), M.loss._Loss)
    assert not isinstance(pyrt.nn.MSELoss(), M.loss._WeightedLoss)
    assert isinstance(pyrt.nn.CrossEntropyLoss(), M.loss._WeightedLoss)
    assert isinstance(pyrt.nn.Conv2d(1, 1, 1), M.conv._ConvNd)
    assert isinstance(pyrt.nn.ConvTranspose2d(1, 1, 1), M.conv._ConvTransposeNd)
    assert isinstance(pyrt.nn.BatchNorm2d(3), M.batchnorm._NormBase)
    assert not isinstance(pyrt.nn.GroupNorm(1, 3), M.batchnorm._NormBase)
    assert not isinstance(pyrt.nn.AdaptiveMaxPool1d(2), M.pooling._AdaptiveAvgPoolNd)
    assert isinstance(pyrt.nn.Dropout2d(), M.dropout._DropoutNd)


def test_lazy_layer_takes_its_class_at_first_call():
    conv = pyrt.nn.LazyConv2d(4, 3)
    assert not isinstance(conv, pyrt.nn.modules.conv._ConvNd)
    conv(pyrt.zeros(1, 2, 5, 5))
    assert isinstance(conv, pyrt.nn.modules.conv._ConvNd)


def test_adaptive_max_pools_keep_their_behaviour():
    x = pyrt.tensor(np.arange(8, dtype=np.float32).reshape(1, 2, 4))
    pool = pyrt.nn.AdaptiveMaxPool1d(2, return_indices=True)
    values, indices = pool(x)
    np.testing.assert_array_equal(values.numpy(), [[[1, 3], [5, 7]]])
    np.testing.assert_array_equal(indices.numpy(), [[[1, 3], [1, 3]]])
    assert repr(pool) == "AdaptiveMaxPool1d(output_size=2)"
    assert repr(pyrt.nn.AdaptiveMaxPool3d(2)) == "AdaptiveMaxPool3d(output_size=2)"


# ---- _Loss with torch's legacy arguments ---------------------------------------------------


class MyLoss(pyrt.nn.modules.loss._Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)

    def forward(self, input, target):
        d = (input - target).abs()
        return {"mean": d.mean(), "sum": d.sum(), "none": d}[self.reduction]


FLAGS = [None, True, False]


@pytest.mark.parametrize("size_average", FLAGS)
@pytest.mark.parametrize("reduce", FLAGS)
def test_legacy_reduction_formula(size_average, reduce):
    # torch's _Reduction.legacy_get_string, written out: None counts as True
    sa = True if size_average is None else size_average
    rd = True if reduce is None else reduce
    expected = "mean" if sa and rd else ("sum" if rd else "none")
    if size_average is None and reduce is None:
        assert MyLoss(size_average, reduce).reduction == "mean"
        return
    with pytest.warns(UserWarning, match=f"please use reduction='{expected}' instead"):
        assert MyLoss(size_average, reduce).reduction == expected


@needs_torch
@pytest.mark.parametrize("size_average", FLAGS)
@pytest.mark.parametrize("reduce", FLAGS)
def test_legacy_reduction_as_torch(size_average, reduce):
    class TorchLoss(torch.nn.modules.loss._Loss):
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert MyLoss(size_average, reduce).reduction == TorchLoss(size_average,
                                                                   reduce).reduction


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_legacy_loss_values(n, m, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, n, m)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = MyLoss(reduce=True, size_average=False)
    np.testing.assert_allclose(loss(pyrt.tensor(a), pyrt.tensor(b)).item(),
                               np.abs(a.astype(np.float64) - b).sum(), rtol=1e-5)


def test_weighted_loss_keeps_weight_buffer():
    w = pyrt.ones(3)
    loss = pyrt.nn.modules.loss._WeightedLoss(w, reduction="sum")
    assert loss.weight is w and "weight" in dict(loss.named_buffers())
    assert pyrt.nn.modules.loss._WeightedLoss().weight is None


def test_bad_reduction_refused():
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        MyLoss(reduction="avg")


def test_dropout_base_keeps_p():
    class Drop(pyrt.nn.modules.dropout._DropoutNd):
        def forward(self, x):
            return x

    assert repr(Drop(0.25)) == "Drop(p=0.25, inplace=False)"
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        Drop(1.5)


# ---- _LRScheduler, RemovableHandle ----------------------------------------------------------


def _halving(base, optim_module):
    class Halving(base):
        def get_lr(self):
            return [lr * 0.5 ** self.last_epoch for lr in self.base_lrs]

    return Halving


def _lrs(lib, steps):
    w = lib.nn.Parameter(lib.zeros(2))
    opt = lib.optim.SGD([w], lr=1.0)
    sched = _halving(lib.optim.lr_scheduler._LRScheduler, lib.optim)(opt)
    seen = []
    for _ in range(steps):
        opt.step()
        sched.step()
        seen.append(opt.param_groups[0]["lr"])
    return seen


def test_lr_scheduler_subclass():
    assert issubclass(pyrt.optim.lr_scheduler._LRScheduler, pyrt.optim.lr_scheduler.LRScheduler)
    assert _lrs(pyrt, 4) == [0.5, 0.25, 0.125, 0.0625]


@needs_torch
def test_lr_scheduler_subclass_as_torch():
    assert _lrs(pyrt, 5) == _lrs(torch, 5)


def test_handles_are_removable_handles():
    from pyrt.utils.hooks import RemovableHandle
    m = pyrt.nn.Linear(2, 2)
    t = pyrt.ones(2, requires_grad=True)
    opt = pyrt.optim.SGD(m.parameters(), lr=0.1)
    for handle in (m.register_forward_hook(lambda *a: None), t.register_hook(lambda g: g),
                   opt.register_step_pre_hook(lambda *a: None)):
        assert isinstance(handle, RemovableHandle)
        handle.remove()
    assert not isinstance(object(), RemovableHandle)


def test_removable_handle_of_own_dicts():
    from pyrt.utils.hooks import RemovableHandle
    hooks, extra = {}, {}
    handle = RemovableHandle(hooks, extra_dict=extra)
    hooks[handle.id], extra[handle.id] = "hook", "flag"
    with handle:
        pass
    assert hooks == {} and extra == {}
    handle.remove()  # a second remove does nothing


# ---- the smaller modules ---------------------------------------------------------------------


def test_ntuple_helpers():
    from pyrt.nn.modules.utils import _ntuple, _pair, _reverse_repeat_tuple, _triple
    assert _pair(3) == (3, 3) and _pair((1, 2)) == (1, 2) and _triple(1) == (1, 1, 1)
    assert _ntuple(4)("ab") == ("a", "b") and _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)


def test_consume_prefix():
    from pyrt.nn.modules.utils import consume_prefix_in_state_dict_if_present
    state = {"module.w": 1, "b": 2}
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert state == {"w": 1, "b": 2}


def test_autograd_submodules():
    from pyrt.autograd.function import Function, once_differentiable
    from pyrt.autograd.grad_mode import no_grad

    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            assert not pyrt.is_grad_enabled()
            return g * 2

    x = pyrt.ones(3, requires_grad=True)
    Double.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])
    assert no_grad is pyrt.no_grad


def test_distributed_without_process_group():
    import pyrt.distributed as dist
    assert dist.is_available() is False and dist.is_initialized() is False
    for call in (dist.get_rank, dist.get_world_size, dist.barrier):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()
    with pytest.raises(RuntimeError, match="no distributed backend"):
        dist.init_process_group("gloo")


def test_sharing_strategies():
    import pyrt.multiprocessing as mp
    before = mp.get_sharing_strategy()
    assert before in mp.get_all_sharing_strategies()
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy(before)
    with pytest.raises(ValueError, match="set_sharing_strategy: expected one of"):
        mp.set_sharing_strategy("shm")


@needs_torch
def test_sharing_strategies_as_torch():
    import pyrt.multiprocessing as mp
    assert mp.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()


def _write_square(i, queue):
    queue.put((i, i * i))


def _fail(i):
    if i == 1:
        raise KeyError("boom")


def test_spawn_runs_each_rank():
    import pyrt.multiprocessing as mp
    queue = mp.get_context("fork").SimpleQueue()
    mp.spawn(_write_square, args=(queue,), nprocs=3, start_method="fork")
    assert sorted(queue.get() for _ in range(3)) == [(0, 0), (1, 1), (2, 4)]


def test_spawn_raises_failure():
    import pyrt.multiprocessing as mp
    with pytest.raises(mp.ProcessRaisedException, match="KeyError: 'boom'"):
        mp.spawn(_fail, nprocs=2, start_method="fork")


def test_sdpa_kernel_accepted():
    from pyrt.nn.attention_backends import SDPBackend, sdpa_kernel
    q = pyrt.tensor(np.random.default_rng(0).standard_normal((1, 2, 4)).astype(np.float32))
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        out = pyrt.nn.functional.scaled_dot_product_attention(q, q, q)
    np.testing.assert_allclose(out.numpy(),
                               pyrt.nn.functional.scaled_dot_product_attention(q, q, q).numpy())
    with pytest.raises(TypeError, match="Backend must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass


@needs_torch
def test_sdpa_backend_values_as_torch():
    from torch.nn.attention import SDPBackend as TorchBackend

    from pyrt.nn.attention_backends import SDPBackend
    assert {k: int(v) for k, v in SDPBackend.__members__.items()} == \
        {k: int(v) for k, v in TorchBackend.__members__.items()}


@pytest.mark.skipif(not hasattr(importlib.import_module("pyrt.nn.attention"), "sdpa_kernel"),
                    reason="pyrt.nn.attention does not re-export sdpa_kernel yet")
def test_sdpa_kernel_at_torch_path():
    from pyrt.nn.attention import SDPBackend, sdpa_kernel  # noqa: F401
