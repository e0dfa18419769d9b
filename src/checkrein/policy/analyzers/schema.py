"""Argument kinds from a tool's JSON Schema: which strings are paths, URLs, commands, queries or
secrets, by property name, `format` and description, and for the ambiguous name `query` (or
`statement`) by the tool too: it is SQL only when its description or the tool's own name, title
or description says SQL or database, never for a search (`search_documents(query="running in
Shanghai")` is text; `run_sql(query=...)` is SQL). With no word either way it stays SQL, the
conservative reading for the read-only-SQL templates.

Pointers are RFC 6901 (`/options/url`); `*` stands for any array index (`/files/*`,
`/requests/*/url`). `kind_for` looks a concrete pointer up in such a mapping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from checkrein.config.policy import ArgKind

__all__ = ["kind_for", "kind_from_name", "kinds_from_schema", "query_is_sql"]

MAX_SCHEMA_DEPTH = 16
MAX_SCHEMA_PROPERTIES = 2_000

_NAME_KINDS: dict[str, ArgKind] = {
    "path": "path", "paths": "path", "file": "path", "files": "path", "filename": "path",
    "filenames": "path", "filepath": "path", "dir": "path", "dirs": "path", "directory": "path",
    "directories": "path", "folder": "path", "folders": "path", "dirname": "path", "cwd": "path",
    "workdir": "path", "pathname": "path",
    "url": "url", "urls": "url", "uri": "url", "uris": "url", "endpoint": "url", "href": "url",
    "link": "url", "webhook": "url", "callback": "url", "website": "url", "homepage": "url",
    "command": "command", "cmd": "command", "commandline": "command", "shell": "command",
    "cmdline": "command", "script": "command",
    "sql": "query",
    "password": "secret", "passwd": "secret", "passphrase": "secret", "secret": "secret",
    "token": "secret", "apikey": "secret", "credential": "secret", "credentials": "secret",
    "pwd": "secret",
}  # fmt: skip
# Name parts that qualify the kind word before them rather than change it (`file_name`, `url_list`).
_QUALIFIERS = frozenset(
    {"name", "names", "list", "str", "string", "value", "input", "raw", "full", "local", "remote", "target",
     "new", "old", "abs", "absolute", "relative", "src", "dst", "out", "in", "to", "from", "base"}
)  # fmt: skip
_COMPOUNDS: dict[tuple[str, str], ArgKind] = {
    ("api", "key"): "secret",
    ("access", "key"): "secret",
    ("secret", "key"): "secret",
    ("private", "key"): "secret",
    ("auth", "key"): "secret",
    ("client", "secret"): "secret",
    ("base", "url"): "url",
}
_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _tokens(name: str) -> list[str]:
    return [t.lower() for t in _SPLIT.findall(name)]


# `query` and `statement` name SQL in a database tool and a search phrase in a search tool.
_AMBIGUOUS_QUERY = frozenset({"query", "statement", "querystring", "querytext", "querystr"})
_SQL_WORDS = frozenset(
    {"sql", "select", "database", "databases", "db", "table", "tables", "postgres", "postgresql", "psql", "mysql",
     "mariadb", "sqlite", "mssql", "tsql", "oracle", "plsql", "bigquery", "snowflake", "redshift", "duckdb",
     "clickhouse", "cockroachdb", "trino", "presto", "athena", "dml", "ddl", "schema", "rows", "sqlalchemy"}
)  # fmt: skip
# A search or another query language: text, not SQL.
_TEXT_WORDS = frozenset(
    {"search", "words", "word", "keywords", "keyword", "phrase", "natural", "question", "text", "topic", "semantic",
     "web", "lookup", "find", "terms", "term", "prompt", "fulltext", "fts", "bm25", "vector", "embedding", "similar",
     "graphql", "promql", "logql", "cypher", "kql", "lucene", "elasticsearch", "opensearch", "jql", "jmespath", "jq",
     "xpath", "regex", "mongodb", "mongo", "dsl", "google", "bing", "duckduckgo", "brave", "wikipedia", "arxiv"}
)  # fmt: skip


def _query_reading(words: set[str]) -> bool | None:
    """True for SQL, False for text, None when ``words`` say neither (or both)."""
    sql, text = bool(words & _SQL_WORDS), bool(words & _TEXT_WORDS)
    return sql if sql != text else None


def query_is_sql(description: str = "", tool: str = "", name: str = "") -> bool:
    """Whether an argument named `query` (or `statement`, `search_query`, `sql_query`) holds SQL:
    its own name and description first, then the tool's name, title and description; SQL when
    neither says (see the module docstring)."""
    for text in (f"{name} {description}", tool):
        words = set(_tokens(text[:2000])) | set(_tokens(text[:2000].lower()))
        reading = _query_reading(words)
        if reading is not None:
            return reading
    return True


def _kind_from_description(description: str) -> ArgKind | None:
    """Only the leading noun phrase counts: "The URL to fetch" is a URL, "Text to write to the file" is not a path."""
    words = set(_tokens(description[:200])[:6])
    if words & {"url", "uri", "urls", "uris"}:
        return "url"
    if "sql" in words:
        return "query"
    if words & {"file", "directory", "folder", "filepath"} and words & {"path", "paths", "filepath"}:
        return "path"
    if "command" in words and words & {"shell", "bash", "terminal", "run", "execute"}:
        return "command"
    return None


def kind_from_name(name: str, description: str = "", tool: str = "") -> ArgKind | None:
    """The kind a parameter name suggests (`file_name` -> path, `callbackUrl` -> url,
    `access_token` -> secret, `file_id` -> None), falling back on the description. ``tool`` is
    the tool's name, title and description, which decide an ambiguous `query` (`query_is_sql`)."""
    tokens = _tokens(name)
    while tokens and tokens[-1] in _QUALIFIERS and len(tokens) > 1:
        tokens.pop()
    if tokens and (tokens[-1] in _AMBIGUOUS_QUERY or "".join(tokens) in _AMBIGUOUS_QUERY):
        return "query" if query_is_sql(description, tool, name) else None
    if tokens:
        if len(tokens) >= 2 and (tokens[-2], tokens[-1]) in _COMPOUNDS:
            return _COMPOUNDS[(tokens[-2], tokens[-1])]
        kind = _NAME_KINDS.get(tokens[-1])
        if kind is not None:
            return kind
        if "".join(tokens) in _NAME_KINDS:
            return _NAME_KINDS["".join(tokens)]
    if description:
        return _kind_from_description(description)
    return None


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _resolve_ref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return schema
        node = node[part]
    return node if isinstance(node, Mapping) else schema


def _walk(schema: Any, pointer: str, name: str, root: Mapping[str, Any], depth: int, out: dict[str, ArgKind], tool: str = "") -> None:
    if not isinstance(schema, Mapping) or depth > MAX_SCHEMA_DEPTH or len(out) > MAX_SCHEMA_PROPERTIES:
        return
    schema = _resolve_ref(schema, root)
    for combinator in ("allOf", "anyOf", "oneOf"):
        branches = schema.get(combinator)
        if isinstance(branches, list):
            for b in branches[:32]:
                _walk(b, pointer, name, root, depth + 1, out, tool)
    if pointer and pointer not in out:
        fmt = schema.get("format")
        kind: ArgKind | None = None
        if fmt in ("uri", "uri-reference", "iri", "iri-reference", "url"):
            kind = "url"
        elif fmt == "password":
            kind = "secret"
        elif name:
            description = schema.get("description")
            kind = kind_from_name(name, description if isinstance(description, str) else "", tool)
        if kind is not None:
            out[pointer] = kind
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, sub in props.items():
            if isinstance(key, str):
                _walk(sub, f"{pointer}/{_escape(key)}", key, root, depth + 1, out, tool)
    items = schema.get("items")
    if isinstance(items, Mapping):
        # An array of paths is itself a path-typed argument: its items inherit the array's name.
        item_kind = out.get(pointer)
        _walk(items, f"{pointer}/*", name, root, depth + 1, out, tool)
        if item_kind is not None and f"{pointer}/*" not in out:
            out[f"{pointer}/*"] = item_kind
    elif isinstance(items, list):
        for it in items[:32]:
            _walk(it, f"{pointer}/*", name, root, depth + 1, out, tool)


def kinds_from_schema(input_schema: Mapping[str, Any], tool: str = "") -> dict[str, ArgKind]:
    """JSON pointer -> kind for every property of ``input_schema`` whose kind can be inferred
    (nested objects, arrays as `/*`, `$ref` to local definitions, `allOf/anyOf/oneOf`). ``tool``
    is the tool's name, title and description (see `query_is_sql`). Never raises."""
    out: dict[str, ArgKind] = {}
    if isinstance(input_schema, Mapping):
        _walk(input_schema, "", "", input_schema, 0, out, tool if isinstance(tool, str) else "")
    return out


def kind_for(pointer: str, kinds: Mapping[str, ArgKind]) -> ArgKind | None:
    """The kind of the value at a concrete ``pointer``: exact match, then with array indices read
    as `*`, then a top-level name without the leading `/` (as config `args` tables use)."""
    if not kinds:
        return None
    hit = kinds.get(pointer)
    if hit is not None:
        return hit
    parts = pointer.split("/")
    if any(p.isdigit() for p in parts):
        hit = kinds.get("/".join("*" if p.isdigit() else p for p in parts))
        if hit is not None:
            return hit
    if len(parts) == 2:
        return kinds.get(parts[1].replace("~1", "/").replace("~0", "~"))
    return None
