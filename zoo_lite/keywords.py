"""A misspelt keyword argument gets the names it was probably meant to be.

``est.fit(data, labels_cols=["y"])`` (Orca's own guide spells it so) would raise Python's bare
``TypeError: fit() got an unexpected keyword argument 'labels_cols'``. A function or class
decorated with :func:`suggest_keywords` raises :class:`~zoo_lite.errors.UnknownKeywordError`
instead (a TypeError too), which names the function, the unknown keywords, the closest names it
takes (``difflib``) and all of them.

A correct call costs one more Python frame and nothing else: for a function without ``**kwargs``
the check runs only after the call failed with a TypeError, and only turns it into the better
error when a keyword the function does not take was passed (then Python refused the call before
the function's body ran, so no error raised inside the function is ever replaced). A function
that takes ``**kwargs`` and passes them on names what it takes with ``also=`` or
``forwards_to=``; its keywords are checked before the call, as a set lookup.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from typing import Any, Callable, Iterable, Optional, TypeVar, Union, overload

from zoo_lite.errors import InvalidArgumentError, UnknownKeywordError

__all__ = ["suggest_keywords", "keyword_names", "unknown_keywords_message"]

T = TypeVar("T", bound=Union[Callable[..., Any], type])

#: how many close names the message offers for each unknown keyword, and how close they must be
_SUGGESTIONS = 3
_CLOSENESS = 0.6
_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def keyword_names(func: Callable[..., Any], skip_first: bool = False) -> tuple[frozenset[str], bool]:
    """The names ``func`` takes as keyword arguments, and whether it takes ``**kwargs`` too.

    ``skip_first`` drops the first parameter (a method's ``self`` or ``cls``). Wrappers made with
    ``functools.wraps`` are looked through.

    Examples
    --------
    >>> def read(path, sep=",", *, header=True, **options): ...
    >>> names, open_ended = keyword_names(read)
    >>> sorted(names), open_ended
    (['header', 'path', 'sep'], True)
    """
    parameters = list(inspect.signature(func).parameters.values())
    if skip_first and parameters and parameters[0].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                             inspect.Parameter.POSITIONAL_OR_KEYWORD):
        parameters = parameters[1:]
    names = frozenset(parameter.name for parameter in parameters if parameter.kind in _KEYWORD_KINDS)
    return names, any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters)


def unknown_keywords_message(function_name: str, unknown: Iterable[str], accepted: Iterable[str], hint: str = "") -> str:
    """The message of :class:`~zoo_lite.errors.UnknownKeywordError`.

    Examples
    --------
    >>> print(unknown_keywords_message("fit", ["labels_cols"], ["data", "epochs", "label_cols"]))
    fit() got unknown keyword argument(s) ['labels_cols']: did you mean 'label_cols'? The keyword arguments it takes are ['data', 'epochs', 'label_cols']
    """
    unknown, accepted = list(unknown), sorted(accepted)
    close = {name: difflib.get_close_matches(name, accepted, _SUGGESTIONS, _CLOSENESS) for name in unknown}
    close = {name: matches for name, matches in close.items() if matches}
    if len(unknown) == 1 and close:
        guess = f": did you mean {' or '.join(map(repr, close[unknown[0]]))}?"
    elif close:
        guess = ": did you mean " + ", ".join(
            f"{' or '.join(map(repr, matches))} (for {name!r})" for name, matches in close.items()) + "?"
    else:
        guess = ";"
    return (f"{function_name}() got unknown keyword argument(s) {unknown}{guess} {hint}{' ' if hint else ''}"
            f"The keyword arguments it takes are {accepted}")


def _checked(func: Callable[..., Any], accepted: frozenset[str], open_ended: bool, hint: str) -> Callable[..., Any]:
    """``func`` raising UnknownKeywordError for an unknown keyword (see the module's docstring)."""
    name = func.__qualname__

    def error(kwargs: dict[str, Any]) -> UnknownKeywordError:
        unknown = [keyword for keyword in kwargs if keyword not in accepted]
        return UnknownKeywordError(unknown_keywords_message(name, unknown, accepted, hint))

    if open_ended:   # **kwargs passed on: Python cannot refuse the call, so look before it
        @functools.wraps(func)
        def checked_first(*args: Any, **kwargs: Any) -> Any:
            if kwargs and not accepted.issuperset(kwargs):
                raise error(kwargs)
            return func(*args, **kwargs)

        return checked_first

    @functools.wraps(func)
    def checked_on_failure(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TypeError:
            # an unknown keyword means Python refused the call itself: func's body never ran
            if kwargs and not accepted.issuperset(kwargs):
                raise error(kwargs) from None
            raise

    return checked_on_failure


def _function_checked(func: Callable[..., Any], also: Iterable[str], forwards_to: Optional[Callable[..., Any]],
                      hint: str, skip_first: bool = False) -> Optional[Callable[..., Any]]:
    """``func`` checked, or None where its ``**kwargs`` take names nobody listed."""
    names, open_ended = keyword_names(func, skip_first)
    extra = set(also)
    if forwards_to is not None:
        extra |= keyword_names(forwards_to, skip_first=True)[0]
    if open_ended and not extra:
        return None
    return _checked(func, names | extra, open_ended, hint)


def _class_checked(cls: type) -> type:
    """Every public method of ``cls`` (and ``__init__``) defined in the class itself, checked;
    static and class methods included, properties and methods taking open ``**kwargs`` left alone."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(member, (staticmethod, classmethod)):
            checked = _function_checked(member.__func__, (), None, "", skip_first=isinstance(member, classmethod))
            if checked is not None:
                setattr(cls, name, type(member)(checked))
        elif inspect.isfunction(member):
            checked = _function_checked(member, (), None, "", skip_first=True)
            if checked is not None:
                setattr(cls, name, checked)
    return cls


@overload
def suggest_keywords(target: T) -> T: ...


@overload
def suggest_keywords(*, also: Iterable[str] = (), forwards_to: Optional[Callable[..., Any]] = None,
                     hint: str = "") -> Callable[[T], T]: ...


def suggest_keywords(target: Optional[T] = None, *, also: Iterable[str] = (), forwards_to: Optional[Callable[..., Any]] = None,
                     hint: str = "") -> Any:
    """Decorate a function, or a class (each of its public methods), so that a call with an unknown
    keyword argument raises :class:`~zoo_lite.errors.UnknownKeywordError` naming the closest names.

    Parameters
    ----------
    target : function or class
        Used bare (``@suggest_keywords``). On a class it wraps the public methods (and
        ``__init__``) the class itself defines; those taking ``**kwargs`` stay as they are.
    also : iterable of str, optional
        Names a function's ``**kwargs`` take (e.g. the options it picks out of them).
    forwards_to : callable, optional
        The function a function's ``**kwargs`` are passed to (e.g. ``pandas.read_csv``): its
        keyword names are taken too, but its first parameter's (the path or data, which the
        decorated function passes itself).
    hint : str, optional
        A sentence added to the message (where the options go instead, say).

    Returns
    -------
    function or class
        The function wrapped (``functools.wraps``: same name, docstring and signature), or the
        class with its methods wrapped.

    Raises
    ------
    InvalidArgumentError
        On decoration: a function taking ``**kwargs`` without ``also`` or ``forwards_to``.

    Examples
    --------
    >>> @suggest_keywords
    ... def fit(data, epochs=1, label_cols=None):
    ...     return epochs
    >>> fit([], epochs=2)
    2
    >>> fit([], labels_cols=["y"])
    Traceback (most recent call last):
    ...
    zoo_lite.errors.UnknownKeywordError: fit() got unknown keyword argument(s) ['labels_cols']: did you mean 'label_cols'? The keyword arguments it takes are ['data', 'epochs', 'label_cols']
    >>> @suggest_keywords(also=["master"], hint="Spark settings go in conf={...}.")
    ... def start(cores=1, conf=None, **options):
    ...     return sorted(options)
    >>> start(master="local")
    ['master']
    >>> start(cors=2)
    Traceback (most recent call last):
    ...
    zoo_lite.errors.UnknownKeywordError: start() got unknown keyword argument(s) ['cors']: did you mean 'cores'? Spark settings go in conf={...}. The keyword arguments it takes are ['conf', 'cores', 'master']
    """

    def decorate(item: T) -> T:
        if isinstance(item, type):
            return _class_checked(item)   # type: ignore[return-value]
        checked = _function_checked(item, also, forwards_to, hint)
        if checked is None:
            raise InvalidArgumentError(
                f"suggest_keywords: {item.__qualname__}() takes **kwargs, so the names it takes are open; list them "
                "with also=[...] or forwards_to=<the function they are passed to>")
        return checked   # type: ignore[return-value]

    return decorate if target is None else decorate(target)
