"""Templates (development / production / strict) and the tool classification they use."""

from __future__ import annotations

import pytest
from _policy_helpers import ANALYZERS_OFF, policy, run, tool

from checkrein.config.policy import ToolRule
from checkrein.policy.templates import classify, name_words


@pytest.mark.parametrize(
    ("name", "annotations", "category"),
    [
        ("read_file", None, "read"),
        ("listS3Objects", None, "read"),
        ("write_file", None, "write"),
        ("create-issue", None, "write"),
        ("delete_file", None, "delete"),
        ("DropTable", None, "delete"),
        ("run_shell", None, "exec"),
        ("execute_command", None, "exec"),
        ("frobnicate", None, "unknown"),
        ("frobnicate", {"readOnlyHint": True}, "read"),
        ("frobnicate", {"destructiveHint": True}, "delete"),
        ("frobnicate", {"readOnlyHint": False}, "delete"),  # MCP default destructiveHint=true
        ("frobnicate", {"readOnlyHint": False, "destructiveHint": False}, "write"),
        ("delete_file", {"readOnlyHint": True}, "delete"),  # a lying hint does not downgrade
        ("get_items", {"destructiveHint": True}, "delete"),  # the more dangerous signal wins
    ],
)
def test_classification_follows_names_and_annotations(name: str, annotations: dict[str, bool] | None, category: str) -> None:
    assert classify("srv", name, annotations).category == category


def test_config_category_and_read_only_override_heuristics() -> None:
    assert classify("s", "delete_all", None, ToolRule(category="read")).category == "read"
    assert classify("s", "delete_all", None, ToolRule(read_only=True)).category == "read"
    c = classify("s", "get_thing", None, ToolRule(read_only=False))
    assert (c.category, c.source) == ("write", "config")


def test_shared_store_writes_are_recognised_by_tool_or_server_words() -> None:
    assert classify("fs", "write_file", None).shared is False
    assert classify("db", "insert", None).shared is True
    assert classify("notes", "send_email", None).shared is True


def test_name_words_split_camel_case_and_separators() -> None:
    assert name_words("getHTTPResponse_v2-final.x") == ("get", "http", "response", "v2", "final", "x")


TOOLS = [
    tool("fs__read_file"),
    tool("fs__write_file"),
    tool("db__insert_row"),
    tool("fs__delete_file"),
    tool("sh__run_command"),
    tool("misc__frobnicate"),
]


def _effects(template: str, extra: str = "") -> dict[str, tuple[str, str]]:
    p = policy(f'[policy]\ntemplate = "{template}"\n{extra}' + ANALYZERS_OFF, *TOOLS)
    return {name: (run(p, name).effect, run(p, name).risk) for name, _ in TOOLS}


def test_development_allows_all_but_exec_and_asks_for_high_risk() -> None:
    assert _effects("development") == {
        "fs__read_file": ("allow", "low"),
        "fs__write_file": ("allow", "medium"),
        "db__insert_row": ("allow", "medium"),
        "fs__delete_file": ("ask", "high"),
        "sh__run_command": ("deny", "critical"),
        "misc__frobnicate": ("allow", "medium"),
    }


def test_production_is_read_mostly_and_denies_deletes_shared_writes_and_exec() -> None:
    assert _effects("production") == {
        "fs__read_file": ("allow", "low"),
        "fs__write_file": ("ask", "high"),
        "db__insert_row": ("deny", "high"),
        "fs__delete_file": ("deny", "high"),
        "sh__run_command": ("deny", "critical"),
        "misc__frobnicate": ("ask", "high"),
    }


def test_strict_allows_read_only_tools_only() -> None:
    effects = _effects("strict")
    assert [n for n, (e, _) in effects.items() if e == "allow"] == ["fs__read_file"]


def test_template_denial_names_the_template_and_category() -> None:
    p = policy('[policy]\ntemplate = "production"\n' + ANALYZERS_OFF, *TOOLS)
    d = run(p, "db__insert_row")
    assert d.rule_id == "template:production:write_shared"
    assert "write shared" in d.reasons[0]


def test_explicit_allow_overrides_a_template_denial() -> None:
    effects = _effects("strict", 'allow = ["sh__run_command"]\n')
    assert effects["sh__run_command"] == ("ask", "critical")  # allowed, and critical still asks


def test_explicit_deny_overrides_a_template_allow() -> None:
    assert _effects("development", 'deny = ["fs__read_file"]\n')["fs__read_file"][0] == "deny"


def test_explicit_default_replaces_the_template_effects_but_keeps_its_risks() -> None:
    effects = _effects("development", 'default = "deny"\nallow = ["fs__delete_file"]\n')
    assert effects["fs__read_file"] == ("deny", "low")
    assert effects["fs__delete_file"] == ("ask", "high")


def test_explicit_risk_overrides_the_template_risk() -> None:
    extra = '[policy.tools."fs__delete_file"]\nrisk = "low"\n'
    p = policy('[policy]\ntemplate = "development"\n' + extra + ANALYZERS_OFF, *TOOLS)
    assert (run(p, "fs__delete_file").effect, run(p, "fs__delete_file").risk) == ("allow", "low")


def test_templates_set_analyzer_defaults_that_config_overrides() -> None:
    dev = policy('[policy]\ntemplate = "development"\n', *TOOLS)
    assert dev.plans["fs__read_file"].governance.finding_effects["secrets"] == "ask"
    dev_strict = policy('[policy]\ntemplate = "development"\n[policy.analyzers]\nsecrets = "deny"\n', *TOOLS)
    assert dev_strict.plans["fs__read_file"].governance.finding_effects["secrets"] == "deny"


def test_annotations_drive_the_template_for_unrecognised_names() -> None:
    p = policy(
        '[policy]\ntemplate = "strict"\n' + ANALYZERS_OFF,
        tool("x__frobnicate", annotations={"readOnlyHint": True}),
        tool("x__zap", annotations={"readOnlyHint": False}),
    )
    assert run(p, "x__frobnicate").effect == "allow"
    assert run(p, "x__zap").effect == "deny"


def test_production_and_strict_make_query_arguments_read_only() -> None:
    """A query argument is a write channel of its own: production and strict require read SQL."""
    from checkrein.catalog.model import ToolDefinition
    from checkrein.config.model import config_from_mapping
    from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide

    schema = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}
    tools = {"db__query": ToolDefinition("db", "query", "Query the database with SQL", schema, annotations={"readOnlyHint": True})}

    def effect(template: str, sql: str) -> str:
        cfg = config_from_mapping({"policy": {"template": template, "tools": {"db__query": {"risk": "low"}}}})
        call = ToolCall(Identity("u"), "s", "t", "sp", "db__query", {"sql": sql})
        return decide(compile_policy(cfg, tools), call, SessionState("s"), 0.0).effect

    read = "SELECT name FROM users WHERE name LIKE '%x%'"
    for template in ("production", "strict"):
        assert effect(template, read) == "allow"
        assert effect(template, "DELETE FROM users WHERE id = 3") == "deny"
        assert effect(template, "DROP TABLE users") == "deny"
    assert effect("development", "DELETE FROM users WHERE id = 3") == "allow"


def _query_effect(template: str, definition: object, args: dict[str, object]) -> tuple[str, str]:
    from checkrein.catalog.model import ToolDefinition
    from checkrein.config.model import config_from_mapping
    from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide

    assert isinstance(definition, ToolDefinition)
    exposed = f"{definition.server}__{definition.name}"
    cfg = config_from_mapping({"policy": {"template": template, "tools": {exposed: {"risk": "low"}}}})
    call = ToolCall(Identity("u"), "s", "t", "sp", exposed, args)
    d = decide(compile_policy(cfg, {exposed: definition}), call, SessionState("s"), 0.0)
    return d.effect, " ".join(d.reasons)


def test_a_search_tools_query_is_text_not_sql() -> None:
    """The bundled knowledge server's `query` is words to look for: production allows prose in it."""
    from checkrein.catalog.model import ToolDefinition

    schema = {
        "type": "object",
        "properties": {"query": {"type": "string", "description": "Words to look for."}, "limit": {"type": "integer"}},
        "required": ["query"],
    }
    search = ToolDefinition("kb", "search_documents", "Search the knowledge base.", schema, annotations={"readOnlyHint": True})
    for template in ("production", "strict"):
        assert _query_effect(template, search, {"query": "running in Shanghai"})[0] == "allow"
        assert _query_effect(template, search, {"query": "' OR 1=1 --"})[0] == "deny"  # injection is still injection


def test_a_database_tools_query_must_have_no_side_effect() -> None:
    """`query` of a SQL tool is SQL; read-only means no side effect, not "starts with SELECT"."""
    from checkrein.catalog.model import ToolDefinition

    schema = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    run_sql = ToolDefinition("db", "query_db", "Query the Postgres database.", schema, annotations={"readOnlyHint": True})
    assert _query_effect("production", run_sql, {"query": "SELECT name FROM users WHERE id = 3"})[0] == "allow"
    for statement in (
        "SELECT nextval('orders_id_seq')",
        "SELECT setval('orders_id_seq', 1)",
        "SELECT pg_terminate_backend(4242)",
        "SELECT set_config('search_path', 'evil', false)",
        "SELECT lo_unlink(16401)",
        "SELECT pg_reload_conf()",
        "SELECT dblink_exec('dbname=x', 'DROP TABLE users')",
        "SELECT writefile('/tmp/x', 'y')",
        "SELECT pg_advisory_lock(1)",
        "SELECT * FROM accounts FOR UPDATE",
        "SELECT count(*) FROM generate_series(1, 100000000000)",
        "WITH gone AS (DELETE FROM users RETURNING id) SELECT count(*) FROM gone",
        "running in Shanghai",
    ):
        effect, reason = _query_effect("production", run_sql, {"query": statement})
        assert effect == "deny", statement
        assert "read-only" in reason or "found" in reason, reason
