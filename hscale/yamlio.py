"""Reading YAML a user wrote, safely: UTF-8 only, bounded in size, depth and expanded size
(alias bombs, self-referencing anchors), duplicate keys refused; every problem is one
HscaleError naming the file and line. Returns the data and its node tree (for line numbers
of later validation errors).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from hscale.errors import HscaleError

MAX_BYTES = 1 << 20  # a spec is a page of text, not a data file
MAX_DEPTH = 32
MAX_ITEMS = 100_000  # values after aliases are expanded


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and nesting deeper than MAX_DEPTH."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise ConstructorError(None, None, f"nested deeper than {MAX_DEPTH} levels",
                                       mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: the base class names it
                break
            if duplicate:
                raise ConstructorError(None, None, f"duplicate key {key!r}",
                                       key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _refuse(loader: _Loader, node: Any) -> Any:
    kind = node.tag.rsplit(":", 1)[-1]
    raise ConstructorError(None, None, f"a !!{kind} value: only text, numbers, true/false, "
                           "null, lists and mappings are read", node.start_mark)


# The JSON-like core only: sets, bytes and ordered pairs are refused, dates stay text (as in
# YAML 1.2's JSON schema), so what a spec holds is what it says.
for _tag in ("set", "binary", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


def read_yaml(path: str | Path, what: str = "YAML file") -> tuple[Any, yaml.Node | None]:
    """(data, node tree) of the YAML at ``path``; one-line HscaleErrors for everything else."""
    path = Path(path)
    if path.is_dir():
        raise HscaleError(f"{path}: is a folder, not a file", f"give the path of a {what}")
    if path.exists() and not path.is_file():
        raise HscaleError(f"{path}: not a plain file (a FIFO or device)",
                          f"give the path of a {what}")
    if not path.is_file():
        raise HscaleError(f"{path}: no such file", f"give the path of a {what}")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise HscaleError(f"{path}: {size} bytes, more than a {what} holds "
                          f"({MAX_BYTES} at most)", f"give a {what}, not a data file")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HscaleError(f"{path}: not UTF-8 text (byte {exc.start})",
                          "save the file as UTF-8") from None
    except OSError as exc:
        raise HscaleError(f"{path}: cannot be read ({exc.strerror})",
                          "check the file's permissions") from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, where: str, first_line: int = 1) -> tuple[Any, yaml.Node | None]:
    """(data, node tree) of YAML ``text`` read from ``where``, whose first line is line
    ``first_line`` there (front matter inside a larger file); the same limits as
    :func:`read_yaml`, one-line HscaleErrors naming ``where`` and the line."""
    loader = None
    try:
        loader = _Loader(text)
        tree = loader.get_single_node()
        data = loader.construct_document(tree) if tree is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + first_line}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise HscaleError(f"{where}{line}: not valid YAML ({problem})",
                          "check indentation, colons and repeated keys") from None
    except RecursionError:
        raise HscaleError(f"{where}: nested too deeply", f"at most {MAX_DEPTH} levels") \
            from None
    finally:
        if loader is not None:
            loader.dispose()
    _check_size(data, where)
    return data, tree


def _check_size(data: Any, path: Path | str) -> None:
    """Refuse self-referencing anchors and alias expansions beyond MAX_ITEMS values."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(value: Any) -> int:
        if not isinstance(value, dict | list):
            return 1
        key = id(value)
        if key in open_:
            raise HscaleError(f"{path}: an anchor refers to itself (a cycle of aliases)",
                              "write the repeated part out, or alias a finished mapping")
        if key not in sizes:
            open_.add(key)
            children = value.items() if isinstance(value, dict) else enumerate(value)
            total = 1
            for _, child in children:
                total += size(child)
                if total > MAX_ITEMS:
                    raise HscaleError(f"{path}: more than {MAX_ITEMS} values once aliases "
                                      "are expanded", "write a smaller file")
            open_.discard(key)
            sizes[key] = total
        return sizes[key]

    size(data)


def key_line(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML key at ``loc``, or of its nearest ancestor."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if k.value == str(key)), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) \
                and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line
