"""The networks the CLI trains, built from pyrt.nn layers."""

from pyrt import nn

__all__ = ["MODELS", "build_model", "xor_net"]


def mlp():
    """784-128-10 multilayer perceptron for 28x28 images."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


def cnn():
    """Two 3x3 convolutions (8 and 16 channels), each followed by ReLU and 2x2 max pooling,
    then one linear layer: 28x28 -> 14x14 -> 7x7, 16 * 7 * 7 = 784 features."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 10),
    )


def xor_net():
    """The network of Arraymancer issue #485: 2 -> 3 -> ReLU -> 1 logit, without biases, the
    weights drawn from U(-1, 1) as there (not PyTorch's U(-1/sqrt(fan_in), 1/sqrt(fan_in)))."""
    model = nn.Sequential(nn.Linear(2, 3, bias=False), nn.ReLU(), nn.Linear(3, 1, bias=False))
    for weight in model.parameters():
        nn.init.uniform_(weight, -1.0, 1.0)
    return model


MODELS = {"mlp": mlp, "cnn": cnn}


def build_model(name):
    if name not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}, got {name!r}")
    return MODELS[name]()


def train_step(model, criterion, optimizer, x, y, device="cpu"):
    """One step of SGD-style training on a batch; returns the loss, detached."""
    if device != "cpu":
        x, y = x.to(device), y.to(device)
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach()
