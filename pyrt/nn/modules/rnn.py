"""torch.nn.modules.rnn's names in pyrt: the recurrent layers and cells."""

from pyrt.nn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]
