"""The wire shapes of the three faces' requests as pydantic models: a body of the wrong shape
is a 400 that names the field (``messages.0.content.1.text: Field required``), and a face reads
only bodies of the right shape. The models check what a face reads and let through fields
they do not name, as the real APIs take fields a model does not use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictStr,
    Tag,
    ValidationError,
)

from hscale.train.serving._chat import BadRequest

TAG = ":"  # union members' tags start so; an error's path leaves them out
OBJECT = "Input should be an object"
JSON_TYPES = {"str": str, "list": list, "dict": dict}
Name = Annotated[StrictStr, Field(min_length=1, max_length=128)]  # a tool's


class Wire(BaseModel):
    """A JSON object of the wire: the fields named are checked, others pass."""

    model_config = ConfigDict(extra="allow")


def kinds(members: dict[str, Any], other: Any,
          kind_of: Callable[[dict[str, Any]], Any] = lambda value: value.get("type")) -> Any:
    """Objects told apart by their kind (``kind_of``: by default their ``type``):
    ``members[kind]`` checks one; ``other`` checks any other entry (an unknown kind, none,
    not an object), so that its error names the field at fault."""

    def pick(value: Any) -> str:
        kind = kind_of(value) if isinstance(value, dict) else None
        return TAG + kind if isinstance(kind, str) and kind in members else TAG

    tagged = [Annotated[m, Tag(TAG + k)] for k, m in members.items()]
    return Annotated[Union[(*tagged, Annotated[other, Tag(TAG)])],  # noqa: UP007
                     Discriminator(pick)]


def either(message: str, **members: Any) -> Any:
    """A value of one of several JSON types (``str=``, ``list=``, ``dict=``); ``message``
    where it is none of them."""

    def pick(value: Any) -> str | None:
        return next((TAG + k for k in members if isinstance(value, JSON_TYPES[k])), None)

    tagged = [Annotated[m, Tag(TAG + k)] for k, m in members.items()]
    return Annotated[Union[tuple(tagged)], Discriminator(  # noqa: UP007
        pick, custom_error_type="wrong_shape", custom_error_message=message)]


class Kind(Wire):
    """An entry passed over (an image, reasoning, a hosted tool, ...): a kind is all it
    needs."""

    type: StrictStr


class Schema(Wire):
    """A tool's JSON schema, as far as a model reads it: its properties are schemas."""

    properties: dict[str, dict[str, Any]] | None = None


def text_or(part: Any) -> Any:
    """A message's content: a string, or a list of ``part``."""
    return either("must be a string or a list of content parts", str=StrictStr, list=list[part])


def check(model: type[Wire], data: Any, indexed: bool = False) -> Wire:
    """``data`` read by ``model``, or a BadRequest whose message starts with the field's
    path: ``messages.0.content`` or, ``indexed`` (the OpenAI APIs), ``messages[0].content``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = path(error["loc"], indexed) or "body"
        message = OBJECT if error["type"] in ("model_type", "dict_type") else error["msg"]
        raise BadRequest(f"{where}: {message}", where) from None


def path(loc: tuple[Any, ...], indexed: bool = False) -> str:
    """An error's location as the API writes a field's path (union tags left out)."""
    out = ""
    for part in loc:
        if isinstance(part, str) and part.startswith(TAG):
            continue
        if indexed and isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
