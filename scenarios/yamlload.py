"""A safe YAML loader that remembers line numbers, so errors can point at the offending line."""

from __future__ import annotations

from typing import Any

import yaml

from .errors import InputError


class LineDict(dict):
    """A mapping from YAML that knows its own line and the line of each key."""

    line: int = 0
    key_lines: dict

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class LineList(list):
    line: int = 0
    item_lines: list

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if index < len(self.item_lines) else self.line


#: YAML's kinds of value, by the Python type the loader gives them (bool before int: a boolean
#: is an int to Python)
_KINDS = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
          (list, "a list"), (dict, "a mapping"))


def line_of(node: Any, key: Any = None) -> int | None:
    """The line of ``node`` (a LineDict or LineList), or of its entry ``key``; None when it
    has none (a value read from JSON, a key it does not hold)."""
    try:
        if isinstance(node, (LineDict, LineList)):
            return node.line_of(key) if key is not None else node.line
    except (KeyError, IndexError, AttributeError, TypeError):
        pass
    return getattr(node, "line", None)


def kind_of(node: Any) -> str:
    """What a YAML value is, in the file's terms (for messages: "must be a mapping, got a
    list"), never a Python class name such as ``LineList`` or ``NoneType``."""
    if node is None:
        return "nothing (an empty value or file)"
    for typ, name in _KINDS:
        if isinstance(node, typ):
            return name
    return f"a value of type {type(node).__name__}"


#: Bounds on what one input file may make us build: a few kilobytes of YAML with nested
#: aliases ("billion laughs") expand to gigabytes once walked; nesting deeper than Python's
#: stack breaks every recursive walk. Real scenarios, traces and profiles are far below both.
MAX_BYTES = 16 * 1024 * 1024
MAX_NODES = 200_000
MAX_DEPTH = 100


def _expanded_size(root: yaml.Node) -> int:
    """Nodes the document expands to, counting every alias use; raises past the bounds."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(f"nested more than {MAX_DEPTH} levels deep", None,
                             node.start_mark.line + 1)
        key = id(node)
        if key in sizes and not done:
            continue
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [x for pair in node.value for x in pair]
        else:
            sizes[key] = 1
            continue
        if done:
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > MAX_NODES:
                raise InputError(f"expands to more than {MAX_NODES:,} values (YAML aliases "
                                 "that repeat themselves?)", None, node.start_mark.line + 1)
            sizes[key] = total
        else:
            sizes[key] = -1                  # in progress (a cycle cannot occur in YAML 1.1)
            stack.append((node, depth, True))
            stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


class _Loader(yaml.SafeLoader):
    _depth = 0

    def compose_node(self, parent, index):
        # Count nesting while composing: PyYAML's composer recurses per level, so a deep
        # document would otherwise end in a RecursionError with no line to point at.
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise InputError(f"nested more than {MAX_DEPTH} levels deep", None,
                                 self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self):
        node = super().compose_document()
        if node is not None:
            _expanded_size(node)
        return node


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, bool) and isinstance(key_node, yaml.ScalarNode):
            # YAML 1.1 reads a plain on/off/yes/no as a boolean, also as a key: a MERGE's
            # ``on: [id]`` would be the key True ("unknown key True"). Every key of icecheck's
            # formats is a name, so a key stays the text it was written as.
            key = key_node.value
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise InputError(f"unsupported mapping key {key!r}", None, key_node.start_mark.line + 1)
        if key in out:
            raise InputError(f"duplicate key {key!r}", None, key_node.start_mark.line + 1)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.line = node.start_mark.line + 1
    out.item_lines = [child.start_mark.line + 1 for child in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml(text: str, path: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader derives from SafeLoader
    except InputError as e:
        raise InputError(e.detail, path, e.line) from None
    except RecursionError:
        raise InputError(f"nested too deeply (more than {MAX_DEPTH} levels)", path) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise InputError(f"not valid YAML: {e.problem or e.context}", path, line) from None
    except yaml.YAMLError as e:
        raise InputError(f"not valid YAML: {e}", path) from None


def read_text(path: str, what: str = "file") -> str:
    """A UTF-8 text file's contents, or an ``InputError`` naming the file (and the line of a
    byte that is not UTF-8): never a ``UnicodeDecodeError`` traceback."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as e:
        raise InputError(f"cannot read {what}: {e.strerror or e}", path) from None
    if len(data) > MAX_BYTES:
        raise InputError(f"larger than {MAX_BYTES // (1024 * 1024)} MB; not a {what} icecheck "
                         "reads", path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[e.start]:02x})", path, line) from None


def load_yaml_file(path: str) -> Any:
    return load_yaml(read_text(path), path)


class Ctx:
    """Parsing context of a line-aware YAML document: the file path, and helpers that check a
    node's shape and fail with an ``InputError`` naming the file and the node's line. Shared by
    every YAML format (scenarios, profiles, pipelines)."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, message: str, node: Any = None, key: Any = None) -> InputError:
        line = None
        if isinstance(node, LineDict):
            line = node.line_of(key) if key is not None else node.line
        elif isinstance(node, LineList):
            line = node.line_of(key) if isinstance(key, int) else node.line
        elif isinstance(node, int):
            line = node
        return InputError(message, self.path, line)

    def mapping(self, node: Any, what: str, parent: Any = None, key: Any = None) -> LineDict:
        if not isinstance(node, LineDict):
            raise self.fail(f"{what} must be a mapping, got {kind_of(node)}", parent, key)
        return node

    def seq(self, node: Any, what: str, parent: Any = None, key: Any = None) -> LineList:
        if not isinstance(node, LineList):
            raise self.fail(f"{what} must be a list, got {kind_of(node)}", parent, key)
        return node

    def keys(self, node: LineDict, allowed: set[str], what: str) -> None:
        for k in node:
            if k not in allowed:
                raise self.fail(f"unknown key {k!r} in {what}; expected one of "
                                f"{', '.join(sorted(allowed))}", node, k)
