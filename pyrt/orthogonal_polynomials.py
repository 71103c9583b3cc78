"""The classical orthogonal polynomials of torch.special, f(input, n): Chebyshev of the four
kinds (T, U, V, W) and their shifted forms on [0, 1], Hermite (physicists' H and
probabilists' He), Laguerre L and Legendre P. Either argument may be a number; n is truncated
to an integer, as PyTorch casts it, and a negative n gives 0. Values are scipy.special's
eval_* (in float64, rounded to float32); the result never requires grad, as in PyTorch, which
defines no derivative for them."""

from pyrt.special_functions import binary, special

__all__ = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
]


def _chebyshev_v(n, x):
    # third kind from the second: V_n = U_n - U_(n-1) (U_(-1) = 0)
    return special("eval_chebyu", n, x) - special("eval_chebyu", n - 1, x)


def _chebyshev_w(n, x):
    # fourth kind from the second: W_n = U_n + U_(n-1)
    return special("eval_chebyu", n, x) + special("eval_chebyu", n - 1, x)


def _polynomial(name, evaluate, doc):
    """f(input, n) = evaluate(n, x) for integer n >= 0 (n an int64 array), 0 for n < 0."""
    def function(input, n):
        def value(xp, x, degree):
            k = xp.trunc(degree)
            valid = k >= 0
            k = xp.where(valid, k, 0).astype(xp.int64)
            return xp.where(valid, evaluate(k, x), 0.0)

        return binary(name, input, n, value, numbers_allowed=True)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{doc} of degree n at input. No gradient, as in PyTorch."
    return function


def _scipy(scipy_name):
    return lambda n, x: special(scipy_name, n, x)


def _shifted(evaluate):
    # the shifted polynomial on [0, 1]: the polynomial at 2x - 1
    return lambda n, x: evaluate(n, 2 * x - 1)


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", _scipy("eval_chebyt"),
                                     "The Chebyshev polynomial of the first kind T_n")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", _scipy("eval_chebyu"),
                                     "The Chebyshev polynomial of the second kind U_n")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", _chebyshev_v,
                                     "The Chebyshev polynomial of the third kind V_n")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", _chebyshev_w,
                                     "The Chebyshev polynomial of the fourth kind W_n")
shifted_chebyshev_polynomial_t = _polynomial(
    "shifted_chebyshev_polynomial_t", _scipy("eval_sh_chebyt"),
    "The shifted Chebyshev polynomial of the first kind T_n(2x - 1)")
shifted_chebyshev_polynomial_u = _polynomial(
    "shifted_chebyshev_polynomial_u", _scipy("eval_sh_chebyu"),
    "The shifted Chebyshev polynomial of the second kind U_n(2x - 1)")
shifted_chebyshev_polynomial_v = _polynomial(
    "shifted_chebyshev_polynomial_v", _shifted(_chebyshev_v),
    "The shifted Chebyshev polynomial of the third kind V_n(2x - 1)")
shifted_chebyshev_polynomial_w = _polynomial(
    "shifted_chebyshev_polynomial_w", _shifted(_chebyshev_w),
    "The shifted Chebyshev polynomial of the fourth kind W_n(2x - 1)")
hermite_polynomial_h = _polynomial("hermite_polynomial_h", _scipy("eval_hermite"),
                                   "The physicists' Hermite polynomial H_n")
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _scipy("eval_hermitenorm"),
                                    "The probabilists' Hermite polynomial He_n")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _scipy("eval_laguerre"),
                                    "The Laguerre polynomial L_n")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _scipy("eval_legendre"),
                                    "The Legendre polynomial P_n")
