"""Make ``memory.jsonl``: a knowledge graph written by the reference MCP memory server.

The fixture is the file that ``@modelcontextprotocol/server-memory`` itself writes, built
through tool calls only, with the official MCP Python SDK as the client
(:func:`mcp.client.stdio.stdio_client` and :class:`mcp.ClientSession`), so that the
importer's tests read the real format and never need node or the network.

The graph is a small personal memory as an agent keeps it: a person, her project, an
employer, places, a preference, a colleague with a non-ASCII name, an entity with no
observations, relations with ``snake_case`` and spaced types, a long quoted observation and a
fake Anthropic key (for redaction tests). After creating it, the script adds observations (one
twice, to show the server drops the repeat), deletes an observation and deletes an entity
(the server rewrites the whole file each time, and drops the entity's relations with it).

Run from the repository root, with the server installed outside the repository (see
README.md beside this file for the exact, pinned commands)::

    .venv/bin/python tests/data/imports/mcp-memory/make_memory_jsonl.py \\
        --server /tmp/mk-mcp/node_modules/.bin/mcp-server-memory \\
        --out tests/data/imports/mcp-memory/memory.jsonl

The server writes into a fresh temporary directory (``MEMORY_FILE_PATH``, an absolute path);
its file is then copied byte for byte to ``--out``. At the end the script checks that the
file, parsed, equals what the server's ``read_graph`` tool returns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

#: Obviously fake, in the shape of an Anthropic API key (``sk-ant-api03-``, 93 chars, ``AA``).
FAKE_KEY = (
    "sk-ant-api03-"
    "FAKEfixtureKEYnotREAL0"
    "BgW5OW_tGm_LzBkpG93UXJjO190TjhYD9E7oh79Pf50TW_z5wyMkf-aZCCybydy9Wn"
    "IkK_M"
    "AA"
)

LONG_OBSERVATION = (
    'Said in the 2025-11-20 retro: "If Heron slips past March, we lose the pilot customer, so '
    'cut the reporting module before we cut the migration tests"; she wants the migration '
    "tests kept green on every merge, would rather ship a smaller release on time than a "
    "complete one late, and asked that any schedule risk be raised in the Monday stand-up "
    "rather than in a direct message, because the whole team should see trade-offs as soon "
    "as they appear."
)

ENTITIES: list[dict[str, Any]] = [
    {
        "name": "Ada Moreau",
        "entityType": "person",
        "observations": [
            "allergic to hazelnuts",
            "prefers answers in bullet points",
            "works remotely from Lyon on Fridays",
            "uses British spelling in documents",
        ],
    },
    {
        "name": "Project Heron",
        "entityType": "project",
        "observations": [
            "deadline is 2026-03-14",
            "uses PostgreSQL 16",
            "repository is heron-core on the internal GitLab",
        ],
    },
    {
        "name": "Northwind Analytics",
        "entityType": "organization",
        "observations": ["Ada's employer since 2021", "headquartered in Paris"],
    },
    {
        "name": "Lyon",
        "entityType": "place",
        "observations": ["Ada's home city"],
    },
    {
        "name": "東京オフィス",
        "entityType": "place",
        "observations": ["Northwind's Tokyo office, UTC+9", "hosts the Heron data team"],
    },
    {
        "name": "Zoë Łukasiewicz",
        "entityType": "person",
        "observations": ["data engineer on Project Heron", "based in the Tokyo office"],
    },
    {
        "name": "Dark mode",
        "entityType": "preference",
        "observations": [],
    },
    {
        "name": "Old laptop",
        "entityType": "device",
        "observations": ["ThinkPad X1 Carbon Gen 6, retired in 2025"],
    },
]

RELATIONS: list[dict[str, str]] = [
    {"from": "Ada Moreau", "to": "Project Heron", "relationType": "leads"},
    {"from": "Ada Moreau", "to": "Northwind Analytics", "relationType": "works_at"},
    {"from": "Ada Moreau", "to": "Lyon", "relationType": "lives_in"},
    {"from": "Ada Moreau", "to": "Dark mode", "relationType": "prefers"},
    {"from": "Ada Moreau", "to": "Old laptop", "relationType": "owned"},
    {"from": "Project Heron", "to": "東京オフィス", "relationType": "located_in"},
    {"from": "Zoë Łukasiewicz", "to": "Project Heron", "relationType": "contributes to"},
    {"from": "Northwind Analytics", "to": "Project Heron", "relationType": "funds"},
]


def _payload(result: CallToolResult) -> Any:
    """The tool's structured result, or its text; fail on a tool error."""
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    if result.is_error:
        raise RuntimeError(f"tool error: {text}")
    return result.structured_content if result.structured_content is not None else text


async def _call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    payload = _payload(await session.call_tool(tool, arguments))
    print(f"{tool}: {json.dumps(payload, ensure_ascii=False)}", file=sys.stderr)
    return payload


async def build(server: str, memory_file: Path) -> dict[str, Any]:
    """Drive the server through the graph's history; return its final ``read_graph``."""
    params = StdioServerParameters(
        command=server,
        env={"MEMORY_FILE_PATH": str(memory_file), "PATH": os.environ.get("PATH", "")},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        print(f"server: {init.server_info.name} {init.server_info.version}", file=sys.stderr)
        tools = {t.name for t in (await session.list_tools()).tools}
        print(f"tools: {sorted(tools)}", file=sys.stderr)

        await _call(session, "create_entities", {"entities": ENTITIES})
        await _call(session, "create_relations", {"relations": RELATIONS})

        # Later in the conversation, the agent learns more.
        await _call(
            session,
            "add_observations",
            {
                "observations": [
                    {"entityName": "Ada Moreau", "contents": [LONG_OBSERVATION]},
                    {
                        "entityName": "Project Heron",
                        "contents": [
                            f"staging deploy key pasted by Ada on 2026-01-09: {FAKE_KEY}",
                            "staging database is heron-stg.internal",
                        ],
                    },
                ]
            },
        )
        # The same observation a second time: the server adds nothing.
        again = await _call(
            session,
            "add_observations",
            {
                "observations": [
                    {"entityName": "Ada Moreau", "contents": ["allergic to hazelnuts"]},
                ]
            },
        )
        assert again["results"][0]["addedObservations"] == [], again
        # A correction, and a device that no longer matters (its relation goes with it).
        await _call(
            session,
            "delete_observations",
            {
                "deletions": [
                    {
                        "entityName": "Ada Moreau",
                        "observations": ["uses British spelling in documents"],
                    },
                ]
            },
        )
        await _call(session, "delete_entities", {"entityNames": ["Old laptop"]})

        graph: dict[str, Any] = _payload(await session.call_tool("read_graph", {}))
        return graph


def check(path: Path, graph: dict[str, Any]) -> None:
    """The file, parsed line by line, is exactly the graph ``read_graph`` returned."""
    entities: list[dict[str, Any]] = []
    relations: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        item = json.loads(line)
        kind = item.pop("type")
        {"entity": entities, "relation": relations}[kind].append(item)
    assert entities == graph["entities"], (entities, graph["entities"])
    assert relations == graph["relations"], (relations, graph["relations"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="path of the mcp-server-memory bin")
    parser.add_argument("--out", required=True, type=Path, help="where to put memory.jsonl")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mcp-memory-") as tmp:
        memory_file = Path(tmp) / "memory.jsonl"
        graph = anyio.run(build, args.server, memory_file)
        check(memory_file, graph)
        shutil.copyfile(memory_file, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
