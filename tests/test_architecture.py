"""The import contract (SPEC.md section 10), read from the source with ``ast``, not by importing:
hooks import only schema and redact; redaction sits below hooks and daemon behind a public face;
SQL lives only in schema and daemon/store (search may read); only the store opens connections and
touches its protected members; no private name crosses modules; the job folders stack in layers;
no module outside the store imports one of its modules (it has one door); and no module
imports another that imports it back."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Repository folder -> the package it is installed as.
PACKAGES = {
    "schema": "wsd.schema",
    "redact": "wsd.redact",
    "hooks": "wsd.hooks",
    "daemon": "wsd.daemon",
}
#: Lower layers never import higher ones; equal ranks (curation, workspace) never each other.
LAYERS = {
    "wsd.schema": 0,
    "wsd.redact": 1,
    "wsd.hooks": 2,
    "wsd.daemon.runtime": 3,
    "wsd.daemon.store": 4,
    # Below memory: every erasure holds litestream off (memory/forget/hold.py).
    "wsd.daemon.replica": 5,
    "wsd.daemon.memory": 6,
    "wsd.daemon.curation": 7,
    "wsd.daemon.workspace": 7,
    # Many machines: ingests for curation, seals what it would take (SPEC.md section 11).
    "wsd.daemon.machines": 8,
    "wsd.daemon.ops": 9,
    "wsd.daemon.standin": 10,
    "wsd.daemon": 11,  # __main__: `python -m wsd.daemon` is `wsd`
}
SQL = re.compile(
    r"^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|PRAGMA|ATTACH|DETACH|BEGIN"
    r"|COMMIT|ROLLBACK|VACUUM|WITH)\b"
)
#: A statement that writes; search may create temp objects on its read-only connection.
WRITE_SQL = re.compile(
    r"\b(INSERT|UPDATE|DELETE|REPLACE|DROP|ALTER|ATTACH|DETACH|VACUUM)\b"
    r"|\bCREATE\b(?!\s+(VIRTUAL\s+)?TABLE\s+temp\.)|^\s*PRAGMA\s+\w+\s*="
)


def _modules() -> Iterator[tuple[str, Path, ast.Module]]:
    """(module name, file, syntax tree) of every module of our packages."""
    for folder, package in PACKAGES.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            yield name, path, ast.parse(path.read_text(encoding="utf-8"), str(path))


MODULES = {name: (path, tree) for name, path, tree in _modules()}


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Line numbers inside ``if TYPE_CHECKING:`` blocks (imports there are for mypy only)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(name: str, tree: ast.Module) -> set[str]:
    """Absolute names this module imports at run time (function-level imports included)."""
    skip = _type_checking_only(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.rsplit(".", node.level)[0]
                base = f"{package}.{base}" if base else package
            # `from wsd.daemon.store import actions` imports the module wsd.daemon.store.actions
            # (and, as every import of a submodule does, runs the package's __init__ first,
            # which is not drawn: only a name taken from the package itself is an edge to it)
            submodules = {f"{base}.{a.name}" for a in node.names} & MODULES.keys()
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(base)
    return found


def _internal(imported: set[str]) -> set[str]:
    return {m for m in imported if m in MODULES}


def _layer(module: str) -> str:
    return max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)


GRAPH = {name: _internal(_imports(name, tree)) - {name} for name, (_p, tree) in MODULES.items()}


def test_hooks_and_schema_import_only_schema_apsw_and_the_standard_library() -> None:
    """The hook path stays light: hooks import schema, redact, apsw and the standard library only
    (and the SDK helper the Agent SDK it is registered with)."""
    allowed_roots = set(sys.stdlib_module_names) | {"apsw", "__future__"}
    for name, (_path, tree) in MODULES.items():
        if not name.startswith(("wsd.hooks", "wsd.schema", "wsd.redact")):
            continue
        for imported in _imports(name, tree):
            if imported.startswith("wsd."):
                ok = imported.startswith(("wsd.schema", "wsd.redact")) or (
                    name.startswith("wsd.hooks") and imported.startswith("wsd.hooks")
                )
            else:
                root = imported.split(".")[0]
                ok = root in allowed_roots or imported == "wsd"
                ok = ok or (name == "wsd.hooks.sdk" and root == "claude_agent_sdk")
            assert ok, f"{name} imports {imported}"


def test_redact_imports_neither_hooks_nor_daemon() -> None:
    """wsd.redact sits below hooks and daemon: it imports nothing of either, nor apsw."""
    for name, (_path, tree) in MODULES.items():
        if not name.startswith("wsd.redact"):
            continue
        for imported in _imports(name, tree) | _type_checking_imports(tree):
            assert not imported.startswith(("wsd.hooks", "wsd.daemon", "apsw")), (
                f"{name} imports {imported}"
            )


def _type_checking_imports(tree: ast.Module) -> set[str]:
    """Absolute names imported inside ``if TYPE_CHECKING:`` blocks (not level-relative ones)."""
    skip = _type_checking_only(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) not in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def _private_uses(name: str, tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, what) for each private name of another of our modules this module uses:
    ``from x import _y``, ``import x._y``, and ``x._y`` with ``x`` an imported module of ours
    (dunder names such as ``__future__`` and ``__doc__`` are not private)."""

    def private(part: str) -> bool:
        return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))

    def ours(module: str) -> bool:  # not the standard library's (``import _json``)
        return module.split(".")[0] == "wsd"

    modules: set[str] = set()  # local names bound to one of our modules
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if ours(alias.name) and any(private(part) for part in alias.name.split(".")):
                    yield node.lineno, f"import {alias.name}"
                if alias.asname and alias.name in MODULES:
                    modules.add(alias.asname)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            mine = bool(node.level) or ours(base)
            if mine and any(private(part) for part in base.split(".")):
                yield node.lineno, f"from {base} import ..."
            for alias in node.names:
                if mine and private(alias.name):
                    yield node.lineno, f"from {base} import {alias.name}"
                elif f"{base}.{alias.name}" in MODULES:
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and private(node.attr)
        ):
            yield node.lineno, f"{node.value.id}.{node.attr}"


def test_no_private_name_is_used_across_modules() -> None:
    """In every package (schema, redact, hooks, daemon) no module imports or reads another
    module's private name."""
    for name, (path, tree) in MODULES.items():
        for line, what in _private_uses(name, tree):
            raise AssertionError(f"{path.relative_to(REPO)}:{line}: {what}")


def test_the_private_name_check_sees_private_names() -> None:
    """The check above is not vacuous: it finds each form of a private use."""
    code = (
        "from wsd.redact.engine import _folded\n"
        "import wsd.redact._hidden\n"
        "from wsd.redact import rules\n"
        "rules._rx(0)\n"
        "from __future__ import annotations\n"
    )
    found = [what for _line, what in _private_uses("wsd.hooks.x", ast.parse(code))]
    assert found == [
        "from wsd.redact.engine import _folded",
        "import wsd.redact._hidden",
        "rules._rx",
    ]


def test_hooks_and_daemon_import_only_the_public_face_of_redact() -> None:
    """Hooks and daemon import only names of wsd.redact's ``__all__``, never one of its modules."""
    init = MODULES["wsd.redact"][1]
    exported = next(
        ast.literal_eval(node.value)
        for node in init.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
    )
    for name, (path, tree) in MODULES.items():
        if name.startswith("wsd.redact"):
            continue
        for node in ast.walk(tree):
            where = f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("wsd.redact"), f"{where}: {alias.name}"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wsd.redact"):
                assert node.module == "wsd.redact", f"{where}: from {node.module}"
                for alias in node.names:
                    assert alias.name in exported, f"{where}: {alias.name} is not exported"


def test_no_bare_top_level_imports_of_our_packages() -> None:
    """Every import of our code goes through the wsd namespace (bare `daemon` and `schema` are
    other projects' names, and would only work from a checkout)."""
    for name, (_path, tree) in MODULES.items():
        for imported in _imports(name, tree):
            assert imported.split(".")[0] not in PACKAGES, f"{name} imports bare {imported}"


def _sql_strings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """String constants (f-strings joined) that read as SQL statements."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value
                for v in node.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
        else:
            continue
        if SQL.match(text) and not text.lstrip().startswith(("SELECT a", "WITH a")):
            yield node.lineno, text


def test_sql_lives_only_in_schema_and_the_store() -> None:
    """Outside schema/ and daemon/store/ no module holds SQL, except memory/search, which only
    reads."""
    for name, (path, tree) in MODULES.items():
        if name.startswith(("wsd.schema", "wsd.daemon.store")):
            continue
        for line, text in _sql_strings(tree):
            where = f"{path.relative_to(REPO)}:{line}: {text.strip()[:60]!r}"
            assert name.startswith("wsd.daemon.memory.search"), f"SQL outside the store: {where}"
            assert not WRITE_SQL.search(text), f"search may only read: {where}"


def test_the_sql_check_sees_sql() -> None:
    """The check above is not vacuous: it finds the statements of the store and of schema."""
    found = {name for name, (_p, tree) in MODULES.items() if any(_sql_strings(tree))}
    assert {"wsd.daemon.store.ledger", "wsd.daemon.store.actions", "wsd.schema.transcript"} <= found


def test_no_connection_is_handed_out_of_the_store() -> None:
    """In the daemon only the store opens connections (search keeps its own read-only one)."""
    allowed = ("wsd.schema", "wsd.hooks", "wsd.daemon.store", "wsd.daemon.memory.search")
    for name, (path, tree) in MODULES.items():
        if name.startswith(allowed):
            continue
        assert STORE_CONNECTIONS not in GRAPH[name], f"{name} imports {STORE_CONNECTIONS}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                called = node.func.attr
                bad = called in ("connect", "Connection") and ast.unparse(node.func.value) in (
                    "schema",
                    "apsw",
                )
                assert not bad, f"{path.relative_to(REPO)}:{node.lineno} calls {called}()"


STORE = "wsd.daemon.store"
STORE_CONNECTIONS = "wsd.daemon.store.connections"
#: Repository folders of code that is not installed but uses the store all the same.
TOOL_FOLDERS = ("bench", "soak")


def _store_submodule_imports(name: str, tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module) for each module inside wsd.daemon.store that this module imports:
    ``import wsd.daemon.store.x``, ``from wsd.daemon.store.x import y`` and ``from
    wsd.daemon.store import x`` with ``x`` a module (relative forms included)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(STORE + "."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.rsplit(".", node.level)[0]
                base = f"{package}.{base}" if base else package
            if base.startswith(STORE + "."):
                yield node.lineno, base
            elif base == STORE:
                for alias in node.names:
                    if f"{base}.{alias.name}" in MODULES:
                        yield node.lineno, f"{base}.{alias.name}"


def _tool_modules() -> Iterator[tuple[str, Path, ast.Module]]:
    """(module name, file, syntax tree) of every module of bench/ and soak/."""
    for folder in TOOL_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            yield name, path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def test_the_store_has_one_door() -> None:
    """Outside daemon/store no module (of schema, redact, hooks, daemon, bench or soak)
    imports a module inside it: everything goes through ``from wsd.daemon.store import X``."""
    everything = [(n, p, t) for n, (p, t) in MODULES.items()] + list(_tool_modules())
    for name, path, tree in everything:
        if name == STORE or name.startswith(STORE + "."):
            continue
        for line, module in _store_submodule_imports(name, tree):
            raise AssertionError(f"{path.relative_to(REPO)}:{line} imports {module}")


def test_the_door_check_sees_imports_of_the_stores_modules() -> None:
    """The check above is not vacuous: it finds each form of import in the store's own
    modules (which import one another by module), and in code written each way."""
    found = {
        module
        for name, (_p, tree) in MODULES.items()
        if name.startswith(STORE + ".")
        for _line, module in _store_submodule_imports(name, tree)
    }
    assert {STORE_CONNECTIONS, "wsd.daemon.store.records", "wsd.daemon.store.turns"} <= found
    code = (
        "import wsd.daemon.store.ledger\n"
        "from wsd.daemon.store.records import Turn\n"
        "from wsd.daemon.store import Store, actions\n"
        "from . import rebuild\n"
        "from .store import Store\n"
    )
    seen = [m for _line, m in _store_submodule_imports("wsd.daemon.store.x", ast.parse(code))]
    assert seen == [
        "wsd.daemon.store.ledger",
        "wsd.daemon.store.records",
        "wsd.daemon.store.actions",
        "wsd.daemon.store.rebuild",
        "wsd.daemon.store.store",
    ]


def _protected_store_members() -> set[str]:
    """Protected names the store's classes define: methods, and attributes set on self."""
    found: set[str] = set()
    for name, (_path, tree) in MODULES.items():
        if not (name == STORE or name.startswith(STORE + ".")):
            continue
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for node in ast.walk(cls):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.add(node.name)
                elif isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self":
                    found.add(node.attr)
    return {n for n in found if n.startswith("_") and not n.startswith("__")}


def test_no_protected_member_of_the_store_is_used_outside_it() -> None:
    """Outside daemon/store no module touches a store object's protected member (``store._db``)."""
    protected = _protected_store_members()
    assert {"_db", "_maintained_at"} <= protected  # the check sees what it guards
    for name, (path, tree) in MODULES.items():
        if name == STORE or name.startswith(STORE + "."):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in protected:
                owner = ast.unparse(node.value)
                where = f"{path.relative_to(REPO)}:{node.lineno}"
                assert owner in ("self", "cls"), f"{where} uses {owner}.{node.attr}"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_layers(module: str) -> None:
    """runtime < store < replica < memory < curation | workspace < machines < ops < standin,
    schema < redact <
    hooks
    below them all: a module imports its own layer or lower ones only."""
    mine = LAYERS[_layer(module)]
    for imported in GRAPH[module]:
        theirs, other = LAYERS[_layer(imported)], _layer(imported)
        same_rank_sibling = theirs == mine and other != _layer(module)
        assert theirs <= mine and not same_rank_sibling, f"{module} imports {imported}"


def test_no_import_cycles() -> None:
    """No module imports (directly or through others) a module that imports it back."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(GRAPH):
        if node not in state:
            visit(node)


def test_functions_stay_readable() -> None:
    """No function over 80 lines (aim: well under). A module has no line limit here: a
    count invites squeezing to fit it; a long module is a question for review instead,
    "what concept moves out?" (README: House style)."""
    for name, (_path, tree) in MODULES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                assert length <= 80, f"{name}.{node.name}: {length} lines"


#: The stages of a batch inside curation/, lowest first: a stage imports only lower ones
#: (taking and rendering the request, and the Bridge, are the ground; judging reads what the
#: request showed; committing records what was judged; the pipeline strings them together;
#: the economy lane and the loop use the pipeline, and the rebuild runs it over the history).
CURATION_FLOORS = {
    "wsd.daemon.curation.request": 0,
    "wsd.daemon.curation.bridge": 0,
    "wsd.daemon.curation.judging": 1,
    "wsd.daemon.curation.commit": 2,
    "wsd.daemon.curation.pipeline": 3,
    "wsd.daemon.curation.economy": 4,
    "wsd.daemon.curation.loop": 5,
    "wsd.daemon.curation.rebuild": 5,
}


def _stage(module: str) -> str | None:
    return next((s for s in CURATION_FLOORS if module == s or module.startswith(s + ".")), None)


def test_every_curation_module_is_in_a_stage() -> None:
    """curation/ holds the stages of a batch and nothing beside them (its __init__ is the map)."""
    loose = [m for m in GRAPH if m.startswith("wsd.daemon.curation.") and _stage(m) is None]
    assert loose == []


def _climbs(module: str, graph: dict[str, set[str]]) -> list[str]:
    """What ``module`` imports from a stage not below its own (a sibling or a higher one)."""
    mine = _stage(module)
    assert mine is not None
    out = []
    for imported in sorted(graph[module]):
        theirs = _stage(imported)
        if (
            theirs is not None
            and theirs != mine
            and CURATION_FLOORS[theirs] >= CURATION_FLOORS[mine]
        ):
            out.append(imported)
    return out


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if _stage(m)))
def test_the_stages_of_a_batch_stack(module: str) -> None:
    """request | bridge < judging < commit < pipeline < economy < loop | rebuild: a stage
    imports its own folder or lower stages only, never a sibling of its floor."""
    assert _climbs(module, GRAPH) == []


def test_the_stage_check_sees_a_stage_importing_upward() -> None:
    """The check above is not vacuous: a judging module importing the loop, or the bridge
    importing the request (a sibling), is found; the pipeline importing its stages is not."""
    fake = {
        "wsd.daemon.curation.judging.x": {"wsd.daemon.curation.loop.worker"},
        "wsd.daemon.curation.bridge.x": {"wsd.daemon.curation.request.batch"},
        "wsd.daemon.curation.pipeline": set(GRAPH["wsd.daemon.curation.pipeline"]),
    }
    assert _climbs("wsd.daemon.curation.judging.x", fake) == ["wsd.daemon.curation.loop.worker"]
    assert _climbs("wsd.daemon.curation.bridge.x", fake) == ["wsd.daemon.curation.request.batch"]
    assert _climbs("wsd.daemon.curation.pipeline", fake) == []
    assert {_stage(m) for m in fake["wsd.daemon.curation.pipeline"]} >= {
        "wsd.daemon.curation.request",
        "wsd.daemon.curation.judging",
        "wsd.daemon.curation.commit",
    }
