"""Models and creators used by the Estimator tests (importable by the Ray and Spark workers)."""

from __future__ import annotations

import torch
from torch import nn


class TwoInputs(nn.Module):
    """``forward(a, b)``: a linear map of the concatenated inputs."""

    def __init__(self, width_a: int = 2, width_b: int = 1) -> None:
        super().__init__()
        self.linear = nn.Linear(width_a + width_b, 1)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.cat([a.reshape(len(a), -1), b.reshape(len(b), -1)], dim=1))


class FailsOnMarker(nn.Module):
    """A linear model that raises when an input row starts with the marker value 999."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (x[:, 0] == 999).any():
            raise RuntimeError("marker row reached the model")
        return self.linear(x)


def digits_mlp(config: dict) -> nn.Module:
    return nn.Sequential(nn.Linear(64, config.get("hidden", 64)), nn.ReLU(), nn.Linear(config.get("hidden", 64), 10))


def sgd_creator(model: nn.Module, config: dict) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=config.get("lr", 0.1))


def regression_dataset(rows: int = 64, seed: int = 0) -> torch.utils.data.TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, 2, generator=generator)
    y = x @ torch.tensor([[1.5], [-2.0]])
    return torch.utils.data.TensorDataset(x, y)


def loader_creator(config: dict, batch_size: int) -> torch.utils.data.DataLoader:
    return torch.utils.data.DataLoader(regression_dataset(), batch_size=batch_size, shuffle=True)


def loader_creator_guide_form(config: dict) -> torch.utils.data.DataLoader:
    return torch.utils.data.DataLoader(regression_dataset(), batch_size=config["batch_size"], shuffle=True)


def not_a_loader_creator(config: dict, batch_size: int) -> list:
    return [1, 2, 3]


def blob_classes(rows_per_class: int = 40, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Three well separated 2-D blobs: features (float32) and class labels 0, 1, 2 as doubles (as
    a Spark ML label column holds them)."""
    generator = torch.Generator().manual_seed(seed)
    centers = torch.tensor([[-3.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    x = torch.cat([center + 0.5 * torch.randn(rows_per_class, 2, generator=generator) for center in centers])
    y = torch.arange(3, dtype=torch.float64).repeat_interleave(rows_per_class)
    return x, y


def linear_classifier(config: dict) -> nn.Module:
    """Logits of three classes, for CrossEntropyLoss."""
    return nn.Linear(2, 3)


def log_softmax_classifier(config: dict) -> nn.Module:
    """Log-probabilities of three classes, for NLLLoss."""
    return nn.Sequential(nn.Linear(2, 3), nn.LogSoftmax(dim=1))


def double_label_loader_creator(config: dict, batch_size: int) -> torch.utils.data.DataLoader:
    """The blobs with float64 class labels, as a DataLoader (labels reach the loss batch by batch)."""
    x, y = blob_classes()
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch_size, shuffle=True)


def half_label_loader_creator(config: dict, batch_size: int) -> torch.utils.data.DataLoader:
    """The blobs with one label that is not a whole number (1.5)."""
    x, y = blob_classes()
    y[7] = 1.5
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch_size)
