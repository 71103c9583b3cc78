"""The connectionist temporal classification loss (Graves et al., ICML 2006) with PyTorch's
arguments, values and gradients: ctc_loss(log_probs, targets, input_lengths, target_lengths,
blank=0, reduction="mean", zero_infinity=False).

A target y_1..y_S is read from T frames of class log-probabilities lp[t, c] through every
alignment of the extended target l' = (blank, y_1, blank, y_2, ..., y_S, blank), 2S + 1
states: at each frame an alignment stays on its state, steps to the next one, or skips a blank
between two different labels. In log space, alpha[t, s] (the alignments of frames 0..t ending
in state s) is

    alpha[t, s] = lp[t, l'_s] + logsumexp(alpha[t-1, s], alpha[t-1, s-1],
                                           alpha[t-1, s-2] if l'_s != blank and != l'_{s-2}),

from alpha[0, 0] = lp[0, blank] and alpha[0, 1] = lp[0, y_1]; the loss is -log p with
p = exp(alpha[T-1, 2S]) + exp(alpha[T-1, 2S-1]). beta runs the same recursion backwards from the
last frame. alpha[t, s] + beta[t, s] - lp[t, l'_s] is the log-probability of the alignments that
pass through state s at frame t, and the gradient PyTorch returns for lp[t, c] is

    exp(lp[t, c]) - exp(logsumexp_{s : l'_s = c}(alpha[t, s] + beta[t, s]) + loss - lp[t, c]),

the gradient for the logits when lp is log_softmax of them (the first term is what
log_softmax's own backward then takes away). Frames past a sample's input length get none.
"mean" divides each sample's loss by its target length (at least 1), then averages over the
batch; zero_infinity makes an impossible alignment's infinite loss, and its gradient, 0.

The recursions run over the batch and the states at once, frame by frame, in float64.
"""

import numbers

import numpy as np

from pyrt.functional import _check_reduction, _make, _tensor, _xp
from pyrt.ops._checks import F32

__all__ = ["ctc_loss"]

_NEG = -np.inf


def _lengths(value, n, name):
    """input_lengths or target_lengths as int64 [n] on the host."""
    if isinstance(value, _tensor()):
        value = value._data
        if not isinstance(value, np.ndarray):
            value = value.get()
    array = np.asarray(value)
    if array.dtype.kind not in "iu" or array.shape not in ((n,), ()) or (n != 1 and
                                                                          array.ndim == 0):
        raise ValueError(f"ctc_loss: {name} must hold one integer per sample ({n}), got "
                         f"{array.dtype} of shape {array.shape}")
    return np.broadcast_to(array, (n,)).astype(np.int64)


def _targets(targets, target_lengths, n):
    """The label sequences: a list of n int64 arrays, from targets [n, S] (padded) or the
    sequences concatenated [sum(target_lengths)]."""
    t = targets._data if isinstance(targets, _tensor()) else np.asarray(targets)
    if not isinstance(t, np.ndarray):
        t = t.get()
    if t.dtype.kind not in "iu":
        raise TypeError(f"ctc_loss: targets must hold integer class indices, got {t.dtype}")
    if t.ndim == 2:
        if t.shape[0] != n:
            raise ValueError(f"ctc_loss: targets [N, S] must have N = {n} rows, got "
                             f"{t.shape}")
        if (target_lengths > t.shape[1]).any():
            raise RuntimeError(f"ctc_loss: a target length exceeds the targets' width "
                               f"{t.shape[1]}")
        return [t[i, :target_lengths[i]].astype(np.int64) for i in range(n)]
    if t.ndim == 1:
        ends = np.cumsum(target_lengths)
        if ends[-1] != t.shape[0]:
            raise RuntimeError(f"ctc_loss: concatenated targets hold {t.shape[0]} labels, the "
                               f"target lengths add up to {int(ends[-1])}")
        return [t[e - k:e].astype(np.int64) for e, k in zip(ends, target_lengths)]
    raise ValueError(f"ctc_loss: targets must be [N, S] or 1-D (concatenated), got shape "
                     f"{t.shape}")


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The CTC loss of log_probs [T, N, C] (log_softmax over C; or [T, C] for one sample)
    against targets (see the module docstring)."""
    _check_reduction(reduction)
    Tensor = _tensor()
    if not isinstance(log_probs, Tensor):
        raise TypeError(f"ctc_loss(): argument 'log_probs' must be a Tensor, got "
                        f"{type(log_probs).__name__}")
    if log_probs._data.dtype != F32:
        raise TypeError(f"ctc_loss: log_probs must be a float32 tensor, got "
                        f"{log_probs.dtype}")
    unbatched = log_probs.ndim == 2
    if log_probs.ndim not in (2, 3):
        raise ValueError(f"ctc_loss: log_probs must be [T, N, C] (or [T, C]), got shape "
                         f"{list(log_probs.shape)}")
    xp = _xp(log_probs._data)
    lp_all = log_probs._data.astype(np.float64)
    if xp is not np:
        lp_all = lp_all.get()
    if unbatched:
        lp_all = lp_all[:, None, :]
    t_max, n, c = lp_all.shape
    if isinstance(blank, bool) or not isinstance(blank, numbers.Integral) or not 0 <= blank < c:
        raise ValueError(f"ctc_loss: blank must be a class index in [0, {c}), got {blank!r}")
    in_len = _lengths(input_lengths, n, "input_lengths")
    tg_len = _lengths(target_lengths, n, "target_lengths")
    if unbatched and isinstance(targets, Tensor) and targets.ndim == 1:
        targets = targets.reshape(1, -1)
    if (in_len > t_max).any() or (in_len < 0).any():
        raise RuntimeError(f"ctc_loss: input_lengths must be in [0, {t_max}], got "
                           f"{in_len.tolist()}")
    if (tg_len < 0).any():
        raise RuntimeError(f"ctc_loss: target_lengths must be >= 0, got {tg_len.tolist()}")
    labels = _targets(targets, tg_len, n)
    for y in labels:
        if ((y < 0) | (y >= c) | (y == blank)).any():
            raise ValueError(f"ctc_loss: targets must be class indices in [0, {c}) other than "
                             f"the blank {blank}, got {y.tolist()}")

    # the extended targets, blank-padded to the longest: states [n, L]
    width = 2 * max((len(y) for y in labels), default=0) + 1
    ext = np.full((n, width), blank, np.int64)
    for i, y in enumerate(labels):
        ext[i, 1:2 * len(y):2] = y
    states = 2 * tg_len + 1
    valid = np.arange(width)[None, :] < states[:, None]
    skip = np.zeros((n, width), bool)  # s may come from s - 2
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    rows = np.arange(n)[:, None]

    def emit(t):  # lp[t, n, l'_s] for every state, -inf past a sample's states
        return np.where(valid, lp_all[t][rows, ext], _NEG)

    alpha = np.full((t_max, n, width), _NEG)
    beta = np.full((t_max, n, width), _NEG)
    if t_max:
        first = emit(0)
        alpha[0, :, :2] = first[:, :2]
    with np.errstate(invalid="ignore"):
        for t in range(1, t_max):
            prev = alpha[t - 1]
            step = np.logaddexp(prev, np.pad(prev, ((0, 0), (1, 0)),
                                             constant_values=_NEG)[:, :-1])
            hop = np.where(skip, np.pad(prev, ((0, 0), (2, 0)),
                                        constant_values=_NEG)[:, :-2], _NEG)
            alpha[t] = np.where((t < in_len)[:, None], np.logaddexp(step, hop) + emit(t), _NEG)
        # beta from each sample's last frame
        last = np.where(in_len > 0, in_len - 1, 0)
        ends = np.zeros((n, width), bool)
        ends[np.arange(n), states - 1] = True
        ends[np.arange(n), np.maximum(states - 2, 0)] = True
        for t in range(t_max - 1, -1, -1):
            start = (t == last) & (in_len > 0)
            nxt = beta[t + 1] if t + 1 < t_max else np.full((n, width), _NEG)
            step = np.logaddexp(nxt, np.pad(nxt, ((0, 0), (0, 1)),
                                            constant_values=_NEG)[:, 1:])
            skip_next = np.pad(skip, ((0, 0), (0, 2)))[:, 2:]  # s + 2 may come from s
            hop = np.where(skip_next, np.pad(nxt, ((0, 0), (0, 2)),
                                             constant_values=_NEG)[:, 2:], _NEG)
            inner = np.where((t < last)[:, None], np.logaddexp(step, hop), _NEG)
            seed = np.where(start[:, None] & ends, 0.0, _NEG)
            beta[t] = np.logaddexp(inner, seed) + emit(t)
            beta[t] = np.where((t <= last)[:, None] & (in_len > 0)[:, None], beta[t], _NEG)
    final = alpha[last, np.arange(n)] if t_max else np.full((n, width), _NEG)
    ends_alpha = np.where(ends, final, _NEG) if t_max else final
    log_p = np.logaddexp.reduce(ends_alpha, axis=1)
    # an empty input reads an empty target only
    log_p = np.where(in_len == 0, np.where(tg_len == 0, 0.0, _NEG), log_p)
    nll = -log_p
    infinite = ~np.isfinite(nll)
    if zero_infinity:
        nll = np.where(infinite, 0.0, nll)

    if reduction == "none":
        loss = nll
    elif reduction == "sum":
        loss = nll.sum()
    else:
        loss = (nll / np.maximum(tg_len, 1)).mean() if n else np.nan
    out = np.asarray(loss, F32).reshape(() if reduction != "none" or unbatched else (n,))
    if reduction == "none" and unbatched:
        out = out.reshape(())

    def backward(g):
        g = np.asarray(g if xp is np else g.get(), np.float64)
        if reduction == "none":
            per = g.reshape(n)
        elif reduction == "sum":
            per = np.full(n, float(g))
        else:
            per = float(g) / np.maximum(tg_len, 1) / max(n, 1)
        grad = np.zeros((t_max, n, c))
        with np.errstate(invalid="ignore", over="ignore"):
            for i in range(n):
                frames = in_len[i]
                if frames == 0 or (infinite[i] and zero_infinity):
                    continue
                ab = alpha[:frames, i, :states[i]] + beta[:frames, i, :states[i]]
                lcab = np.full((frames, c), _NEG)
                for s in range(states[i]):
                    lcab[:, ext[i, s]] = np.logaddexp(lcab[:, ext[i, s]], ab[:, s])
                lp = lp_all[:frames, i]
                grad[:frames, i] = (np.exp(lp) - np.exp(lcab + nll[i] - lp)) * per[i]
        grad = grad.astype(F32)
        if unbatched:
            grad = grad[:, 0]
        return (xp.asarray(grad),)

    return _make(xp.asarray(out), (log_probs,), backward)
