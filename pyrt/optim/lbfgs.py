"""L-BFGS (Liu and Nocedal, 1989) as torch.optim.LBFGS: step(closure) runs up to max_iter
iterations, each a quasi-Newton direction from the last history_size pairs of parameter and
gradient changes (the two-loop recursion), then a step along it: lr (the first iteration
scaled by 1 / |g|_1), or with line_search_fn="strong_wolfe" one meeting the strong Wolfe
conditions, found by bracketing and cubic interpolation (Nocedal and Wright, algorithms 3.5
and 3.6). The closure recomputes the loss and its gradients; the loop stops early on a small
gradient, a small step or a small change of the loss.

The parameters are handled as one flat float32 vector, as PyTorch flattens them; the
arithmetic follows PyTorch's order, so that without a line search the iterates agree with its
to float32 rounding. The line search's interpolation runs in float64 (PyTorch's in float32
tensors): it reaches the same minima, but near one, where its tests compare numbers at
float32's resolution, it may take other steps than PyTorch's.
"""

import numpy as np

from pyrt.autograd import enable_grad, mark_modified_all, no_grad
from pyrt.optim.optimizer import Optimizer

__all__ = ["LBFGS"]

F32 = np.float32


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clamped
    to `bounds` (the interval between the points by default); its midpoint if the cubic has
    none."""
    if bounds is not None:
        low, high = bounds
    else:
        low, high = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square >= 0:
        d2 = float(np.sqrt(d2_square))
        if x1 <= x2:
            position = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            position = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(position, low), high)
    return (low + high) / 2.0


def _sufficient_decrease(f_new, f, c1, t, gtd):
    """Whether f_new fails the Armijo condition, f_new > f + c1 t gtd, computed in float32 as
    PyTorch computes it (its slopes are float32 tensors): near a minimum, where c1 t gtd is
    below float32's resolution of f, the two precisions decide differently."""
    return F32(f_new) > F32(f) + F32(c1 * t) * F32(gtd)


def _curvature_met(gtd_new, c2, gtd):
    return abs(F32(gtd_new)) <= F32(-c2) * F32(gtd)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step t along d meeting the strong Wolfe conditions from loss f, gradient g and slope
    gtd: (loss, gradient, t, evaluations). evaluate(t) gives the loss and gradient there."""
    d_norm = float(np.abs(d).max())
    f_new, g_new = evaluate(t)
    evaluations = 1
    gtd_new = float(g_new @ d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    # bracketing: find an interval holding acceptable steps
    while ls_iter < max_ls:
        if _sufficient_decrease(f_new, f, c1, t, gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if _curvature_met(gtd_new, c2, gtd):
            bracket, bracket_f, bracket_g, bracket_gtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # extrapolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        previous = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = previous, f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(t)
        evaluations += 1
        gtd_new = float(g_new @ d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
        bracket_gtd = [gtd, gtd_new]
    # zoom: shrink the bracket until a step meets the conditions
    insufficient_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        # a point too close to the bracket's ends makes little progress: move it inwards
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new = evaluate(t)
        evaluations += 1
        gtd_new = float(g_new @ d)
        ls_iter += 1
        if _sufficient_decrease(f_new, f, c1, t, gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if _curvature_met(gtd_new, c2, gtd):
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], evaluations


class LBFGS(Optimizer):
    """torch.optim.LBFGS: one parameter group; step(closure) is required."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        for value, name in ((max_iter, "max_iter"), (max_eval, "max_eval"),
                            (history_size, "history_size")):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return np.concatenate([
            np.zeros(p._data.size, F32) if p._grad is None else
            np.asarray(p._grad._data, F32).reshape(-1) for p in self._params])

    def _add(self, step, direction):
        """The parameters moved by step * direction (a flat vector), in place."""
        offset = 0
        for p in self._params:
            n = p._data.size
            p._data += (F32(step) * direction[offset:offset + n]).reshape(p._data.shape)
            offset += n
        mark_modified_all(p._data for p in self._params)

    def _values(self):
        return [p._data.copy() for p in self._params]

    def _restore(self, values):
        for p, v in zip(self._params, values):
            p._data[...] = v
        mark_modified_all(p._data for p in self._params)

    def step(self, closure):
        """Run up to max_iter iterations; `closure` zeroes the gradients, computes the loss,
        calls backward() and returns the loss. Returns the loss before the first iteration."""
        if closure is None:
            raise RuntimeError("LBFGS requires a closure that recomputes the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search_fn = group["history_size"], group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        with no_grad():
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                # the direction: the gradient's, through the inverse Hessian estimate
                if state["n_iter"] == 1:
                    d = -flat_grad
                    old_dirs, old_stps, ro = [], [], []
                    h_diag = F32(1)
                else:
                    y = flat_grad - prev_flat_grad
                    s = d * F32(t)
                    ys = F32(y @ s)
                    if ys > 1e-10:
                        if len(old_dirs) == history_size:
                            old_dirs.pop(0)
                            old_stps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(F32(1.0) / ys)
                        h_diag = ys / F32(y @ y)
                    al = [None] * len(old_dirs)
                    q = -flat_grad
                    for i in range(len(old_dirs) - 1, -1, -1):
                        al[i] = F32(old_stps[i] @ q) * ro[i]
                        q = q - al[i] * old_dirs[i]
                    d = r = q * h_diag
                    for i in range(len(old_dirs)):
                        be_i = F32(old_dirs[i] @ r) * ro[i]
                        r += old_stps[i] * (al[i] - be_i)
                prev_flat_grad = flat_grad.copy()
                prev_loss = loss
                # the step length
                if state["n_iter"] == 1:
                    t = min(1.0, float(F32(1.0) / F32(np.abs(flat_grad).sum()))) * lr
                else:
                    t = lr
                gtd = float(F32(flat_grad @ d))
                if gtd > -tolerance_change:  # not a descent direction
                    break
                evals = 0
                if line_search_fn is None:
                    self._add(t, d)
                    if n_iter != max_iter:
                        with enable_grad():
                            loss = float(closure())
                        flat_grad = self._flat_grad()
                        evals = 1
                else:
                    start = self._values()

                    def evaluate(step, start=start, direction=d):
                        self._add(step, direction)
                        with enable_grad():
                            value = float(closure())
                        grad = self._flat_grad()
                        self._restore(start)
                        return value, grad

                    loss, flat_grad, t, evals = _strong_wolfe(evaluate, t, d, loss, flat_grad,
                                                              gtd)
                    self._add(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                current_evals += evals
                state["func_evals"] += evals
                if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                    break
                if np.abs(d * F32(t)).max() <= tolerance_change:
                    break
                if abs(loss - prev_loss) < tolerance_change:
                    break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
