"""`sql`: structural checks on SQL queries, fragments elsewhere, and `classify_sql`."""

from __future__ import annotations

import pytest
from _analyzer_helpers import kinds_of, scan_one
from hypothesis import given, settings
from hypothesis import strategies as st

from checkrein.policy.analyzers import classify_sql
from checkrein.policy.analyzers.sql import normalize_sql


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT * FROM t WHERE a = 1", "read"),
        ("WITH x AS (SELECT 1) SELECT * FROM x", "read"),
        ("SELECT 1 UNION SELECT 2", "read"),
        ("INSERT INTO t VALUES (1)", "write"),
        ("UPDATE t SET a = 1", "write"),
        ("DELETE FROM t", "write"),
        ("SELECT * INTO new_t FROM t", "write"),
        ("CREATE TABLE t (a INT)", "ddl"),
        ("DROP TABLE t", "ddl"),
        ("ALTER TABLE t ADD b INT", "ddl"),
        ("SELECT 1; DROP TABLE t", "ddl"),
        ("GRANT ALL ON t TO bob", "ddl"),
        ("this is not ((( sql", "unknown"),
        ("", "unknown"),
    ],
)
def test_classify_sql(sql: str, expected: str) -> None:
    assert classify_sql(sql) == expected


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("SELECT * FROM users WHERE id = 1; DROP TABLE users", "stacked_statements"),
        ("SELECT * FROM users WHERE name = '' OR 1=1", "tautology"),
        ("SELECT * FROM users WHERE name = '' OR 'a'='a'", "tautology"),
        ("SELECT * FROM users WHERE a = 1 OR TRUE", "tautology"),
        ("SELECT name FROM users WHERE id = 1 UNION SELECT 1, 2", "union_select"),
        ("SELECT SLEEP(5)", "time_probe"),
        ("SELECT pg_sleep(10)", "time_probe"),
        ("SELECT load_file('/etc/passwd')", "dangerous_function"),
        ("SELECT * FROM information_schema.tables", "system_catalog"),
        ("SELECT * FROM WHERE ((a = ", "unparsable"),
        ("SELECT * FROM t WHERE a = 1 UN/**/ION SELECT password FROM users", "comment_obfuscation"),
    ],
)
def test_query_arguments_are_checked_structurally(query: str, kind: str) -> None:
    assert kind in kinds_of(scan_one(query, "query"), "sql")


@pytest.mark.parametrize(
    "query",
    [
        "SELECT name FROM users WHERE name LIKE '%x%'",
        "SELECT a FROM t WHERE a = 'x' OR a = 'y'",
        "SELECT a FROM t WHERE 1=1 AND a > 3",
        "SELECT COUNT(*) FROM orders GROUP BY customer",
        "shishir's birthday",
        "With You",
        "weather in India",
        "Update my calendar for Tuesday",
    ],
)
def test_benign_queries_are_clean(query: str) -> None:
    assert scan_one(query, "query") == []


@pytest.mark.parametrize(
    "text",
    [
        "' OR 1=1 --",
        "admin'--",
        "x' or 'a'='a",
        "1'; DROP TABLE users; --",
        "1 UNION SELECT username, password FROM users",
        "1 UNION/**/ALL/**/SELECT NULL",
        "1 AND SLEEP(5)",
        "1' WAITFOR DELAY '0:0:5'--",
        "') or ('x')=('x",
        "' and extractvalue(1,concat(0x7e,@@version))--",
        " ORDER BY 3--",
        "'",
        "1'",
        "'+or+1=1--",
        "%27%20OR%201%3D1--",
        "1 AND 1=1",
    ],
)
def test_untyped_injection_fragments_are_reported(text: str) -> None:
    assert kinds_of(scan_one(text), "sql")


@pytest.mark.parametrize(
    "text",
    [
        "drop those dipping stocks",
        "Select the best option and update me",
        "union members met on Friday",
        "It's Tom's book",
        "Rock 'n' roll -- live",
        "sleep (8 hours) is important",
        "Order by Friday please",
        "x = y + 1",
        "PG&E",
    ],
)
def test_untyped_prose_with_sql_words_is_clean(text: str) -> None:
    assert kinds_of(scan_one(text), "sql") == set()


def test_normalize_sql_blanks_comments_but_keeps_mysql_executable_comments() -> None:
    assert normalize_sql("UN/**/ION  SEL/*x*/ECT") == "un ion sel ect"
    assert normalize_sql("/*!50000UNION*/ SELECT") == "union select"


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        ("' –", None, "quote_probe"),  # typographic dash after a quote
        ("\u2019 \u2014", None, "quote_probe"),
        ("'LIKE'", None, "quote_probe"),
        ("1/*'*/", None, "comment_obfuscation"),
        ("admin/*!50000\"*/", None, "comment_obfuscation"),
        ("1-false", None, "boolean_probe"),
        ("2-true", "query", "boolean_probe"),
        ("1 exec xp_dirtree", None, "dangerous_function"),
        ("x; execute master..sp_who", None, "dangerous_function"),
        ("==", "query", "operator_probe"),
        (",", "query", "operator_probe"),
        ("<>", "query", "operator_probe"),
        ("-- or #", "query", "comment_probe"),
        ("/* unterminated", "query", "comment_probe"),
        ("/* x */ ", "query", "comment_probe"),
    ],
)
def test_syntax_probes_and_evasions_are_reported(value: str, kind: str | None, expected: str) -> None:
    assert expected in kinds_of(scan_one(value, kind), "sql")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("-- comment\nSELECT id FROM t WHERE region = 'EU'", "query"),
        ("/* daily */ SELECT 1", "query"),
        ("*", "query"),
        ("#python", "query"),
        ("it's true - 1 of them", None),
        ("Q1 – Q2 revenue, the team’s best", None),
        ("int x = 1; /* don't touch */ return x;", None),
        ("SELECT name FROM t WHERE name LIKE '%smith%'", "query"),
        ("==", None),
        ("-2", "query"),
    ],
)
def test_near_misses_of_the_probes_are_clean(value: str, kind: str | None) -> None:
    assert kinds_of(scan_one(value, kind), "sql") == set()  # type: ignore[arg-type]


# -- tautologies beyond OR 1=1, dangerous functions and statements --------------------------------

TAUTOLOGIES = [
    "SELECT * FROM users WHERE name = '' OR 1 BETWEEN 0 AND 2",
    "SELECT * FROM users WHERE id = 7 OR 3 IN (1, 2, 3)",
    "SELECT * FROM users WHERE id = 7 OR name = name",
    "SELECT * FROM users WHERE id = 7 OR NOT 0",
    "SELECT * FROM users WHERE id = 7 OR NOT (1 = 2)",
    "SELECT * FROM users WHERE id = 7 OR 'a' || 'b' = 'ab'",
    "SELECT * FROM users WHERE id = 7 OR CONCAT('a', 'b') = 'ab'",
    "SELECT * FROM users WHERE id = 7 OR 2 > 1",
    "SELECT * FROM users WHERE id = 7 OR name LIKE '%'",
    "SELECT * FROM users WHERE id = 7 OR (TRUE)",
]


@pytest.mark.parametrize("query", TAUTOLOGIES)
def test_tautologies_of_every_shape_are_found_in_queries(query: str) -> None:
    assert "tautology" in kinds_of(scan_one(query, "query"), "sql")


@pytest.mark.parametrize(
    "text",
    [
        "' OR 1 BETWEEN 0 AND 2 --",
        "' or 1 in (1) --",
        "1 OR 1 BETWEEN 1 AND 2",
        "x' OR NOT 0 --",
        "' OR 'a'||'b'='ab",
        "1 or name=name",
        "' OR CONCAT('a','b')='ab' --",
    ],
)
def test_tautology_fragments_are_found_in_any_string(text: str) -> None:
    assert "tautology" in kinds_of(scan_one(text), "sql")


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM users WHERE 1 = 1 AND id = 2",
        "SELECT * FROM users WHERE name LIKE '%x%' OR name LIKE '%y%'",
        "SELECT * FROM t WHERE a = 1 OR b = 2",
        "SELECT * FROM t WHERE a BETWEEN 1 AND 5 OR b IN (1, 2)",
        "UPDATE counters SET n = n + 1 WHERE id = 3",
    ],
)
def test_ordinary_boolean_logic_is_not_a_tautology(query: str) -> None:
    assert "tautology" not in kinds_of(scan_one(query, "query"), "sql")


@pytest.mark.parametrize("text", ["Tom and Jerry in 1 or 2 episodes", "count = count", "I'm in (the) kitchen or not", "rock or not, we go"])
def test_prose_with_boolean_words_is_clean(text: str) -> None:
    assert kinds_of(scan_one(text), "sql") == set()


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("SELECT load_extension('/tmp/x.so')", "query"),
        ("ATTACH DATABASE '/tmp/x.db' AS x", "query"),
        ("x'; ATTACH DATABASE '/tmp/x.db' AS x;--", None),
        ("SELECT * FROM OPENROWSET('SQLNCLI', 'server=x', 'select 1')", "query"),
        ("SELECT * FROM OPENDATASOURCE('SQLNCLI', 'x').db.dbo.t", "query"),
        ("SELECT dblink('host=evil', 'select 1')", "query"),
        ("1; EXEC xp_cmdshell 'dir'", None),
        ("SELECT sys_exec('id')", "query"),
        ("COPY t TO PROGRAM 'id'", "query"),
        ("1 AND dblink_connect('host=evil')", None),
        ("SELECT writefile('/tmp/x', 'y')", "query"),
    ],
)
def test_dangerous_functions_and_statements_are_found(value: str, kind: str | None) -> None:
    assert "dangerous_function" in kinds_of(scan_one(value, kind), "sql")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("SELECT nextval('s')", "nextval"),
        ("SELECT setval('s', 1)", "setval"),
        ("SELECT pg_terminate_backend(1)", "pg_terminate_backend"),
        ("SELECT set_config('a', 'b', false)", "set_config"),
        ("SELECT lo_unlink(1)", "lo_unlink"),
        ("SELECT pg_reload_conf()", "pg_reload_conf"),
        ("SELECT dblink_exec('c', 'x')", "dblink_exec"),
        ("SELECT writefile('/tmp/x', 'y')", "writefile"),
        ("SELECT pg_try_advisory_lock(7)", "pg_try_advisory_lock"),
        ("SELECT GET_LOCK('a', 10)", "get_lock"),
        ("SELECT * FROM t FOR UPDATE", "locks"),
        ("SELECT * FROM t FOR SHARE", "locks"),
        ("SELECT * FROM generate_series(1, 100000000000)", "generate_series"),
        ("SELECT repeat('x', 1000000000)", "repeat"),
        ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "data-modifying"),
        ("SELECT dbms_lock.sleep(5) FROM dual", "dbms_lock.sleep"),
    ],
)
def test_read_only_means_no_side_effect(sql: str, why: str) -> None:
    from checkrein.policy.analyzers.sql import side_effect

    assert classify_sql(sql) == "write"
    reason = side_effect(sql)
    assert reason is not None and why in reason


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM generate_series(1, 100)",
        "SELECT upper(name), coalesce(a, b), now() FROM t JOIN u ON t.id = u.id",
        "SELECT currval('s')",
    ],
)
def test_queries_without_side_effects_are_read(sql: str) -> None:
    from checkrein.policy.analyzers.sql import side_effect

    assert side_effect(sql) is None and classify_sql(sql) == "read"


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TAUTOLOGIES), st.data())
def test_case_whitespace_and_comments_never_hide_a_tautology(query: str, data: st.DataObject) -> None:
    """Any case, any run of whitespace and `/**/` in place of a space: the tautology is still found."""
    out: list[str] = []
    for c in query:
        if c == " ":
            out.append(data.draw(st.sampled_from([" ", "  ", "\t", "\n", "/**/", " /* x */ "])))
        else:
            out.append(c.upper() if data.draw(st.booleans()) else c.lower() if c.isalpha() and not out[-1:] == ["'"] else c)
    spelled = "".join(out)
    assert "tautology" in kinds_of(scan_one(spelled, "query"), "sql"), spelled
