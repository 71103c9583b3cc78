"""What text programs written for PyTorch need from pyrt: softmax's `dtype`, StepLR's whole
float step_size, clip_grad_norm_'s "inf", nn.Embedding.from_pretrained; then, end to end,
cut-down versions of a word-level LSTM language model, a Transformer language model with a
causal mask, a char-RNN sampled with multinomial and temperature, and a GRU encoder-decoder
with attention over packed sequences, each trained a few steps.

Without PyTorch: values written out in NumPy (float64), learning-rate sequences in closed
form, losses that fall from about log(vocabulary). With PyTorch: the same calls give the same
values."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyrt
import pyrt.nn as nn
import pyrt.nn.functional as F

try:  # the reference for the comparisons marked needs_torch
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
shapes = st.lists(st.integers(1, 5), min_size=1, max_size=3)


def normal(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def np_log_softmax(x, axis):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


# ---- softmax(dim, dtype=...) ----------------------------------------------------------------

@SETTINGS
@given(shape=shapes, seed=st.integers(0, 99), data=st.data())
def test_softmax_dtype_float32_matches_numpy(shape, seed, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = normal(shape, seed)
    ref = np_log_softmax(x, dim)
    t = pyrt.tensor(x, requires_grad=True)
    out = t.log_softmax(dim, dtype=pyrt.float32)
    np.testing.assert_allclose(out.data, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.softmax(t, dim=dim, dtype=pyrt.float32).data, np.exp(ref),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pyrt.softmax(t, dim, dtype=pyrt.float32).data, np.exp(ref),
                               rtol=1e-5, atol=1e-6)
    # d/dx sum(w * log_softmax(x)) = w - softmax(x) * sum(w)
    w = normal(shape, seed + 1)
    (out * pyrt.tensor(w)).sum().backward()
    expected = w - np.exp(ref) * w.sum(axis=dim, keepdims=True)
    np.testing.assert_allclose(t.grad.data, expected, rtol=1e-4, atol=1e-5)


def test_softmax_dtype_converts_an_integer_input():
    x = pyrt.tensor([[1, 2, 3]])
    out = x.softmax(-1, dtype=pyrt.float32)
    assert out.dtype == pyrt.float32
    np.testing.assert_allclose(out.data, np.exp(np_log_softmax(np.array([[1, 2, 3]]), -1)),
                               rtol=1e-6)


def test_softmax_dtype_refuses_what_pyrt_lacks():
    x = pyrt.ones(2, 3)
    for dtype in (pyrt.int64, "float64", np.float64):
        with pytest.raises(TypeError, match="dtype must be None or pyrt.float32"):
            x.softmax(1, dtype=dtype)
        with pytest.raises(TypeError, match="dtype must be None or pyrt.float32"):
            F.log_softmax(x, 1, dtype=dtype)


@needs_torch
@SETTINGS
@given(shape=shapes, seed=st.integers(0, 99))
def test_softmax_dtype_matches_torch(shape, seed):
    x = normal(shape, seed)
    for name in ("softmax", "log_softmax"):
        got = getattr(pyrt.tensor(x), name)(0, dtype=pyrt.float32).data
        want = getattr(torch.tensor(x), name)(0, dtype=torch.float32).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ---- StepLR(step_size=1.0), as the Transformer tutorial writes it ----------------------------

def step_lrs(optim, step_size, gamma, n):
    p = optim.nn.Parameter(optim.ones(2)) if optim is pyrt else torch.nn.Parameter(
        torch.ones(2))
    opt = optim.optim.SGD([p], lr=5.0)
    sched = optim.optim.lr_scheduler.StepLR(opt, step_size, gamma=gamma)
    lrs = []
    for _ in range(n):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    return lrs


@pytest.mark.parametrize("step_size", [1.0, 3.0, 2])
def test_steplr_takes_a_whole_float_step_size(step_size):
    want = [5.0 * 0.95 ** ((k + 1) // int(step_size)) for k in range(7)]
    np.testing.assert_allclose(step_lrs(pyrt, step_size, 0.95, 7), want, rtol=1e-12)


def test_steplr_refuses_a_fractional_or_small_step_size():
    opt = pyrt.optim.SGD([nn.Parameter(pyrt.ones(1))], lr=1.0)
    for bad in (0.0, 0, 1.5, True):
        with pytest.raises(ValueError, match="step_size must be an integer >= 1"):
            pyrt.optim.lr_scheduler.StepLR(opt, bad)


@needs_torch
def test_steplr_float_step_size_matches_torch():
    np.testing.assert_allclose(step_lrs(pyrt, 2.0, 0.5, 6), step_lrs(torch, 2.0, 0.5, 6),
                               rtol=1e-12)


# ---- clip_grad_norm_(norm_type="inf") --------------------------------------------------------

@SETTINGS
@given(shapes=st.lists(shapes, min_size=1, max_size=3), seed=st.integers(0, 99),
       max_norm=st.floats(0.1, 5.0))
def test_clip_grad_norm_inf_string(shapes, seed, max_norm):
    grads = [3 * normal(s, seed + i) for i, s in enumerate(shapes)]
    params = []
    for g in grads:
        p = nn.Parameter(pyrt.zeros(*g.shape))
        p.grad = pyrt.tensor(g)
        params.append(p)
    total = nn.utils.clip_grad_norm_(params, max_norm, norm_type="inf")
    largest = max(float(np.abs(g).max()) for g in grads)
    assert total.item() == pytest.approx(largest, rel=1e-6)
    scale = min(1.0, max_norm / (largest + 1e-6))
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.data, g * scale, rtol=1e-5, atol=1e-7)
    if torch is not None:
        tparams = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
        for p, g in zip(tparams, grads):
            p.grad = torch.tensor(g)
        ttotal = torch.nn.utils.clip_grad_norm_(tparams, max_norm, norm_type="inf")
        assert total.item() == pytest.approx(ttotal.item(), rel=1e-6)
        for p, q in zip(params, tparams):
            np.testing.assert_allclose(p.grad.data, q.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_refuses_other_strings():
    p = nn.Parameter(pyrt.ones(2))
    p.grad = pyrt.ones(2)
    with pytest.raises(TypeError, match="norm_type must be a real number, got str"):
        nn.utils.clip_grad_norm_([p], 1.0, norm_type="fro")


# ---- nn.Embedding.from_pretrained ------------------------------------------------------------

def test_embedding_from_pretrained_frozen_by_default():
    table = pyrt.tensor(normal((4, 3), 0))
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad
    assert (emb.num_embeddings, emb.embedding_dim) == (4, 3)
    idx = np.array([[3, 0], [1, 1]])
    np.testing.assert_array_equal(emb(pyrt.tensor(idx)).data, table.data[idx])
    table.data[0, 0] = 42.0  # the memory is shared, as torch's Parameter(embeddings) shares it
    assert emb.weight.data[0, 0] == 42.0


def test_embedding_from_pretrained_trainable_with_padding():
    table = normal((5, 2), 1)
    emb = nn.Embedding.from_pretrained(table, freeze=False, padding_idx=-1)
    assert emb.weight.requires_grad and emb.padding_idx == 4
    np.testing.assert_array_equal(emb.weight.data[4], table[4])  # kept, not zeroed
    emb(pyrt.tensor([4, 2, 2])).sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.data[:, 0], [0, 0, 2, 0, 0])


def test_embedding_from_pretrained_errors():
    with pytest.raises(AssertionError, match="expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(pyrt.ones(3))
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.Embedding(3, 2, _weight=pyrt.ones(2, 3))
    with pytest.raises(ValueError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding.from_pretrained(pyrt.ones(3, 2), padding_idx=3)


@needs_torch
def test_embedding_from_pretrained_matches_torch():
    table = normal((6, 3), 2)
    idx = np.array([[5, 1, 0], [2, 2, 4]])
    ours = nn.Embedding.from_pretrained(pyrt.tensor(table), freeze=False, padding_idx=1)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=False,
                                                padding_idx=1)
    w = normal((2, 3, 3), 3)
    (ours(pyrt.tensor(idx)) * pyrt.tensor(w)).sum().backward()
    (theirs(torch.tensor(idx)) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.weight.grad.data, theirs.weight.grad.numpy(), rtol=1e-6)
    assert ours.weight.requires_grad == theirs.weight.requires_grad


# ---- end to end: cut-down text programs, pyrt only -------------------------------------------

def markov_tokens(ntokens, n, seed):
    """A token stream from a random sparse Markov chain, so that there is something to learn."""
    rng = np.random.default_rng(seed)
    trans = rng.dirichlet(np.full(ntokens, 0.1), size=ntokens)
    ids = [0]
    for _ in range(n - 1):
        ids.append(rng.choice(ntokens, p=trans[ids[-1]]))
    return np.array(ids, dtype=np.int64)


def batchify(ids, bsz):
    data = pyrt.tensor(ids, dtype=pyrt.long)
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


class WordLSTM(nn.Module):
    def __init__(self, ntoken, nhid):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(0.1)
        self.encoder = nn.Embedding(ntoken, nhid)
        self.rnn = nn.LSTM(nhid, nhid, 2, dropout=0.1)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight  # tied
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        return F.log_softmax(self.decoder(self.drop(out)).view(-1, self.ntoken), dim=1), hidden


def test_end_to_end_word_lstm_language_model():
    pyrt.manual_seed(0)
    ntokens, bptt, bsz = 20, 8, 8
    train = batchify(markov_tokens(ntokens, 1300, 0), bsz)
    model = WordLSTM(ntokens, 24)
    weight = next(model.parameters())
    hidden = (weight.new_zeros(2, bsz, 24), weight.new_zeros(2, bsz, 24))
    losses = []
    for _ in range(8):
        for i in range(0, train.size(0) - 1, bptt):
            seq_len = min(bptt, len(train) - 1 - i)
            data, target = train[i:i + seq_len], train[i + 1:i + 1 + seq_len].reshape(-1)
            hidden = tuple(h.detach() for h in hidden)  # truncated backpropagation
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = nn.NLLLoss()(output, target)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            with pyrt.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-20.0)
            losses.append(loss.item())
    assert model.decoder.weight is model.encoder.weight
    assert losses[0] == pytest.approx(math.log(ntokens), abs=0.1)
    ppl_first, ppl_last = math.exp(np.mean(losses[:5])), math.exp(np.mean(losses[-5:]))
    assert ppl_last < 0.8 * ppl_first


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pe = pyrt.zeros(max_len, d_model)
        position = pyrt.arange(0, max_len, dtype=pyrt.float).unsqueeze(1)
        div_term = pyrt.exp(pyrt.arange(0, d_model, 2).float() * (-math.log(1e4) / d_model))
        pe[:, 0::2] = pyrt.sin(position * div_term)
        pe[:, 1::2] = pyrt.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1), persistent=False)

    def forward(self, x):
        return x + self.pe[:x.size(0), :]


def test_end_to_end_transformer_language_model():
    pyrt.manual_seed(0)
    ntokens, bptt, bsz, d = 16, 8, 8, 16
    train = batchify(markov_tokens(ntokens, 800, 1), bsz)
    emb, pos = nn.Embedding(ntokens, d), PositionalEncoding(d)
    layer = nn.TransformerEncoderLayer(d, 2, 32, 0.0)
    encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
    head = nn.Linear(d, ntokens)
    model = nn.ModuleList([emb, pos, encoder, head])
    assert "pe" not in model.state_dict() and "1.pe" not in model.state_dict()
    opt = pyrt.optim.SGD(model.parameters(), lr=1.0)
    sched = pyrt.optim.lr_scheduler.StepLR(opt, 1.0, gamma=0.95)
    losses = []
    for _ in range(3):
        for i in range(0, train.size(0) - 1, bptt):
            seq_len = min(bptt, len(train) - 1 - i)
            data, target = train[i:i + seq_len], train[i + 1:i + 1 + seq_len].reshape(-1)
            mask = nn.Transformer.generate_square_subsequent_mask(seq_len)
            out = head(encoder(pos(emb(data) * math.sqrt(d)), mask, is_causal=True))
            loss = nn.CrossEntropyLoss()(out.view(-1, ntokens), target)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            losses.append(loss.item())
        sched.step()
    assert sched.get_last_lr()[0] == pytest.approx(0.95 ** 3)
    assert losses[0] == pytest.approx(math.log(ntokens), abs=0.6)
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.3


def test_end_to_end_char_rnn_sampling_with_temperature():
    pyrt.manual_seed(0)
    text = " ".join(np.random.default_rng(0).choice(["ab", "cab", "bca"], size=150))
    chars = sorted(set(text))
    data = pyrt.tensor([chars.index(c) for c in text], dtype=pyrt.long)
    n, seq_len, batch = len(chars), 12, 8
    embed, rnn, out = nn.Embedding(n, 24), nn.GRU(24, 24, batch_first=True), nn.Linear(24, n)
    params = [*embed.parameters(), *rnn.parameters(), *out.parameters()]
    opt = pyrt.optim.Adam(params, lr=0.02)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(30):
        starts = rng.integers(0, len(data) - seq_len - 1, size=batch)
        idx = pyrt.tensor(starts[:, None] + np.arange(seq_len)[None], dtype=pyrt.long)
        logits = out(rnn(embed(data[idx]), pyrt.zeros(1, batch, 24))[0])
        loss = F.cross_entropy(logits.reshape(-1, n), data[idx + 1].reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, max_norm=1.0)
        opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(math.log(n), abs=0.3)
    assert np.mean(losses[-5:]) < 0.6 * losses[0]
    # generation: one character at a time, drawn from softmax(logits / temperature)
    with pyrt.no_grad():
        inp, hidden, sampled = pyrt.tensor([[chars.index("a")]]), None, "a"
        for _ in range(40):
            o, hidden = rnn(embed(inp), hidden)
            probs = pyrt.softmax(out(o)[0, -1].div(0.5), dim=-1, dtype=pyrt.float32)
            top_i = pyrt.multinomial(probs, 1)[0]
            sampled += chars[top_i.item()]
            inp = top_i.view(1, 1)
    words = sampled.split()[1:-1]  # whole words only
    assert words and sum(w in ("ab", "cab", "bca") for w in words) >= 0.7 * len(words)


def test_end_to_end_seq2seq_attention_over_packed_sequences():
    pyrt.manual_seed(0)
    R = nn.utils.rnn
    pad, sos, eos, vocab, hid = 0, 1, 2, 8, 24
    enc_emb, enc_gru = nn.Embedding(vocab, hid, padding_idx=pad), nn.GRU(hid, hid,
                                                                         batch_first=True)
    dec_emb, dec_gru, dec_out = nn.Embedding(vocab, hid), nn.GRU(2 * hid, hid,
                                                                 batch_first=True), nn.Linear(
        hid, vocab)
    wa, ua, va = nn.Linear(hid, hid), nn.Linear(hid, hid), nn.Linear(hid, 1)
    modules = nn.ModuleList([enc_emb, enc_gru, dec_emb, dec_gru, dec_out, wa, ua, va])
    opt = pyrt.optim.Adam(modules.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(25):
        lengths = rng.integers(2, 6, size=16)
        src = np.full((16, 5), pad)
        tgt = np.full((16, 6), pad)
        for b, k in enumerate(lengths):  # learn to reverse the digits
            src[b, :k] = rng.integers(3, vocab, size=k)
            tgt[b, :k], tgt[b, k] = src[b, :k][::-1], eos
        src, tgt = pyrt.from_numpy(src), pyrt.from_numpy(tgt)
        packed = R.pack_padded_sequence(enc_emb(src), pyrt.tensor(lengths), batch_first=True,
                                        enforce_sorted=False)
        packed_out, hidden = enc_gru(packed)
        keys, _ = R.pad_packed_sequence(packed_out, batch_first=True, total_length=5)
        mask = src != pad
        dec_input = pyrt.empty(16, 1, dtype=pyrt.long).fill_(sos)
        outputs = []
        for i in range(tgt.size(1)):
            scores = va(pyrt.tanh(wa(hidden.permute(1, 0, 2)) + ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1).masked_fill(~mask.unsqueeze(1), -math.inf)
            context = pyrt.bmm(F.softmax(scores, dim=-1), keys)
            o, hidden = dec_gru(pyrt.cat((dec_emb(dec_input), context), dim=2), hidden)
            outputs.append(dec_out(o))
            dec_input = tgt[:, i].unsqueeze(1)  # teacher forcing
        logp = F.log_softmax(pyrt.cat(outputs, dim=1), dim=-1)
        loss = nn.NLLLoss(ignore_index=pad)(logp.view(-1, vocab), tgt.view(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(modules.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(math.log(vocab), abs=0.3)
    assert np.mean(losses[-5:]) < 0.8 * losses[0]
