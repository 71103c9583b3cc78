"""The CUDA backend against the CPU backend: every op within float tolerance, gradients
through models, Module.to round trips, training, CUDA-graph replay, and the absence of
device-to-host copies inside training steps. Skipped without a GPU."""

import warnings

import numpy as np
import pytest

import pyrt
from pyrt import cuda, nn, ops, optim

if not cuda.is_available():
    pytest.skip(f"no CUDA device: {cuda._probe()[1]}", allow_module_level=True)

import cupy

cuda.require()
RTOL, ATOL = 1e-4, 1e-5


def rng(seed=0):
    return np.random.default_rng(seed)


def f32(*shape, seed=0):
    return rng(seed).standard_normal(shape).astype(np.float32)


def close(dev, host, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(cupy.asnumpy(dev), host, rtol=rtol, atol=atol)


def g(a):
    return cupy.asarray(a)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((4, 5), (4, 1)),
                                    ((3, 1, 5), (4, 1))])
def test_binary(name, shapes):
    a, b = f32(*shapes[0]), f32(*shapes[1], seed=1) + 3.0
    close(getattr(ops, name)(g(a), g(b)), getattr(ops, name)(a, b))
    close(getattr(ops, name)(g(a), 2.5), getattr(ops, name)(a, 2.5))
    close(getattr(ops, name)(2.5, g(b)), getattr(ops, name)(2.5, b))


@pytest.mark.parametrize("name", ["neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu"])
def test_unary_and_backward(name):
    x = np.abs(f32(7, 9)) + 0.1 if name in ("log", "sqrt") else f32(7, 9) * 3
    close(getattr(ops, name)(g(x)), getattr(ops, name)(x))
    if name != "neg":
        saved = x if name in ("relu", "log") else getattr(ops, name)(x)
        grad = f32(7, 9, seed=2)
        bw = getattr(ops, name + "_backward")
        close(bw(g(grad), g(saved)), bw(grad, saved))


@pytest.mark.parametrize("act", [None, "relu", "sigmoid", "tanh"])
def test_bias_act(act):
    x, b = f32(33, 17), f32(17, seed=1)
    close(ops.bias_act(g(x), g(b), act), ops.bias_act(x, b, act))


@pytest.mark.parametrize("shape", [(1, 1), (64, 10), (256, 128), (3, 1000), (50176, 8),
                                   (12544, 16), (7, 300), (1000, 257), (5000, 300),
                                   (3001, 1000), (40000, 3), (5, 7), (16, 12), (4000, 12)])
def test_bias_grad(shape):
    """Shapes for every path: one slice and several, narrow rows (float32 and float4, an odd
    number of column groups a block among them) and wide ones."""
    x, y = f32(*shape), f32(*shape, seed=1)
    # back to back on one stream, no sync between: the second launch reuses the workspace
    # and needs the tickets the first one reset
    first, second = ops.bias_grad(g(x)), ops.bias_grad(g(y))
    close(first, ops.bias_grad(x), rtol=1e-4, atol=1e-3)
    close(second, ops.bias_grad(y), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (3, 5, 7, 9), (64, 8, 28, 28),
                                   (256, 16, 14, 14), (2, 3, 300, 301)])
def test_bias_grad_planes(shape):
    from pyrt.cuda.ops.elementwise import bias_grad_planes

    x, y = f32(*shape), f32(*shape, seed=1)
    first, second = bias_grad_planes(g(x)), bias_grad_planes(g(y))
    for dev, host in ((first, x), (second, y)):
        close(dev, host.sum(axis=(0, 2, 3), dtype=np.float64), rtol=1e-4, atol=1e-3)


def _offset(a):
    """A C-contiguous device copy of `a` that starts 4 bytes into its allocation, so that it
    cannot be read as float4."""
    flat = cupy.empty(a.size + 1, np.float32)
    view = flat[1:].reshape(a.shape)
    view[...] = g(a)
    assert view.flags.c_contiguous and view.data.ptr % 16 != 0
    return view


@pytest.mark.parametrize("shape", [(50176, 8), (256, 128), (64, 8, 28, 28)])
def test_bias_grad_of_an_unaligned_view_matches_the_aligned_one(shape):
    """A gradient 16-byte aligned goes through the float4 kernels, one that is not through
    the scalar ones: both must give the sums (the same arithmetic grouped differently)."""
    from pyrt.cuda.ops.elementwise import bias_grad_planes

    x = f32(*shape)
    reduce = bias_grad_planes if len(shape) == 4 else ops.bias_grad
    want = x.sum(axis=(0, 2, 3) if len(shape) == 4 else 0, dtype=np.float64)
    close(reduce(g(x)), want, rtol=1e-4, atol=1e-3)
    close(reduce(_offset(x)), want, rtol=1e-4, atol=1e-3)


def test_reductions_and_softmax():
    x = f32(6, 7, 8)
    for axis in (None, 0, 1, -1, (0, 2)):
        close(ops.sum(g(x), axis), ops.sum(x, axis), atol=1e-4)
        close(ops.mean(g(x), axis), ops.mean(x, axis))
        close(ops.max(g(x), axis), ops.max(x, axis))
    for axis in (None, 1):
        np.testing.assert_array_equal(cupy.asnumpy(ops.argmax(g(x), axis)), ops.argmax(x, axis))
    for axis in (-1, 0, 1):
        close(ops.softmax(g(x), axis), ops.softmax(x, axis))
        close(ops.log_softmax(g(x), axis), ops.log_softmax(x, axis))


@pytest.mark.parametrize("n,c", [(1, 1), (64, 10), (1000, 10), (5, 100)])
def test_cross_entropy_fused(n, c):
    z = f32(n, c)
    labels = rng(1).integers(0, c, n)
    loss, grad = ops.cross_entropy(g(z), g(labels), return_grad=True)
    ref_loss, ref_grad = ops.cross_entropy(z, labels, return_grad=True)
    close(loss, ref_loss)
    close(grad, ref_grad)
    assert isinstance(loss, cupy.ndarray) and loss.shape == ()
    close(ops.cross_entropy(g(z), g(labels)), ref_loss)


def test_cross_entropy_label_out_of_range_is_nan():
    z, labels = f32(4, 3), np.array([0, 1, 3, 2])
    assert np.isnan(float(ops.cross_entropy(g(z), g(labels)).get()))
    # its gradient row too, so that training cannot step on as if it were right
    _, grad = ops.cross_entropy(g(z), g(labels), return_grad=True)
    grad = grad.get()
    assert np.isnan(grad[2]).all() and np.isfinite(grad[[0, 1, 3]]).all()


@pytest.mark.parametrize("name", ["CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "MSELoss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_reductions_match_cpu(name, reduction):
    z = f32(12, 5) * 4
    target = (rng(1).integers(0, 5, 12) if name in ("CrossEntropyLoss", "NLLLoss")
              else rng(1).random((12, 5)).astype(np.float32))
    grads, losses = [], []
    for device in ("cpu", "cuda"):
        x = pyrt.tensor(z, requires_grad=True, device=device)
        loss = getattr(nn, name)(reduction=reduction)(x, pyrt.tensor(target, device=device))
        loss.backward(pyrt.tensor(f32(*loss.shape, seed=2), device=device))
        losses.append(loss._data)
        grads.append(x.grad._data)
    close(losses[1], losses[0])
    close(grads[1], grads[0])


@pytest.mark.parametrize("settings", [
    dict(), dict(ignore_index=2), dict(label_smoothing=0.2), dict(weight=True),
    dict(weight=True, ignore_index=-100, label_smoothing=0.1, reduction="sum"),
    dict(reduction="none", ignore_index=0)])
@pytest.mark.parametrize("shape", [(12, 5), (5,), (3, 5, 2, 2)])
def test_class_losses_match_cpu(settings, shape):
    """weight, ignore_index (also in the fused kernel: the -100 labels below), smoothing and
    [C] / [N, C, d1, ...] inputs, as on the CPU."""
    z = f32(*shape) * 4
    positions = shape[:1] + shape[2:] if len(shape) > 1 else ()
    labels = rng(1).integers(0, 5, positions)
    labels = np.where(rng(3).random(positions) < 0.3, settings.get("ignore_index", -100), labels)
    results = []
    for device in ("cpu", "cuda"):
        kwargs = dict(settings)
        if kwargs.pop("weight", False):
            kwargs["weight"] = pyrt.tensor(rng(4).random(5).astype(np.float32) + 0.5,
                                           device=device)
        for op in ("cross_entropy", "nll_loss"):
            if op == "nll_loss":
                kwargs.pop("label_smoothing", None)
            x = pyrt.tensor(z, requires_grad=True, device=device)
            scores = x if op == "cross_entropy" else pyrt.nn.functional.log_softmax(
                x, 0 if len(shape) == 1 else 1)
            loss = getattr(pyrt.nn.functional, op)(scores, pyrt.tensor(labels, device=device),
                                                   **kwargs)
            loss.sum().backward()
            results.append((loss._data, x.grad._data))
    for (dev_loss, dev_grad), (loss, grad) in zip(results[2:], results[:2]):
        close(dev_loss, loss)
        close(dev_grad, grad)


def test_fused_cross_entropy_skips_ignored_rows():
    """The fused kernel's mean is over the rows not labelled ignore_index, whose gradient rows
    are 0; with every row ignored the loss is nan and the gradient 0, as on the CPU."""
    z = f32(64, 10)
    labels = rng(1).integers(0, 10, 64)
    labels[::3] = -100
    for ignored in (labels, np.full(64, -100)):
        x = pyrt.tensor(z, requires_grad=True, device="cuda")
        loss = nn.CrossEntropyLoss()(x, pyrt.tensor(ignored, device="cuda"))
        loss.backward()
        ref = pyrt.tensor(z, requires_grad=True)
        ref_loss = nn.CrossEntropyLoss()(ref, pyrt.tensor(ignored))
        ref_loss.backward()
        np.testing.assert_allclose(float(loss._data.get()), float(ref_loss._data), rtol=RTOL)
        close(x.grad._data, ref.grad._data)


def test_where_var_and_nll_rows_match_cpu():
    c, a, b = f32(4, 5) > 0, f32(4, 5, seed=1), f32(5, seed=2)
    results = []
    for device in ("cpu", "cuda"):
        x = pyrt.tensor(a, requires_grad=True, device=device)
        y = pyrt.tensor(b, requires_grad=True, device=device)
        out = pyrt.where(pyrt.tensor(c, device=device), x, y)
        spread = x.std(1) + y.var()
        (out * out).sum().backward()
        spread.sum().backward()
        results.append([out._data, spread._data, x.grad._data, y.grad._data])
    for dev, host in zip(*results[::-1]):
        close(dev, host)
    x = pyrt.tensor(f32(3, 4), requires_grad=True, device="cuda")
    labels = pyrt.tensor(np.array([0, 4, 1]), device="cuda")
    loss = nn.NLLLoss(reduction="none")(x, labels)
    loss.sum().backward()
    assert np.isnan(loss._data.get()[1]) and np.isnan(x.grad._data.get()[1]).all()


def test_save_and_load_across_devices(tmp_path):
    w = pyrt.tensor(f32(2, 3), requires_grad=True, device="cuda")
    pyrt.save({"w": w}, tmp_path / "w")
    on_cpu = pyrt.load(tmp_path / "w")["w"]
    on_gpu = pyrt.load(tmp_path / "w", map_location="cuda")["w"]
    assert on_cpu.device == "cpu" and on_gpu.device == "cuda:0" and on_gpu.requires_grad
    np.testing.assert_array_equal(on_cpu.detach().numpy(), w._data.get())
    np.testing.assert_array_equal(on_gpu._data.get(), w._data.get())


def test_cross_entropy_rows_out_of_range_are_nan():
    x = pyrt.tensor(f32(4, 3), requires_grad=True, device="cuda")
    labels = pyrt.tensor(np.array([0, 1, 3, 2]), device="cuda")
    loss = nn.CrossEntropyLoss(reduction="none")(x, labels)
    loss.sum().backward()
    assert np.isnan(loss._data.get()[2]) and np.isfinite(loss._data.get()[[0, 1, 3]]).all()
    assert np.isnan(x.grad._data.get()[2]).all()


def test_optimizer_refuses_a_parameter_that_is_not_c_contiguous():
    p = pyrt.tensor(f32(3, 4), requires_grad=True, device="cuda")
    p._data = cupy.asfortranarray(p._data)
    p.grad = pyrt.tensor(f32(3, 4, seed=1), device="cuda")
    with pytest.raises(ValueError, match="param must be C-contiguous"):
        optim.SGD([p], lr=0.1).step()


def test_bce_with_logits_fused():
    z, t = f32(32, 1), (rng(1).random((32, 1)) > 0.5).astype(np.float32)
    loss, grad = ops.binary_cross_entropy_with_logits(g(z), g(t), return_grad=True)
    ref_loss, ref_grad = ops.binary_cross_entropy_with_logits(z, t, return_grad=True)
    close(loss, ref_loss)
    close(grad, ref_grad)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(ta, tb):
    a = f32(*((9, 5) if ta else (5, 9)))
    b = f32(*((7, 9) if tb else (9, 7)), seed=1)
    close(ops.matmul(g(a), g(b), trans_a=ta, trans_b=tb),
          ops.matmul(a, b, trans_a=ta, trans_b=tb), atol=1e-4)


def _check_product(product, m, n, k, ta, tb):
    """product(a, b) and product(a, b, out=c, alpha=0.5, beta=-2) against float64 NumPy, a and
    b given as transposed views where ta / tb; returns the operands and the expected product."""
    a, b = f32(m, k), f32(k, n, seed=1)
    da = g(np.ascontiguousarray(a.T)).T if ta else g(a)
    db = g(np.ascontiguousarray(b.T)).T if tb else g(b)
    expect = a.astype(np.float64) @ b.astype(np.float64)
    close(product(da, db), expect, rtol=1e-4, atol=1e-4)
    c = f32(m, n, seed=2)
    out = g(c)
    assert product(da, db, out=out, alpha=0.5, beta=-2.0) is out
    close(out, 0.5 * expect - 2.0 * c, rtol=1e-4, atol=1e-4)
    return da, db, expect


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (64, 128, 784), (65, 63, 17), (3, 200, 1),
                                   (130, 10, 129), (5, 7, 0)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_gemm_kernel_matches_numpy(m, n, k, ta, tb):
    # the kernel a captured graph runs in place of cuBLAS, on transposed views as well
    from pyrt.cuda.ops.gemm import gemm

    _check_product(gemm, m, n, k, ta, tb)


def test_gemm_kernel_batches_broadcast_like_matmul():
    from pyrt.cuda.ops.gemm import gemm, matmul

    a, b = f32(3, 1, 5, 7), f32(2, 7, 4, seed=1)
    close(gemm(g(a), g(b)), np.matmul(a, b), rtol=1e-4, atol=1e-5)
    # the convolution's layouts: grouped filters over a batch of images, and the transpose
    w, cols = f32(2, 4, 6), f32(3, 2, 6, 9, seed=1)
    close(gemm(g(w), g(cols)), np.matmul(w, cols), rtol=1e-4, atol=1e-5)
    gy = f32(3, 2, 4, 9, seed=2)
    close(gemm(g(gy), g(cols).transpose(0, 1, 3, 2)), np.matmul(gy, cols.transpose(0, 1, 3, 2)),
          rtol=1e-4, atol=1e-5)
    close(gemm(g(w).transpose(0, 2, 1), g(gy)), np.matmul(w.transpose(0, 2, 1), gy),
          rtol=1e-4, atol=1e-5)
    out = cupy.empty((3, 2, 4, 9), np.float32)
    assert matmul(g(w), g(cols), out=out) is out  # cuBLAS outside a capture
    close(out, np.matmul(w, cols), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="do not match"):
        gemm(g(a), g(a))


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (64, 128, 784), (65, 63, 17), (3, 200, 1),
                                   (5, 7, 0)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_by_cublas_matches_numpy(m, n, k, ta, tb):
    # eager products call cublasSgemmStridedBatched directly: row-major operands, transposed
    # views and alpha/beta mapped onto its column-major arguments
    from pyrt.cuda.ops import gemm
    from pyrt.cuda.ops.gemm import matmul

    assert gemm._sgemm_strided_batched is not None  # not every product through cupy.matmul
    da, db, expect = _check_product(matmul, m, n, k, ta, tb)
    # an output whose rows are not contiguous goes through a contiguous copy
    wide = cupy.zeros((m, 2 * n), np.float32)
    assert matmul(da, db, out=wide[:, ::2]) is not None
    close(wide[:, ::2], expect, rtol=1e-4, atol=1e-4)
    close(wide[:, 1::2], np.zeros((m, n)))


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 1, 5, 7), (2, 7, 4)),       # broadcast over both batch dims
    ((2, 4, 6), (3, 2, 6, 9)),       # grouped filters over a batch: a call per group
    ((1, 4, 6), (5, 1, 6, 9)),       # one group: one call over the batch, a's stride 0
    ((4, 6, 8), (8, 3)),             # a batch times one matrix
    ((6, 8), (2, 3, 8, 5)),
])
def test_matmul_by_cublas_batches_broadcast_like_numpy(a_shape, b_shape):
    from pyrt.cuda.ops.gemm import matmul

    a, b = f32(*a_shape), f32(*b_shape, seed=1)
    close(matmul(g(a), g(b)), np.matmul(a, b), rtol=1e-4, atol=1e-5)
    close(matmul(g(a), g(b), alpha=-1.5), -1.5 * np.matmul(a, b), rtol=1e-4, atol=1e-5)
    # transposed views of the batched operands
    at = g(np.ascontiguousarray(np.swapaxes(a, -1, -2))).swapaxes(-1, -2)
    close(matmul(at, g(b)), np.matmul(a, b), rtol=1e-4, atol=1e-5)
    # what cuBLAS does not take (a vector) still goes to cupy.matmul, errors included
    v = f32(a.shape[-1], seed=2)
    close(matmul(g(a), g(v)), np.matmul(a, v), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        matmul(g(a), g(a))


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 0, 1, 1), (1, 1, 1, 1), (2, 1, 1, 1), ((2, 1), (0, 1), 1, 1), (1, 2, 2, 1),
    ((2, 1), 1, (1, 3), 1), (1, 1, 1, 2), (1, 1, 2, 4)])
def test_conv2d_forward_backward(stride, padding, dilation, groups):
    opts = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    x, w, b = f32(3, 4, 9, 8), f32(8, 4 // groups, 3, 3, seed=1), f32(8, seed=2)
    y = ops.conv2d(x, w, b, **opts)
    close(ops.conv2d(g(x), g(w), g(b), **opts), y, atol=1e-4)
    gy = f32(*y.shape, seed=3)
    dev = ops.conv2d_backward(g(x), g(w), g(gy), **opts)
    ref = ops.conv2d_backward(x, w, gy, **opts)
    for d, r in zip(dev, ref):
        close(d, r, atol=1e-3)


@pytest.mark.parametrize("stride,padding,dilation,groups", [
    (1, 1, 1, 1), ((2, 1), 1, (1, 3), 1), (1, 1, 2, 4)])
def test_conv2d_kept_columns_give_the_same_results(stride, padding, dilation, groups):
    from pyrt.cuda.ops import conv as cuda_conv

    opts = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    x, w, b = g(f32(3, 4, 9, 8)), g(f32(8, 4 // groups, 3, 3, seed=1)), g(f32(8, seed=2))
    y, cols = cuda_conv.conv2d_keeping_columns(x, w, b, **opts)
    assert cols is not None and cols.shape[0] == 3
    np.testing.assert_array_equal(cupy.asnumpy(y), cupy.asnumpy(ops.conv2d(x, w, b, **opts)))
    gy = g(f32(*y.shape, seed=3))
    kept = cuda_conv.conv2d_backward(x, w, gy, columns=cols, **opts)
    made = cuda_conv.conv2d_backward(x, w, gy, **opts)
    for k, m in zip(kept, made):
        np.testing.assert_array_equal(cupy.asnumpy(k), cupy.asnumpy(m))
    assert kept[1].shape == w.shape and kept[1].base is None  # an array of its own
    with pytest.raises(ValueError, match="columns"):
        cuda_conv.conv2d_backward(x, w, gy, columns=cols[:, :-1], **opts)


def test_conv2d_keeps_columns_up_to_its_limit(monkeypatch):
    from pyrt.cuda.ops import conv as cuda_conv

    x, w = g(f32(2, 3, 8, 8)), g(f32(4, 3, 3, 3, seed=1))
    cols_bytes = 2 * 27 * 36 * 4
    monkeypatch.setattr(cuda_conv, "KEEP_COLUMNS_BYTES", cols_bytes)
    assert cuda_conv.conv2d_keeping_columns(x, w)[1] is not None
    monkeypatch.setattr(cuda_conv, "KEEP_COLUMNS_BYTES", cols_bytes - 1)
    y, cols = cuda_conv.conv2d_keeping_columns(x, w)
    assert cols is None
    np.testing.assert_array_equal(cupy.asnumpy(y), cupy.asnumpy(ops.conv2d(x, w)))


@pytest.mark.parametrize("input_grad", [False, True])
def test_conv2d_layer_makes_its_columns_once_a_step(monkeypatch, input_grad):
    """Autograd's conv2d hands the forward's column matrix to the weight gradient, and the
    weight's .grad is the kernel's own array (no copy of a view)."""
    from pyrt.cuda.ops import conv as cuda_conv

    made = []
    im2col = cuda_conv._im2col
    monkeypatch.setattr(cuda_conv, "_im2col", lambda *a: made.append(1) or im2col(*a))
    pyrt.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=1).to("cuda")
    x = pyrt.tensor(f32(2, 3, 8, 8), requires_grad=input_grad, device="cuda")
    conv(x).sum().backward()
    assert len(made) == 1
    assert conv.weight.grad._data.base is None
    pyrt.manual_seed(0)
    host = nn.Conv2d(3, 4, 3, padding=1)
    xh = pyrt.tensor(f32(2, 3, 8, 8), requires_grad=input_grad)
    host(xh).sum().backward()
    close(conv.weight.grad._data, host.weight.grad.numpy(), atol=1e-4)
    if input_grad:
        close(x.grad._data, xh.grad.numpy(), atol=1e-4)


@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 1, 1), (3, 2, 1)])
@pytest.mark.parametrize("ceil,include", [(False, True), (True, True), (True, False)])
def test_pools(k, s, p, ceil, include):
    x = f32(2, 3, 9, 10)
    avg = dict(ceil_mode=ceil, count_include_pad=include)
    y, idx = ops.max_pool2d(x, k, s, p, ceil_mode=ceil, return_indices=True)
    yd, idxd = ops.max_pool2d(g(x), k, s, p, ceil_mode=ceil, return_indices=True)
    close(yd, y)
    np.testing.assert_array_equal(cupy.asnumpy(idxd), idx)
    gy = f32(*y.shape, seed=1)
    close(ops.max_pool2d_backward(g(gy), idxd, x.shape, k, s, p, ceil_mode=ceil),
          ops.max_pool2d_backward(gy, idx, x.shape, k, s, p, ceil_mode=ceil))
    close(ops.avg_pool2d(g(x), k, s, p, **avg), ops.avg_pool2d(x, k, s, p, **avg))
    close(ops.avg_pool2d_backward(g(gy), x.shape, k, s, p, **avg),
          ops.avg_pool2d_backward(gy, x.shape, k, s, p, **avg))


@pytest.mark.parametrize("k,s,p,d,ceil", [(3, 1, 1, 2, False), (2, 2, 0, 3, True),
                                          ((3, 2), (2, 1), 1, (2, 3), False)])
def test_dilated_max_pool(k, s, p, d, ceil):
    x = f32(2, 3, 11, 10)
    y, idx = ops.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)
    yd, idxd = ops.max_pool2d(g(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    close(yd, y)
    np.testing.assert_array_equal(cupy.asnumpy(idxd), idx)
    gy = f32(*y.shape, seed=1)
    close(ops.max_pool2d_backward(g(gy), idxd, x.shape, k, s, p, d, ceil_mode=ceil),
          ops.max_pool2d_backward(gy, idx, x.shape, k, s, p, d, ceil_mode=ceil))


def test_max_pool_nan_wins_as_on_cpu():
    x = f32(1, 2, 4, 4)
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = x[0, 1, 3, 3] = np.nan  # two nans in one window
    y, idx = ops.max_pool2d(x, 2, return_indices=True)
    yd, idxd = ops.max_pool2d(g(x), 2, return_indices=True)
    np.testing.assert_array_equal(cupy.asnumpy(yd), y)
    np.testing.assert_array_equal(cupy.asnumpy(idxd), idx)


@pytest.mark.parametrize("momentum,nesterov,wd,damp", [(0, False, 0, 0), (0.9, False, 1e-2, 0.1),
                                                       (0.9, True, 1e-2, 0)])
def test_sgd_step(momentum, nesterov, wd, damp):
    p, grad, buf = f32(300, 7), f32(300, 7, seed=1), f32(300, 7, seed=2)
    pd, bd = g(p), g(buf)
    for first in (True, False):
        kw = {"lr": 0.1, "momentum": momentum, "dampening": damp, "weight_decay": wd,
              "nesterov": nesterov, "first_step": first}
        ops.sgd_step(p, grad, buf if momentum else None, **kw)
        ops.sgd_step(pd, g(grad), bd if momentum else None, **kw)
        close(pd, p)


def test_adam_step():
    p, grad = f32(5000), f32(5000, seed=1)
    m, v = np.zeros_like(p), np.zeros_like(p)
    pd, md, vd = g(p), g(m), g(v)
    for step in (1, 2, 3):
        ops.adam_step(p, grad, m, v, step=step, lr=1e-2, weight_decay=0.1)
        ops.adam_step(pd, g(grad), md, vd, step=step, lr=1e-2, weight_decay=0.1)
        close(pd, p, atol=1e-5)


def test_errors_match_cpu():
    with pytest.raises(TypeError, match="float32"):
        ops.add(g(np.ones(3)), g(np.ones(3)))
    with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
        ops.add(g(np.ones(3, np.float32)), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="bias must have shape"):
        ops.bias_act(g(f32(2, 3)), g(f32(4)))


@pytest.mark.parametrize("cls,kw", [
    (optim.SGD, {"lr": 0.1}), (optim.SGD, {"lr": 0.1, "momentum": 0.9, "dampening": 0.3}),
    (optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-2}),
    (optim.Adam, {"lr": 1e-2, "weight_decay": 0.1}),
    (optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1})])
def test_optimizer_many_parameters_matches_cpu(cls, kw):
    # more parameters than one launch takes, sizes off the chunk boundaries, an empty one
    sizes = [5000, 1, 0, 2048, 2049, 7] * 4
    values = [f32(n, seed=i) for i, n in enumerate(sizes)]
    results = []
    for device in ("cpu", "cuda"):
        params = [pyrt.tensor(v, requires_grad=True, device=device) for v in values]
        opt = cls(params, **kw)
        for step in range(3):
            for i, p in enumerate(params):
                p.grad = pyrt.tensor(f32(sizes[i], seed=100 * step + i), device=device)
            opt.step()
        results.append([p.detach().cpu().numpy() for p in params])
    for d, h in zip(results[1], results[0]):
        np.testing.assert_allclose(d, h, rtol=1e-5, atol=1e-6)


def _models():
    pyrt.manual_seed(0)
    from pyrt.cli.models import cnn, mlp

    return [(mlp(), f32(8, 1, 28, 28)), (cnn(), f32(8, 1, 28, 28))]


@pytest.mark.parametrize("which", [0, 1])
def test_model_gradients_match_cpu(which):
    model, x = _models()[which]
    labels = rng(1).integers(0, 10, len(x))
    crit = nn.CrossEntropyLoss()
    loss = crit(model(pyrt.tensor(x)), pyrt.tensor(labels))
    loss.backward()
    host_grads = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model.to("cuda")
    loss_d = crit(model(pyrt.tensor(x, device="cuda")), pyrt.tensor(labels, device="cuda"))
    loss_d.backward()
    close(loss_d._data, loss.detach().numpy())
    for p, h in zip(model.parameters(), host_grads):
        assert p.device == "cuda:0"
        close(p.grad._data, h, atol=1e-4)


def test_module_to_round_trip_keeps_parameter_identity():
    model, _ = _models()[0]
    before = [p for p in model.parameters()]
    values = [p.detach().numpy().copy() for p in before]
    model.to("cuda")
    assert [id(p) for p in model.parameters()] == [id(p) for p in before]
    assert all(p.device == "cuda:0" for p in model.parameters())
    with pytest.raises(TypeError, match=r"Tensor\.cpu\(\) to copy"):
        before[0].detach().numpy()
    model.cpu()
    for p, v in zip(model.parameters(), values):
        np.testing.assert_array_equal(p.detach().numpy(), v)


def test_module_to_moves_buffers():
    model = nn.Sequential(nn.Linear(3, 2))
    model[0].register_buffer("offset", pyrt.tensor([1.0, 2.0]))
    model.to("cuda")
    assert model[0].offset.device == "cuda:0"
    assert np.array_equal(model.state_dict()["0.offset"], [1.0, 2.0])
    model.cpu()
    assert model[0].offset.device == "cpu"


def test_item_assignment_on_the_device():
    t = pyrt.zeros(3, 4, device="cuda")
    t[1] = pyrt.tensor(np.arange(4, dtype=np.float32), device="cuda")
    t[pyrt.tensor([0, 2], device="cuda"), 0] = 5.0
    np.testing.assert_array_equal(t._data.get()[:, 0], [5.0, 0.0, 5.0])
    assert t._data.get()[1, 3] == 3.0
    with pytest.raises(RuntimeError, match="same device"):
        t[0] = pyrt.ones(4)


def test_dropout_draws_the_cpu_mask():
    x = f32(64, 33)
    outs = []
    for device in ("cpu", "cuda"):
        pyrt.manual_seed(9)
        t = pyrt.tensor(x, requires_grad=True, device=device)
        y = nn.Dropout(0.3)(t)
        y.sum().backward()
        outs.append((y._data, t.grad._data))
    close(outs[1][0], outs[0][0])
    close(outs[1][1], outs[0][1])


def test_clip_grad_norm_on_the_device_matches_cpu():
    grads = [f32(4, 5, seed=3) * 3, f32(7, seed=4)]
    totals, clipped = [], []
    for device in ("cpu", "cuda"):
        params = [pyrt.tensor(np.zeros_like(g), requires_grad=True, device=device)
                  for g in grads]
        for p, gr in zip(params, grads):
            p.grad = pyrt.tensor(gr, device=device)
        totals.append(nn.utils.clip_grad_norm_(params, 1.0)._data)
        clipped.append([p.grad._data for p in params])
    close(totals[1], totals[0])
    for d, h in zip(*clipped[::-1]):
        close(d, h)


@pytest.mark.parametrize("options", [
    {"padding": 1, "groups": 3}, {"padding": "same", "dilation": 2},
    {"padding": "same", "kernel_size": 4, "padding_mode": "reflect"},
    {"padding": (1, 2), "padding_mode": "circular", "groups": 6},
    {"padding": 2, "padding_mode": "replicate", "dilation": (2, 1)}])
def test_conv2d_options_match_cpu(options):
    """Groups, dilations, string paddings and padding modes (F.pad on the device)."""
    options = dict(options)
    kernel = options.pop("kernel_size", 3)
    x, grads = f32(2, 6, 9, 9), []
    for device in ("cpu", "cuda"):
        pyrt.manual_seed(4)
        conv = nn.Conv2d(6, 6, kernel, **options).to(device)
        t = pyrt.tensor(x, requires_grad=True, device=device)
        y = conv(t)
        (y * y).sum().backward()
        grads.append((y._data, t.grad._data, conv.weight.grad._data, conv.bias.grad._data))
    for d, h in zip(grads[1], grads[0]):
        close(d, h, atol=1e-3)


@pytest.mark.parametrize("layer,shape", [("BatchNorm1d", (16, 5)), ("BatchNorm1d", (8, 4, 7)),
                                         ("BatchNorm2d", (6, 3, 9, 8))])
def test_batch_norm_matches_cpu(layer, shape):
    """Training steps (outputs, all gradients, running statistics) and evaluation."""
    x, results = f32(*shape), []
    for device in ("cpu", "cuda"):
        pyrt.manual_seed(0)
        bn = getattr(nn, layer)(shape[1]).to(device)
        for step in range(3):
            t = pyrt.tensor(x * (step + 1) + step, requires_grad=True, device=device)
            y = bn(t)
            (y * y).sum().backward()
        ye = bn.eval()(pyrt.tensor(x, device=device))
        results.append((y._data, t.grad._data, bn.weight.grad._data, bn.bias.grad._data,
                        bn.running_mean._data, bn.running_var._data, ye._data))
    for d, h in zip(results[1], results[0]):
        close(d, h, atol=1e-4)


def test_tensor_device_api():
    t = pyrt.tensor([1.0, 2.0], device="cuda")
    assert t.device == "cuda:0" and "device='cuda:0'" in repr(t)
    assert t.cpu().device == "cpu" and t.cpu().to("cuda").device == "cuda:0"
    assert pyrt.zeros(3).cuda().device == "cuda:0"
    with pytest.raises(RuntimeError, match="cuda:0 and cpu"):
        t + pyrt.tensor([1.0, 2.0])


def _xor_run(device, steps, optimizer_cls=optim.SGD, **kw):
    from pyrt.cli.models import xor_net
    from pyrt.data import make_xor

    pyrt.manual_seed(0)
    model = xor_net().to(device)
    opt = optimizer_cls(model.parameters(), **kw)
    x, y = make_xor(32 * steps, seed=0)
    crit = nn.BCEWithLogitsLoss()
    for i in range(steps):
        xb = pyrt.tensor(x[32 * i:32 * i + 32], device=device)
        yb = pyrt.tensor(y[32 * i:32 * i + 32], device=device)
        loss = crit(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [p.detach().cpu().numpy() for p in model.parameters()]


@pytest.mark.parametrize("cls,kw", [(optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                                    (optim.Adam, {"lr": 1e-2})])
def test_xor_training_matches_cpu(cls, kw):
    for d, h in zip(_xor_run("cuda", 20, cls, **kw), _xor_run("cpu", 20, cls, **kw)):
        np.testing.assert_allclose(d, h, rtol=1e-3, atol=1e-4)


def _mnist_batches(n, batch=32):
    r = rng(5)
    return [(pyrt.tensor(r.standard_normal((batch, 1, 28, 28)).astype(np.float32)),
             pyrt.tensor(r.integers(0, 10, batch))) for _ in range(n)]


def _mlp_stepper(captured, which="mlp"):
    """(model, optimizer, step) for the MLP (or the CNN) on the GPU, its step captured or
    eager."""
    from pyrt.cli.models import cnn, mlp, train_step
    from pyrt.cuda.graph import CapturedStep

    pyrt.manual_seed(0)
    model = (mlp if which == "mlp" else cnn)().to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    if captured:
        return model, opt, CapturedStep(model, crit, opt)
    return model, opt, lambda x, y: train_step(model, crit, opt, x, y, "cuda")


def _own_products(monkeypatch):
    """Every product through pyrt's GEMM kernel, as inside a capture, also in eager steps:
    eager and captured steps then do the same arithmetic (cuBLAS's rounding differs, and
    over a few steps of training a max-pool tie that falls the other way makes the runs
    part by more than any fixed tolerance)."""
    from pyrt.cuda.ops import gemm

    monkeypatch.setattr(gemm, "capturing", lambda: True)


@pytest.mark.parametrize("which", ["mlp", "cnn"])
def test_graph_replay_equals_eager(which, monkeypatch):
    # a partial batch between replays, and every loss kept on the device until the end: a
    # replay must neither overwrite the eager step's arrays nor run unordered with the reads
    _own_products(monkeypatch)
    full = _mnist_batches(8)
    batches = full[:5] + [(pyrt.tensor(f32(7, 1, 28, 28)),
                           pyrt.tensor(rng(2).integers(0, 10, 7)))] + full[5:]
    results = []
    for captured in (False, True):
        model, _, step = _mlp_stepper(captured, which)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a failed capture warns: here it must not
            losses = [step(x, y) for x, y in batches]
        if captured:
            assert step.graph is not None and step.failed is None
        grads = [p.grad.cpu().numpy() for p in model.parameters()]
        results.append(([v.item() for v in losses],
                        [p.detach().cpu().numpy() for p in model.parameters()], grads))
    eager, replayed = results
    assert len(set(eager[0])) == len(batches)  # the losses differ from step to step
    np.testing.assert_allclose(replayed[0], eager[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(replayed[1] + replayed[2], eager[1] + eager[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_graph_takes_device_batches_and_follows_lr_changes(monkeypatch):
    # batches already on the GPU, and a learning rate lowered after the graph was captured:
    # the replays must use the new rate, as the eager steps do
    _own_products(monkeypatch)
    batches = [(x.to("cuda"), y.to("cuda")) for x, y in _mnist_batches(6)]
    results = []
    for captured in (False, True):
        model, opt, step = _mlp_stepper(captured)
        for i, (x, y) in enumerate(batches):
            if i == 4:
                opt.param_groups[0]["lr"] = 0.01
            step(x, y)
        results.append([p.detach().cpu().numpy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class _TransferCounter:
    """Counts device-to-host reads: ndarray.get, cupy.asnumpy, and item(), float(), int(),
    bool() and tolist() of device arrays."""

    def __init__(self, monkeypatch):
        self.count = 0
        for owner, name in ((cupy.ndarray, "get"), (cupy, "asnumpy"), (cupy.ndarray, "item"),
                            (cupy.ndarray, "__float__"), (cupy.ndarray, "__int__"),
                            (cupy.ndarray, "__bool__"), (cupy.ndarray, "tolist")):
            original = getattr(owner, name)

            def counted(*a, _original=original, **k):
                self.count += 1
                return _original(*a, **k)

            monkeypatch.setattr(owner, name, counted)


def _cli_step(graph):
    """The MLP's training step on the GPU as the CLI builds it, eager or captured."""
    from pyrt.cli.models import mlp
    from pyrt.cli.options import step_function

    class Args:
        device, cuda_graph = "cuda", graph

    pyrt.manual_seed(0)
    model = mlp().to("cuda")
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return step_function(Args, model, nn.CrossEntropyLoss(), opt)


@pytest.mark.parametrize("graph", [False, True])
def test_no_device_to_host_transfers_inside_steps(monkeypatch, graph):
    from pyrt.cli.options import mean_loss

    step = _cli_step(graph)
    batches = _mnist_batches(12)
    for x, y in batches[:4]:  # warm-up (and capture) outside the count
        step(x, y)
    counter = _TransferCounter(monkeypatch)
    losses = []
    for x, y in batches[4:]:
        losses.append(step(x, y))
        assert counter.count == 0
    value = mean_loss(losses)  # the logging point: one read
    assert counter.count == 1 and np.isfinite(value)


_SPIN = r"""
extern "C" __global__ void spin(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
"""


@pytest.mark.parametrize("graph", [False, True])
@pytest.mark.parametrize("on_device", [False, True])
def test_training_steps_never_wait_for_the_gpu(graph, on_device):
    # Whatever the path a read or a synchronisation would take (the counter above sees only
    # the Python methods it patches), it makes the host wait for the GPU. A kernel that spins
    # for a second is queued first; steps that never wait enqueue their work and return
    # long before it ends.
    import time

    step = _cli_step(graph)
    batches = _mnist_batches(10)
    if on_device:
        batches = [(x.to("cuda"), y.to("cuda")) for x, y in batches]
    for x, y in batches[:4]:  # warm-up and capture
        step(x, y)
    spin = cupy.RawKernel(_SPIN, "spin")
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    spin((1,), (1,), (np.uint64(1_000_000_000),))
    losses = [step(x, y) for x, y in batches[4:]]
    queued = time.perf_counter() - start
    cupy.cuda.Device().synchronize()
    done = time.perf_counter() - start
    assert done > 0.9  # the spin ran ahead of the steps
    assert queued < 0.5 * done, f"the steps waited for the GPU: {queued:.2f} s of {done:.2f}"
    assert all(np.isfinite(v.item()) for v in losses)


def test_failed_capture_warns_once_and_trains_eagerly(monkeypatch):
    from pyrt.cuda.graph import CapturedStep

    batches = _mnist_batches(6)
    model, opt, _ = _mlp_stepper(False)
    step = CapturedStep(model, nn.CrossEntropyLoss(), opt)
    tries = []

    def fail(x, y):
        tries.append(1)
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(step, "_capture", fail)
    with pytest.warns(RuntimeWarning, match="capture of the training step failed"):
        for x, y in batches:
            step(x, y)
    assert len(tries) == 1  # not tried again on every step
    eager_model, _, eager = _mlp_stepper(False)
    for x, y in batches:
        eager(x, y)
    for a, b in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_optimizer_owns_its_device_tables():
    import gc
    import weakref

    model, opt, step = _mlp_stepper(False)
    for x, y in _mnist_batches(3):
        step(x, y)
    assert opt._device_tables  # built once, reused by later steps
    tables = next(iter(opt._device_tables.values()))
    assert len(opt._device_tables) <= 2  # the first step's list, and the later steps' one
    ref = weakref.ref(tables)
    del model, opt, step, tables
    gc.collect()
    assert ref() is None  # the tables (and the parameters they hold) went with the optimizer


def test_evaluate_matches_cpu():
    from pyrt.cli.models import mlp
    from pyrt.cli.train_mnist import evaluate

    pyrt.manual_seed(0)
    model = mlp()
    images = f32(2500, 1, 28, 28, seed=3)
    labels = rng(4).integers(0, 10, 2500)
    on_cpu = evaluate(model, images, labels, "cpu")
    # a class whose two logits differ by rounding alone may go either way
    assert abs(evaluate(model.to("cuda"), images, labels, "cuda") - on_cpu) <= 2 / 2500
