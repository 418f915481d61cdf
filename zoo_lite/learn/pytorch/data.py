"""PyTorch data inputs: a DataLoader object or a creator of one, held in full by every worker.

zoo_lite re-batches the loader's dataset itself (see :mod:`zoo_lite.learn.base.steps`): each
global batch is split over the workers, every row is used once per epoch, every worker runs the
same number of steps. The loader's ``shuffle`` and ``collate_fn`` are kept.
"""

from __future__ import annotations

from typing import Any, Callable

from torch.utils.data import BatchSampler, DataLoader, IterableDataset, RandomSampler, SequentialSampler

from zoo_lite.errors import InvalidArgumentError
from zoo_lite.learn.base.creators import call_data_creator, creator_takes_batch_size

__all__ = ["is_loader_input", "global_batch_size", "resolve_dataset", "check_loader"]


def is_loader_input(data: Any) -> bool:
    """True for a DataLoader or a creator function (anything callable that is not a collection)."""
    from zoo_lite.learn.base.data_inputs import is_rows_input

    return isinstance(data, DataLoader) or (callable(data) and not is_rows_input(data))


def global_batch_size(data: Any, config: dict[str, Any], batch_size: int) -> int:
    """The global batch of a loader input: a DataLoader's own ``batch_size``; for a creator that
    takes only ``config``, ``config["batch_size"]`` when set; else ``fit``'s ``batch_size``."""
    if isinstance(data, DataLoader):
        check_loader(data, "data")
        return int(data.batch_size)
    if not creator_takes_batch_size(data) and "batch_size" in config:
        return int(config["batch_size"])
    return batch_size


def check_loader(loader: DataLoader, argument: str) -> None:
    """A loader zoo_lite can re-shard: map-style dataset, plain sequential or random batching."""
    if isinstance(loader.dataset, IterableDataset):
        raise InvalidArgumentError(
            f"{argument}: the DataLoader's dataset is an IterableDataset, which cannot be split into equal shares "
            "per worker; use a map-style Dataset, or pass XShards / a Spark DataFrame"
        )
    if loader.batch_size is None or not isinstance(loader.batch_sampler, BatchSampler) or \
            not isinstance(loader.sampler, (SequentialSampler, RandomSampler)):
        raise InvalidArgumentError(
            f"{argument}: the DataLoader uses a custom sampler or batch_sampler; zoo_lite shards the dataset itself: "
            "build the DataLoader with batch_size= and shuffle= only"
        )


def resolve_dataset(data: Any, config: dict[str, Any], batch_size: int) -> tuple[Any, Callable[..., Any], bool]:
    """(dataset, collate_fn, shuffle) of a DataLoader, or of the one a creator builds (on a worker)."""
    if isinstance(data, DataLoader):
        loader = data
    else:
        loader = call_data_creator(data, config, batch_size)
        if not isinstance(loader, DataLoader):
            raise InvalidArgumentError(
                f"data: the data creator {getattr(data, '__name__', data)!r} returned a {type(loader).__name__}; "
                "it must return a torch.utils.data.DataLoader"
            )
    check_loader(loader, "data")
    return loader.dataset, loader.collate_fn, isinstance(loader.sampler, RandomSampler)

