"""Calling user creator functions in the forms Orca documented, with no ML framework imported."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

__all__ = ["positional_parameters", "positional_arity", "creator_takes_batch_size", "call_data_creator"]


def positional_parameters(func: Callable[..., Any]) -> Optional[tuple[list[inspect.Parameter], bool]]:
    """``func``'s named positional parameters and whether it also takes ``*args``; None when its
    signature cannot be inspected."""
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    named = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return named, any(p.kind == p.VAR_POSITIONAL for p in parameters)


def positional_arity(func: Callable[..., Any]) -> Optional[int]:
    """How many positional arguments ``func`` requires (None: any number, or not inspectable).

    Examples
    --------
    >>> positional_arity(lambda config, batch_size=32: None), positional_arity(lambda *args: None)
    (1, None)
    """
    inspected = positional_parameters(func)
    if inspected is None or inspected[1]:
        return None
    return sum(p.default is p.empty for p in inspected[0])


def creator_takes_batch_size(creator: Callable[..., Any]) -> bool:
    """Orca's later data-creator form ``creator(config, batch_size)``; the guide's form is
    ``creator(config)``, which reads ``config["batch_size"]``.

    Examples
    --------
    >>> creator_takes_batch_size(lambda config: None), creator_takes_batch_size(lambda config, batch_size: None)
    (False, True)
    """
    inspected = positional_parameters(creator)
    return inspected is None or len(inspected[0]) >= 2


def call_data_creator(creator: Callable[..., Any], config: dict[str, Any], batch_size: int) -> Any:
    """Call a data creator in whichever form it takes; the ``(config)`` form finds the batch size
    in ``config["batch_size"]`` (set to ``batch_size`` unless the user set it)."""
    if creator_takes_batch_size(creator):
        return creator(config, batch_size)
    return creator({**config, "batch_size": config.get("batch_size", batch_size)})
