"""A static scan of a plugin's source for the known ways to game a measurement (issue 25).

It reads the plugin module's own file (not what it imports) and reports each line that
does one of these:

* ``patches``: assigns to, deletes or ``setattr``s an attribute of torch, time, triton or
  the harness (``runners``), as a plugin that replaces a timer or a statistic does;
* ``threads``: starts a thread or a process (``threading``, ``concurrent.futures``,
  ``multiprocessing``, ``os.fork``), where work can outlive the timed call;
* ``streams``: makes or switches CUDA streams, where work can escape the timer's events;
* ``identity keys``: uses a tensor's identity (``data_ptr()``, ``id()``, ``_version``,
  its storage) as a key (a subscript, a dict key, an ``in`` test, ``get``/``setdefault``/
  ``pop``, or a name later used so), as a cache that replays results does;
* ``published shapes``: compares a shape with, or writes out, a shape or dimension of a
  published workload (``published_shapes``), as code special-cased for a benchmark does.

The findings are warnings shown beside the plugin and its reruns. They never decide: an
honest launcher reads ``data_ptr()`` and a kernel may pick tiles by size. The runtime
checks (``runners.integrity``) decide whether a result stands.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Any, Iterable

GUARDED_ROOTS = ("torch", "time", "triton", "runners")
THREADS = ("threading.Thread", "threading.Timer", "_thread.", "concurrent.futures.", "multiprocessing.", "os.fork")
STREAMS = ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
           "torch.Stream")
IDENTITY_METHODS = ("data_ptr", "untyped_storage", "storage", "_cdata")
KEY_METHODS = ("get", "setdefault", "pop")
SHAPE_ATTRIBUTES = ("shape", "size", "numel")


@dataclass(frozen=True)
class ScanWarning:
    """One finding: the line, which pattern, and what the line does."""

    line: int
    pattern: str
    text: str

    def as_document(self) -> dict[str, Any]:
        return {"line": self.line, "pattern": self.pattern, "text": self.text}


class _Scanner(ast.NodeVisitor):
    def __init__(self, published_shapes: Iterable[tuple[int, ...]]):
        self.shapes = {tuple(shape) for shape in published_shapes if len(shape) >= 2}
        self.dimensions = {size for shape in published_shapes for size in shape if size > 1}
        self.aliases: dict[str, str] = {}  # local name -> the dotted name it was imported as
        self.warnings: list[ScanWarning] = []
        self.parents: dict[ast.AST, ast.AST] = {}

    def warn(self, node: ast.AST, pattern: str, text: str) -> None:
        self.warnings.append(ScanWarning(node.lineno, pattern, text))

    def dotted(self, node: ast.AST) -> str | None:
        """``torch.cuda.Event.elapsed_time`` for an attribute chain, with imported names resolved."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = alias.name.split(".")[0]
            self.aliases[alias.asname or root] = alias.name if alias.asname else root

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}" if node.module else alias.name

    def check_patch(self, target: ast.AST, node: ast.AST) -> None:
        name = self.dotted(target) if isinstance(target, ast.Attribute) else None
        if name and name.split(".")[0] in GUARDED_ROOTS:
            self.warn(node, "patches", f"replaces {name}")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.check_patch(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.check_patch(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.check_patch(target, node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.dotted(node.func) or ""
        if name == "setattr" and node.args:
            owner = self.dotted(node.args[0])
            if owner and owner.split(".")[0] in GUARDED_ROOTS:
                self.warn(node, "patches", f"replaces an attribute of {owner}")
        if any(name == pattern or (pattern.endswith(".") and name.startswith(pattern)) for pattern in THREADS):
            self.warn(node, "threads", f"starts {name}")
        if name in STREAMS:
            self.warn(node, "streams", f"uses {name}")
        if self.is_identity(node) and self.used_as_key(node):
            self.warn(node, "identity keys", f"uses {ast.unparse(node)} as a key")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "_version" and self.used_as_key(node):
            self.warn(node, "identity keys", f"uses {ast.unparse(node)} as a key")
        self.generic_visit(node)

    def is_identity(self, node: ast.Call) -> bool:
        function = node.func
        return ((isinstance(function, ast.Attribute) and function.attr in IDENTITY_METHODS)
                or (isinstance(function, ast.Name) and function.id == "id"))

    def used_as_key(self, node: ast.AST) -> bool:
        """Whether ``node`` ends up in a key position, directly, inside a tuple, or through a name assigned it."""
        child, parent = node, self.parents.get(node)
        while isinstance(parent, (ast.Tuple, ast.BinOp, ast.JoinedStr, ast.FormattedValue)):
            child, parent = parent, self.parents.get(parent)
        if isinstance(parent, ast.Subscript) and parent.slice is child:
            return True
        if isinstance(parent, ast.Dict) and child in parent.keys:
            return True
        if isinstance(parent, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops) \
                and child is parent.left:
            return True
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) \
                and parent.func.attr in KEY_METHODS and child in parent.args[:1]:
            return True
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            return self.name_used_as_key(parent.targets[0].id, parent)
        return False

    def name_used_as_key(self, name: str, assignment: ast.Assign) -> bool:
        scope = self.parents.get(assignment)
        while scope is not None and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            scope = self.parents.get(scope)
        return any(isinstance(use, ast.Name) and use.id == name and isinstance(use.ctx, ast.Load)
                   and self.used_as_key(use) for use in ast.walk(scope or assignment))

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        if any(self.reads_shape(side) for side in sides):
            for side in sides:
                value = self.literal(side)
                if value in self.shapes or value in self.dimensions:
                    self.warn(node, "published shapes", f"compares a shape with {value}, a published workload's")
        self.generic_visit(node)

    def visit_Tuple(self, node: ast.Tuple) -> None:
        value = self.literal(node)
        if value in self.shapes and not isinstance(self.parents.get(node), ast.Compare):
            self.warn(node, "published shapes", f"writes out {value}, a published workload's shape")
        self.generic_visit(node)

    def reads_shape(self, node: ast.AST) -> bool:
        return any(isinstance(part, ast.Attribute) and part.attr in SHAPE_ATTRIBUTES for part in ast.walk(node))

    @staticmethod
    def literal(node: ast.AST):
        try:
            value = ast.literal_eval(node)
        except (ValueError, SyntaxError, TypeError):
            return None
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple) and all(type(item) is int for item in value):
            return value
        return value if type(value) is int else None


def scan_source(source: str, published_shapes: Iterable[tuple[int, ...]] = ()) -> list[ScanWarning]:
    """The warnings for one module's source, in line order."""
    tree = ast.parse(source)
    scanner = _Scanner(list(published_shapes))
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            scanner.parents[child] = parent
    scanner.visit(tree)
    return sorted(set(scanner.warnings), key=lambda warning: (warning.line, warning.pattern, warning.text))


def scan_module(module: Any, published_shapes: Iterable[tuple[int, ...]] = ()) -> list[ScanWarning]:
    """The warnings for a plugin module's own file (none when its source cannot be read)."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return []
    return scan_source(source, published_shapes)
