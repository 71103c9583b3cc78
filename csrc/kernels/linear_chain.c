/*
 * linear_chain.c - a chain of fully connected layers, forward and backward, in one call each.
 *
 * A small network is a few GEMMs of a few hundred flops each: what it costs is the fixed price
 * of every call from Python, not the arithmetic. Running the whole chain from one C call pays
 * that price once per direction instead of two to four times per layer. The steps are the
 * same kernels, in the same order, that the layers would run one by one (pyrt_sgemm, then
 * pyrt_bias_act; pyrt_unary_backward, two GEMMs and pyrt_bias_grad backwards), so the numbers
 * are bitwise those of the unfused layers, and large layers keep their parallel kernels.
 *
 * Layout shared with the caller: the forward writes the outputs a_1 .. a_L one after another
 * into `out`; the backward writes, for each layer in order, dweight then dbias (when the layer
 * has a bias) into `grads`.
 */
#include <stddef.h>
#include <stdint.h>

#include "pyrt.h"

#define MAX_LAYERS 256 /* bounds the per-layer offsets kept on the stack */

static int is_chain_act(int act)
{
    return act == PYRT_IDENTITY || act == PYRT_RELU || act == PYRT_SIGMOID || act == PYRT_TANH;
}

static int check_chain(int64_t layers, const int64_t *dims, int64_t batch,
                       const float *const *weights, const int *acts, const float *x)
{
    if (layers < 1 || layers > MAX_LAYERS || batch < 0 || !dims || !weights || !acts ||
        (batch > 0 && !x))
        return PYRT_EINVAL;
    for (int64_t l = 0; l <= layers; l++)
        if (dims[l] < 1)
            return PYRT_EINVAL;
    for (int64_t l = 0; l < layers; l++)
        if (!weights[l] || !is_chain_act(acts[l]))
            return PYRT_EINVAL;
    return PYRT_OK;
}

int pyrt_linear_chain_forward(int64_t layers, const int64_t *dims, int64_t batch,
                              const float *const *weights, const float *const *biases,
                              const int *acts, const float *x, float *out)
{
    int rc = check_chain(layers, dims, batch, weights, acts, x);
    if (rc)
        return rc;
    if (batch == 0)
        return PYRT_OK;
    if (!out)
        return PYRT_EINVAL;
    const float *in = x;
    for (int64_t l = 0; l < layers; l++) {
        int64_t k = dims[l], n = dims[l + 1];
        /* a_{l+1} = a_l @ W_l^T: [batch, k] x [k, n], W_l stored [n, k] */
        rc = pyrt_sgemm(0, 1, batch, n, k, 1.0f, in, k, weights[l], k, 0.0f, out, n);
        if (rc)
            return rc;
        const float *bias = biases ? biases[l] : NULL;
        if (bias || acts[l] != PYRT_IDENTITY) {
            rc = pyrt_bias_act(out, bias, out, batch, n, acts[l]);
            if (rc)
                return rc;
        }
        in = out;
        out += batch * n;
    }
    return PYRT_OK;
}

int pyrt_linear_chain_backward(int64_t layers, const int64_t *dims, int64_t batch,
                               const float *const *weights, const float *const *biases,
                               const int *acts, const int *needs, const float *x,
                               const float *out, const float *dy, float *grads, float *dx)
{
    int rc = check_chain(layers, dims, batch, weights, acts, x);
    if (rc)
        return rc;
    if (!needs || (batch > 0 && (!out || !dy)) || !grads)
        return PYRT_EINVAL;

    /* where the output of layer l (a_{l+1}) starts in `out`, and its gradients in `grads` */
    int64_t out_at[layers + 1], grad_at[layers + 1], widest = 0;
    out_at[0] = grad_at[0] = 0;
    for (int64_t l = 0; l < layers; l++) {
        int64_t n = dims[l + 1];
        out_at[l + 1] = out_at[l] + batch * n;
        grad_at[l + 1] = grad_at[l] + n * dims[l] + (biases && biases[l] ? n : 0);
        if (n > widest)
            widest = n;
    }
    /* the gradient flows down to the lowest layer that wants one, or to x */
    int64_t lowest = dx ? 0 : layers;
    for (int64_t l = 0; l < layers && lowest == layers; l++)
        if (needs[l])
            lowest = l;
    if (lowest == layers)
        return PYRT_OK;
    if (batch == 0) {  /* sums over no rows: zero gradients */
        for (int64_t i = 0; i < grad_at[layers]; i++)
            grads[i] = 0.0f;
        return PYRT_OK;
    }

    /* two scratch buffers, each one layer's [batch, n] gradient: a layer reads its output
     * gradient from one and writes its input gradient to the other */
    float *work = pyrt_buffer_alloc((size_t)(2 * batch * widest) * sizeof *work);
    if (!work)
        return PYRT_ENOMEM;
    float *scratch[2] = {work, work + batch * widest};
    const float *g = dy;
    for (int64_t l = layers - 1; l >= lowest && rc == 0; l--) {
        int64_t k = dims[l], n = dims[l + 1];
        float *here = scratch[l & 1], *below = scratch[(l & 1) ^ 1];
        /* gradient before the activation; relu reads the output (y > 0 exactly when x > 0),
         * sigmoid and tanh their output */
        const float *gp = g;
        if (acts[l] != PYRT_IDENTITY) {
            rc = pyrt_unary_backward(acts[l], g, out + out_at[l], here, batch * n);
            gp = here;
        }
        const float *in = l == 0 ? x : out + out_at[l - 1];
        float *dw = grads + grad_at[l];
        /* dW_l = gp^T @ a_l: [n, batch] x [batch, k] */
        if (rc == 0 && (needs[l] & 1))
            rc = pyrt_sgemm(1, 0, n, k, batch, 1.0f, gp, n, in, k, 0.0f, dw, k);
        if (rc == 0 && (needs[l] & 2) && biases && biases[l])
            rc = pyrt_bias_grad(gp, dw + n * k, batch, n);
        /* d a_l = gp @ W_l: [batch, n] x [n, k] */
        if (rc == 0 && l > lowest)
            rc = pyrt_sgemm(0, 0, batch, k, n, 1.0f, gp, n, weights[l], k, 0.0f, below, k);
        else if (rc == 0 && l == 0 && dx)
            rc = pyrt_sgemm(0, 0, batch, k, n, 1.0f, gp, n, weights[l], k, 0.0f, dx, k);
        g = below;
    }
    pyrt_buffer_free(work);
    return rc;
}
