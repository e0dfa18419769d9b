"""`sql`: SQL injection and statement classification.

A `query` argument that is a SQL statement is parsed with `sqlglot` and checked structurally:
stacked statements, `OR` tautologies (any constant operand: `1=1`, `1 BETWEEN 0 AND 2`,
`1 IN (1)`, `NOT 0`, `'a'||'b'='ab'`, and `col=col`), `UNION` extraction of constants or system
catalogs, time-based probes, dangerous functions and statements (`load_extension`, `ATTACH`,
`dblink`, `OPENROWSET`, `xp_cmdshell`, `sys_exec`, `COPY ... PROGRAM`), comments hidden inside
keywords; a statement that does not parse is suspicious. Any other string (including a `query`
that is not SQL, like a search phrase) is checked for injection fragments only: a quote that
breaks out into boolean logic, a comment or a stacked statement, `UNION SELECT`, time probes,
dangerous functions. `classify_sql` serves the read-only-SQL constraint: read-only means no side
effect, judged on the parsed tree (`side_effect` says which), never by the first keyword.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence, Set
from typing import Any, Literal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from checkrein.config.policy import ArgKind
from checkrein.policy.decision import Finding

from .api import ScanContext, char_class
from .evidence import excerpt
from .gated import AnyMatch

__all__ = ["TRIGGERS", "SqlClass", "check_sql", "classify_sql", "may_find", "normalize_sql", "side_effect"]

NAME = "sql"


class _QuietFallback(logging.Filter):
    """sqlglot warns (with the statement text) each time it falls back to an opaque Command; on
    hostile input that would copy attack strings into the logs at warning level."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "unsupported syntax" not in str(record.msg)


logging.getLogger("sqlglot").addFilter(_QuietFallback())
SqlClass = Literal["read", "write", "ddl", "unknown"]
MAX_PARSE_CHARS = 65_536
"""Longer statements are not parsed (classified `unknown`), which keeps parsing cost bounded."""

_SQL_START = frozenset(
    {
        "select", "with", "insert", "update", "delete", "merge", "create", "drop", "alter",
        "truncate", "grant", "revoke", "replace", "exec", "execute", "call", "declare", "show",
        "describe", "explain", "pragma", "set", "use", "begin", "values", "upsert", "copy", "load",
        "rename", "comment", "analyze", "vacuum", "attach", "detach", "waitfor", "lock", "unlock",
    }
)  # fmt: skip
_TIME_FUNCS = frozenset({"sleep", "pg_sleep", "benchmark", "pg_sleep_for", "pg_sleep_until", "randomblob"})
_DANGEROUS_FUNCS = frozenset(
    {
        "load_file", "xp_cmdshell", "sp_oacreate", "sp_execute_external_script", "lo_import",
        "lo_export", "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "extractvalue", "updatexml",
        "utl_inaddr.get_host_address", "utl_http.request", "dbms_pipe.receive_message",
        "dbms_lock.sleep", "load_extension", "sys_exec", "sys_eval", "dblink", "dblink_exec",
        "dblink_connect", "dblink_send_query", "openrowset", "opendatasource", "openquery", "writefile",
        "readfile", "edit", "fts3_tokenizer", "lo_from_bytea", "lo_put", "pg_stat_file", "pg_execute_server_program", "sp_execute", "sp_executesql", "sp_makewebtask",
        "xp_dirtree", "xp_fileexist", "xp_regread", "xp_regwrite", "utl_file.fopen", "dbms_java.runjava",
        "dbms_scheduler.create_job", "dbms_xmlquery.newcontext", "http_get", "http_post", "sys_bineval",
        "lib_mysqludf_sys_info", "shell", "exec_shell",
    }
)  # fmt: skip
# Functions with a side effect (sequence, session, lock, large object, server or replication
# state), which make a SELECT anything but read-only.
_SIDE_EFFECT_FUNCS = frozenset(
    {
        "nextval", "setval", "set_config", "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf",
        "pg_rotate_logfile", "pg_switch_wal", "pg_switch_xlog", "pg_create_restore_point", "pg_promote",
        "pg_start_backup", "pg_stop_backup", "pg_backup_start", "pg_backup_stop", "pg_stat_reset",
        "pg_stat_reset_shared", "pg_stat_reset_single_table_counters", "pg_notify", "pg_file_write",
        "pg_file_rename", "pg_file_unlink", "pg_logdir_ls", "pg_replication_origin_create",
        "pg_create_logical_replication_slot", "pg_create_physical_replication_slot",
        "pg_drop_replication_slot", "pg_logical_slot_get_changes", "pg_wal_replay_pause",
        "pg_wal_replay_resume", "pg_import_system_collations", "lo_unlink", "lo_create", "lo_creat",
        "lo_import", "lo_export", "lo_from_bytea", "lo_put", "lo_truncate", "dblink", "dblink_exec",
        "dblink_connect", "dblink_disconnect", "dblink_send_query", "txid_current", "pg_current_xact_id",
        "get_lock", "release_lock", "release_all_locks", "sleep", "pg_sleep", "pg_sleep_for",
        "pg_sleep_until", "benchmark", "load_file", "load_extension", "writefile", "edit",
        "sys_exec", "sys_eval", "xp_cmdshell", "openrowset", "opendatasource", "openquery",
        "query_to_xml", "cursor_to_xml", "table_to_xml", "database_to_xml", "schema_to_xml",
    }
)  # fmt: skip
_SIDE_EFFECT_PREFIXES = ("pg_advisory", "pg_try_advisory", "dbms_", "utl_", "sp_", "xp_", "lo_", "dblink_", "pg_file_", "pg_replication_", "pg_logical_")
# Calls that stay cheap only for small arguments: a literal bound past this is a denial of service.
_EXPENSIVE_CALLS = frozenset({"generate_series", "range", "repeat", "replicate", "space", "lpad", "rpad", "randomblob", "zeroblob", "sequence", "unnest"})
MAX_CHEAP_SIZE = 1_000_000
_SYSTEM_CATALOGS = (
    "information_schema", "mysql.user", "pg_catalog", "pg_shadow", "pg_user", "pg_authid",
    "sqlite_master", "sqlite_schema", "sys.", "sysobjects", "syscolumns", "sysusers", "master..",
    "all_tables", "all_users", "user_tables", "dba_users", "user$", "msysobjects",
)  # fmt: skip

# Fragments over `normalize_sql` output (lowercase, comments blanked, whitespace collapsed).
# Every quantifier is bounded and no group repeats another quantified group: linear time.
_OPERAND = r"(?:'[^']{0,40}'|\"[^\"]{0,40}\"|[\w.@]{1,40}|\(\s?'[^']{0,40}')"
_FRAGMENTS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("union_select", "UNION SELECT extraction", re.compile(r"\bunion(?: all| distinct)? ?\(? ?select\b")),
    (
        "time_probe",
        "time-based probe",
        re.compile(
            r"\b(?:sleep|pg_sleep|benchmark)\( ?[\d'\"(]|\bwaitfor (?:delay|time) ?['\"]|\bdbms_lock\.sleep\b"
            r"|\bdbms_pipe\.receive_message\b|\brandomblob\( ?\d{6}"
        ),
    ),
    (
        "tautology",
        "quote breaks out into boolean logic",
        re.compile(
            r"['\"`]\){0,3} ?(?:or|and|xor|\|\||&&)\b ?(?:\( ?){0,3}(?:" + _OPERAND + r" ?(?:\) ?){0,3}(?:=|<>|!=|<=?|>=?|\blike\b|\bis\b|\bin ?\(|[-+*/^&|%] ?['\"])"
            r"|true\b|false\b|not\b ?[\d'(]|\d+ ?(?:--|#|/\*|;|$)|(?:sleep|benchmark|pg_sleep)\(|exists ?\(|\( ?select\b"
            r"|" + _OPERAND + r" (?:not )?between\b|" + _OPERAND + r" (?:not )?in ?\()"
        ),
    ),
    (
        "tautology",
        "constant comparison after AND/OR",
        re.compile(
            r"\b(?:or|and)\b ?\(? ?(?:(\d{1,12}) ?(?:=|<>|!=|<|>) ?\(? ?\d{1,12}|'(\w{0,20})' ?= ?'\w{0,20}'?|\( ?select\b"
            r"|\d{1,12} (?:not )?between \d{1,12} and \d{1,12}|\d{1,12} (?:not )?in ?\( ?\d|not ?\(? ?(?:0|false|null)\b"
            r"|'\w{0,20}' ?(?:\|\||\+) ?'\w{0,20}' ?= ?'|concat ?\( ?'[^']{0,20}' ?, ?'[^']{0,20}' ?\) ?= ?'"
            r"|([a-z_]\w{0,30}) ?= ?\3\b(?! ?[-+*/.(]))"
        ),
    ),
    ("comment_after_quote", "quote closed and the rest commented out", re.compile(r"['\"`]\)* ?(?:= ?\d{0,6} ?)?(?:--|#|/\*|;\x00)[^\n]{0,4}$")),
    (
        "stacked_statements",
        "stacked statement after a quote or semicolon",
        re.compile(
            r"(?:['\"`)] ?;|; ?(?=(?:drop|truncate|shutdown|declare|exec|execute|insert|delete|update|create|alter|grant|select|waitfor)\b))"
            r" ?(?:drop (?:table|database|schema|user|view|index|procedure|function)\b|truncate\b|shutdown\b"
            r"|declare @|exec(?:ute)?\b|insert into\b|delete from\b|update [\w.\"`\[\]]{1,60} set\b"
            r"|create (?:table|user|login|database|procedure|function)\b|alter (?:table|user|login|database)\b"
            r"|grant\b|select\b|waitfor\b)"
        ),
    ),
    (
        "quote_clause",
        "quote closed and a SQL clause appended",
        re.compile(
            r"['\"`]\)* ?(?:(?:order|group) by \d|having \d|procedure analyse|into (?:out|dump)file\b"
            r"|(?:create|drop|alter) (?:user|table|database|function|procedure)\b|insert into\b|delete from\b|(?:and|or) \d{1,12} ?[=<>]|(?:and|or) (?:select|sleep|benchmark|extractvalue|updatexml|convert|cast|ascii|substring|mid|char|exists|\(select)\b)"
        ),
    ),
    (
        "leading_clause",
        "value starts with a SQL clause that extends the surrounding query",
        re.compile(
            r"^[\s'\"`)]{0,6}(?:(?:and|or|xor|&&|\|\|) ?\(? ?(?:\d{1,12} ?(?:[=<>!]|--|#|/\*|$)|true\b|false\b"
            r"|['\"]|\w{1,30} ?= ?\w{1,30}\b|\w{1,30}\(|@@|\(? ?select\b)|order by \d|group by \w{1,30} having\b"
            r"|having \d|procedure analyse|limit \d{1,9} ?(?:,|--|#|$)|like '%)"
        ),
    ),
    (
        "char_concat",
        "string built from character codes",
        re.compile(r"['\"] ?\|\| ?['\"(\w]|\b(?:char|chr|nchar) ?\( ?\d{1,3} ?\) ?(?:\+|\|\||,) ?(?:char|chr|nchar) ?\(|\bconvert ?\( ?int ?,|\bcast ?\( ?\( ?chr\("),
    ),
    (
        "boolean_probe",
        "constant comparison or arithmetic on a boolean",
        re.compile(
            r"\b(?:if|when|iif) ?\( ?\d{1,12} ?= ?\d{1,12} ?\)|\( ?\d{1,12} ?= ?\d{1,12} ?\)"
            r"|\b\d{1,12}[-+*/](?:true|false)\b|\b(?:true|false)[-+*/]\d"
        ),
    ),
    (
        "dangerous_function",
        "dangerous database function or system object",
        re.compile(
            r"(?:\b(?:xp_cmdshell|sp_oacreate|sp_makewebtask|exec(?:ute)? (?:master\.\.)?(?:xp|sp)_|load_file ?\(|into (?:out|dump)file\b|utl_inaddr\.|utl_http\."
            r"|dbms_\w{1,30}\.|extractvalue ?\(|updatexml ?\(|current_setting ?\(|pg_(?:group|roles|database|authid)\b"
            r"|\bcopy [\w.\"]{1,60} (?:from|to) (?:'|program\b)|\bbackup (?:database|log)\b)|@@[a-z]"
            r"|lo_import ?\(|pg_read_file ?\(|load data (?:local )?infile\b|information_schema\.|sqlite_master\b"
            r"|pg_shadow\b|mysql\.user\b|sys\.user\$|master\.\.sys|sysobjects\b|msysobjects\b"
            r"|\b(?:load_extension|dblink(?:_exec|_connect|_send_query)?|openrowset|opendatasource|openquery|sys_(?:exec|eval|bineval)"
            r"|writefile|lo_(?:export|from_bytea|put)|pg_(?:read_binary_file|ls_dir|stat_file|execute_server_program)|fts3_tokenizer) ?\("
            r"|\battach (?:database )?['\"]|\bcopy \S{1,60} (?:from|to) program\b|\bbulk insert\b|\bcreate (?:or replace )?function\b[^;]{0,200}\blanguage (?:c|plpython\w*|plperlu?)\b)"
        ),
    ),
)



# `check_sql` asks only whether a fragment occurs: `AnyMatch` asks each fragment's branches alone,
# behind their literal factors, on the normalized text (one space per whitespace run). All of
# them measured ~2-4 ms per 4 KB of code or JSON before, and ~0.2-0.3 ms so.
_FRAGMENT_GATE = AnyMatch((pattern for _, _, pattern in _FRAGMENTS), spaced=True)

# Typographic quotes and dashes that text copied through a word processor carries (`' –` is `' -`).
_QUOTE_LOOKALIKES = str.maketrans(
    {"\u2032": "'", "\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u00b4": "'"}
    | dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-")
)
_PROBE_CHARS = frozenset("'\"`-+*/^&|%=<>()#;,.!~ \t")


_NUMBER_QUOTE = re.compile(r"\d{1,10}['\"`\\]{1,2}\d{0,3}")
_OPERATOR_CHARS = frozenset("=<>!|&^~,/;\\-")
# A short value whose only quote sits inside a comment (`1/*'*/`, `x/*!50000"*/`): a filter probe.
_QUOTE_IN_COMMENT = re.compile(r"\s*[\w.-]{0,20}\s*/\*!?\d{0,6}[^*]{0,20}['\"`][^*]{0,20}\*/\s*")


def _query_probe(text: str) -> tuple[str, str] | None:
    """For a `query` argument that is not a statement: (kind, message) when the whole value is a
    syntax probe rather than a query: operators only (`=`, `==`, `,`), or only a comment."""
    t = text.strip()
    if t and len(t) <= 8 and set(t) <= _OPERATOR_CHARS:
        return "operator_probe", "operators only (syntax probe)"
    if t.startswith("--"):
        rest = t.split("\n", 1)[1] if "\n" in t else ""
    elif t.startswith("/*"):
        end = t.find("*/")
        rest = "" if end == -1 else t[end + 2 :]
    else:
        return None
    return ("comment_probe", "only a SQL comment (syntax probe)") if not rest.strip() else None


def _quote_probe(text: str) -> bool:
    """`'^'`, `"*"`, `' or "`: a short value of quotes and operators, probing for a syntax error."""
    t = text.strip().translate(_QUOTE_LOOKALIKES)
    if not 1 <= len(t) <= 12 or not any(q in t for q in "'\"`\\"):
        return False
    if t in ("'", '"', "`", "\\") or _NUMBER_QUOTE.fullmatch(t) is not None:
        return True
    rest = t.lower().replace(" or ", " ").replace(" and ", " ").replace("or", "").replace("like", "")
    return len(t) >= 2 and all(c in _PROBE_CHARS for c in rest)


def normalize_sql(text: str) -> str:
    """Lowercase; `/* */` comments become a space except MySQL `/*! */` whose content executes;
    whitespace runs become one space. Linear."""
    lowered = text.lower()
    if not lowered.isascii():  # every lookalike is outside ASCII (`translate` costs ~10 ns a character)
        lowered = lowered.translate(_QUOTE_LOOKALIKES)
    if "/*" in lowered:
        out: list[str] = []
        i = 0
        while True:
            j = lowered.find("/*", i)
            if j == -1:
                out.append(lowered[i:])
                break
            out.append(lowered[i:j])
            k = lowered.find("*/", j + 2)
            inner = lowered[j + 2 : k if k != -1 else len(lowered)]
            if inner.startswith("!"):
                out.append(" " + inner[1:].lstrip("0123456789") + " ")
            else:
                out.append(" /* " if k == -1 else " ")
            if k == -1:
                break
            i = k + 2
        lowered = "".join(out)
    return " ".join(lowered.split())


@functools.lru_cache(maxsize=512)
def _parse(text: str) -> tuple[exp.Expr, ...] | None:
    """Parsed statements (cached: agents repeat their queries, and parsing dominates the cost;
    the trees are never mutated), or None when ``text`` does not parse."""
    if len(text) > MAX_PARSE_CHARS:
        return None
    try:
        parsed = sqlglot.parse(text)
    except (SqlglotError, ValueError, RecursionError, KeyError, IndexError, AttributeError, TypeError):
        # sqlglot raises more than its own errors on hostile input; unparsable is the answer.
        return None
    return tuple(e for e in parsed if e is not None)


def _func_name(node: exp.Func) -> str:
    """A call's name as written, lowercased, with its package when it has one (`dbms_lock.sleep`)."""
    name = str(node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node and isinstance(parent.this, exp.Identifier | exp.Column):
        return f"{parent.this.name.lower()}.{name}"
    return name


def _literal_number(node: Any) -> float | None:
    sign = 1.0
    while isinstance(node, exp.Paren | exp.Neg):
        if isinstance(node, exp.Neg):
            sign = -sign
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return sign * float(node.this)
        except ValueError:
            return None
    return None


def _expensive(node: exp.Func, name: str) -> bool:
    """A cheap-looking call whose literal size argument makes it a denial of service."""
    if isinstance(node, exp.GenerateSeries):
        lo, hi = _literal_number(node.args.get("start")), _literal_number(node.args.get("end"))
        return lo is not None and hi is not None and abs(hi - lo) > MAX_CHEAP_SIZE
    if name in _EXPENSIVE_CALLS:
        return any((v := _literal_number(a)) is not None and abs(v) > MAX_CHEAP_SIZE for a in node.iter_expressions())
    return False


def _side_effect_of(statement: exp.Expr) -> str | None:
    if isinstance(statement, exp.Query) and statement.args.get("locks"):
        return "FOR UPDATE / FOR SHARE takes row locks"
    for node in statement.walk():
        if isinstance(node, exp.Into):
            return "SELECT ... INTO writes a table or a file"
        if isinstance(node, exp.Insert | exp.Update | exp.Delete | exp.Merge):
            return "a data-modifying statement inside the query"
        if isinstance(node, exp.Lock):
            return "FOR UPDATE / FOR SHARE takes row locks"
        if isinstance(node, exp.Func):
            name = _func_name(node)
            short = name.rsplit(".", 1)[-1]
            if short in _SIDE_EFFECT_FUNCS or name in _DANGEROUS_FUNCS or short.startswith(_SIDE_EFFECT_PREFIXES):
                return f"calls {name}(), which has a side effect"
            if _expensive(node, short):
                return f"calls {short}() with a size past {MAX_CHEAP_SIZE:,} (denial of service)"
    return None


@functools.lru_cache(maxsize=512)
def side_effect(text: str) -> str | None:
    """Why running ``text`` changes or holds something (a write, a lock, a sequence step, a server
    function, an unbounded generator), or None for statements with no side effect. A text that
    does not parse gets `does not parse as SQL`. Judged on the parsed tree, never by keyword."""
    statements = _parse(text)
    if not statements:
        return "does not parse as SQL"
    for s in statements:
        if isinstance(s, exp.Create | exp.Drop | exp.Alter | exp.TruncateTable | exp.Grant | exp.Revoke):
            return "changes the schema or privileges"
        if isinstance(s, exp.Insert | exp.Update | exp.Delete | exp.Merge | exp.Copy | exp.LoadData):
            return "modifies data"
        if not isinstance(s, exp.Query | exp.Describe | exp.Show):
            return f"{type(s).__name__.upper()} is not a query"
        why = _side_effect_of(s)
        if why is not None:
            return why
    return None


def classify_sql(text: str) -> SqlClass:
    """`read` when no statement has a side effect (see `side_effect`: SELECT, set operations,
    SHOW, DESCRIBE, without locks, side-effecting or unbounded calls, `INTO` or nested
    DML), `ddl` when any statement changes schema or privileges, `write` when any other has a side
    effect, `unknown` when it does not parse or is another kind of statement (`EXPLAIN`, which
    runs its statement under `ANALYZE`, `PRAGMA`, `SET`, `ATTACH`...)."""
    statements = _parse(text)
    if not statements:
        return "unknown"
    result: SqlClass = "read"
    for s in statements:
        if isinstance(s, exp.Create | exp.Drop | exp.Alter | exp.TruncateTable | exp.Grant | exp.Revoke):
            return "ddl"
        if isinstance(s, exp.Insert | exp.Update | exp.Delete | exp.Merge | exp.Copy | exp.LoadData):
            result = "write"
        elif isinstance(s, exp.Query | exp.Describe | exp.Show):
            if _side_effect_of(s) is not None:
                result = "write"
        else:
            return "unknown" if result == "read" else result
    return result


def _constant(node: Any) -> bool:
    """An expression of literals only (no column, subquery, star or parameter): its value is fixed."""
    if not isinstance(node, exp.Expr):
        return False
    saw_literal = False
    for n in node.walk():
        if isinstance(n, exp.Column | exp.Subquery | exp.Select | exp.Star | exp.Placeholder | exp.Parameter):
            return False
        saw_literal = saw_literal or isinstance(n, exp.Literal | exp.Boolean | exp.Null)
    return saw_literal


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.Is, exp.NullSafeEQ)


def _tautological(node: exp.Expr) -> bool:
    """An `OR` operand whose truth does not depend on the row: a constant (`1`, `NOT 0`, `1=1`,
    `1 BETWEEN 0 AND 2`, `1 IN (1)`, `'a'||'b'='ab'`), a column compared with itself (`x=x`), or
    `LIKE '%'`."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        return not node.is_string and node.this not in ("0", "0.0")
    if isinstance(node, exp.Not):
        return _constant(node.this)
    if isinstance(node, _COMPARISONS):
        left, right = node.left, node.right
        if _constant(left) and _constant(right):
            return True
        if isinstance(left, exp.Column) and isinstance(right, exp.Column) and (left.table.lower(), left.name.lower()) == (right.table.lower(), right.name.lower()):
            return True  # unquoted identifiers are case-insensitive
        return isinstance(node, exp.Like | exp.ILike) and isinstance(right, exp.Literal) and right.is_string and not str(right.this).strip("%")
    if isinstance(node, exp.Between):
        return _constant(node.this) and _constant(node.args.get("low")) and _constant(node.args.get("high"))
    if isinstance(node, exp.In):
        return _constant(node.this) and bool(node.expressions) and all(_constant(e) for e in node.expressions)
    return False


@functools.lru_cache(maxsize=512)
def _structural(text: str) -> tuple[tuple[str, str], ...]:
    """(kind, message) for the structural signals of a statement that parses (cached by text)."""
    statements = _parse(text) or ()
    out: dict[str, str] = {}
    if len(statements) > 1:
        out["stacked_statements"] = f"{len(statements)} statements in one argument"
    for s in statements:
        # One walk over the tree collects every node kind we look at.
        for node in s.walk():
            if isinstance(node, exp.Or):
                if _tautological(node.left) or _tautological(node.right):
                    out.setdefault("tautology", "OR with an operand that does not depend on the row")
            elif isinstance(node, exp.Func):
                name = _func_name(node)
                short = name.rsplit(".", 1)[-1]
                if short in _TIME_FUNCS or name in _TIME_FUNCS:
                    out.setdefault("time_probe", f"time-based probe {name}()")
                elif name in _DANGEROUS_FUNCS or short in _DANGEROUS_FUNCS or short.startswith(("xp_", "sp_oa", "utl_", "dbms_")):
                    out.setdefault("dangerous_function", f"dangerous function {name}()")
            elif isinstance(node, exp.Copy) and "program" in node.sql().lower():
                out.setdefault("dangerous_function", "COPY ... PROGRAM runs a command on the server")
            elif isinstance(node, exp.Union):
                right = node.expression
                if isinstance(right, exp.Select) and right.expressions and all(
                    isinstance(e, exp.Literal | exp.Null) for e in right.expressions
                ):
                    out.setdefault("union_select", "UNION SELECT of constants (column probing)")
            elif isinstance(node, exp.Table):
                qualified = ".".join(p for p in (node.catalog, node.db, node.name) if p).lower()
                if any(c.rstrip(".") in qualified for c in _SYSTEM_CATALOGS if c != "sys."):
                    out.setdefault("system_catalog", f"reads system catalog {qualified}")
    return tuple(out.items())


class _Add:
    def __init__(self, pointer: str) -> None:
        self.pointer = pointer
        self.found: dict[str, Finding] = {}

    def __call__(self, kind: str, message: str, form: str, severity: Literal["low", "medium", "high"] = "high") -> None:
        if kind not in self.found:
            self.found[kind] = Finding(NAME, kind, self.pointer, message, excerpt(form), severity)


_FIRST_WORD = re.compile(r"[A-Za-z_]+")


def looks_like_sql(text: str) -> bool:
    """Whether ``text`` starts like a SQL statement (first word is a statement keyword), however
    the word is delimited (`select/**/*` is a SELECT) and after leading comments."""
    rest = text[:4096]
    for _ in range(8):
        rest = rest.lstrip(" \t\r\n(;")
        if not rest.startswith("/*"):
            break
        end = rest.find("*/", 2)
        if end == -1:
            return False
        rest = rest[end + 2 :]
    head = _FIRST_WORD.match(rest)
    return head is not None and head.group(0).lower() in _SQL_START


# For a value that is not a `query`, every fragment in `_FRAGMENTS` (and the quote probe) needs, in
# the lowercased value: a quote (or look-alike), comparison, backslash or NUL; a leading boolean or
# clause word; `select`, a comment, `@@`; a statement after `;`; a quote-free boolean tautology; one
# of the function calls; one of the `_` names; or one of the few all-letter dangerous phrases.
# `may_find` tests exactly these on the raw lowercased value: the fragments run on `normalize_sql`
# output, so where they have one space (or ` ?`) its regexes take any whitespace run (`\s*`, `\s+`).
# Tests draw strings from every `_FRAGMENTS` pattern and check that `may_find` admits each one found.
TRIGGERS = frozenset("'\"`=<>\\\x00\u2032\u2019\u2018\u201c\u201d\u00b4")
# No character outside `TRIGGERS` lowercases into one and each lowercases to itself (a test checks
# every code point), so searching the value or its lowercase form is the same test.
_TRIGGER_CHARS = char_class(TRIGGERS)
_LEADING_WORD = re.compile(r"[\s)]*(?:and|or|xor|&&|\|\||order|group|having|procedure|limit|like|union)")
_STATEMENT_AFTER_SEMICOLON = re.compile(r";\s*(?:drop|truncate|shutdown|declare|exec|insert|delete|update|create|alter|grant|select|waitfor)")
_CALL = re.compile(
    r"(?:sleep|benchmark|randomblob|char|chr|convert|cast|load_file|extractvalue|updatexml|current_setting|lo_import|pg_read_file"
    r"|load_extension|dblink(?:_exec|_connect|_send_query)?|openrowset|opendatasource|openquery|writefile|concat|fts3_tokenizer"
    r"|sys_(?:exec|eval|bineval)|lo_(?:export|from_bytea|put))\s*\("
)
_UNDERSCORE_NAME = re.compile(r"(?:xp|sp|utl|dbms|pg)_|information_schema|sqlite_master")
_PHRASE = re.compile(
    r"into\s+(?:out|dump)file|backup\s+(?:database|log)|load\s+data|copy\s|attach\s|bulk\s+insert|create\s+(?:or\s+replace\s+)?function\b"
)
# Tautologies spelled without a quote or comparison sign: `or 1 between 0 and 2`, `or 1 in (1)`, `or not 0`.
_BOOLEAN_WORDS = re.compile(r"\b(?:or|and)\s+\(?\s*(?:\w+\s+(?:not\s+)?(?:between|in\s*\()|not\b)")
# What `may_find` searches for them in the raw lowercased value: a superset of `_BOOLEAN_WORDS` and of the
# tautology fragment's quote-free branches on `normalize_sql` output (any whitespace run, or none, where those
# have one space: `or\nnot 0`, `or(not 0)`, `,and not0`). `[oa](?<!\w[oa])` is `\b(?:or|and)` spelled
# so that the regex engine can skip to an `o` or an `a` (about twice as fast on prose); `\s*(?:\(\s*)?` is
# `\s*\(?\s*` without its quadratic backtracking over a long whitespace run (this runs on the raw value).
_BOOLEAN_GUARD = re.compile(r"[oa](?<!\w[oa])(?:(?<=o)r|(?<=a)nd)\b\s*(?:\(\s*)?(?:\w+\s+(?:not\s+)?(?:between|in\s*\()|not)")


def may_find(value: str, kind: ArgKind | None, triggers: Set[str] | None = None) -> bool:
    """False only when `check_sql([value], ...)` is certainly empty (the value itself, undecoded).
    ``triggers``: see `paths.may_find`."""
    if kind == "query":
        return True
    if _TRIGGER_CHARS.search(value) is not None if triggers is None else not TRIGGERS.isdisjoint(triggers):
        return True
    low = value.lower()
    if _LEADING_WORD.match(low) is not None:
        return True
    if "select" in low or "/*" in low or "@@" in low or "sysobjects" in low or ".user" in low or "..sys" in low or "true" in low or "false" in low:
        return True
    if ";" in low and _STATEMENT_AFTER_SEMICOLON.search(low) is not None:
        return True
    if (
        ("or" in low or "and" in low)
        and ("not" in low or "between" in low or "(" in low)  # every `_BOOLEAN_GUARD` match holds one
        and _BOOLEAN_GUARD.search(low) is not None
    ):
        return True
    if "(" in low and _CALL.search(low) is not None:
        return True
    if "_" in low and _UNDERSCORE_NAME.search(low) is not None:
        return True
    return (
        "into" in low or "backup" in low or "load" in low or "copy" in low or "attach" in low or "bulk" in low or "function" in low
    ) and _PHRASE.search(low) is not None


def check_sql(forms: Sequence[str], pointer: str, kind: ArgKind | None, ctx: ScanContext) -> list[Finding]:
    """SQL findings for one argument value given its decoded forms (raw first)."""
    del ctx
    add = _Add(pointer)
    for form in forms:
        norm = normalize_sql(form)
        if kind == "query" and looks_like_sql(form):
            statements = _parse(form)
            if (statements is None or not statements) and any(c in form for c in "=(;*"):
                # Only statement-shaped text counts: "With You" starts with a keyword but is a title.
                add("unparsable", "query does not parse as SQL", form, "medium")
            else:
                for k, message in _structural(form):
                    add(k, message, form)
            if re.search(r"[a-z]/\*[^*]{0,40}\*/[a-z]", form.lower()):
                add("comment_obfuscation", "comment inside a keyword", form)
            occurs = _FRAGMENT_GATE.search(norm)
            for i, (k, message, _) in enumerate(_FRAGMENTS):
                if k in ("union_select", "tautology", "quote_clause"):
                    continue  # judged structurally above; these regexes misfire on well-formed SQL
                if occurs(i):
                    add(k, message, form)
            continue
        if "\x00" in form and len(form) < 256:
            add("nul_byte", "NUL byte", form)
        if kind == "query":
            probe = _query_probe(form.translate(_QUOTE_LOOKALIKES))
            if probe is not None:
                add(*probe, form)
        if "/*" in form and len(form) <= 96 and _QUOTE_IN_COMMENT.fullmatch(form) is not None:
            add("comment_obfuscation", "quote hidden in a comment (filter probe)", form)
        if (
            not any(c in norm for c in "'\"`;()=<>@#-_%\\")
            and "select" not in norm
            and not norm.startswith(("and ", "or ", "order ", "having ", "group ", "union ", "limit ", "like "))
            and _BOOLEAN_WORDS.search(norm) is None
        ):
            continue
        if _quote_probe(form):
            add("quote_probe", "quotes and operators only (syntax probe)", form)
        occurs = _FRAGMENT_GATE.search(norm)
        for i, (k, message, _) in enumerate(_FRAGMENTS):
            if k not in add.found and occurs(i):
                add(k, message, form)
    return list(add.found.values())
