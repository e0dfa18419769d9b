"""The verdict cache: bounded LRU, keys by scope/kind/value, never shared across analyzer contexts,
policies or DNS answers, safe under threads, and a hit reports exactly what the scan reported."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest

from checkrein.catalog.model import ToolDefinition
from checkrein.config import parse_config
from checkrein.policy import Identity, SessionState, ToolCall, compile_policy, decide
from checkrein.policy.analyzers import ScanContext, scan_arguments
from checkrein.policy.analyzers.api import KIND_MEMO_SIZE
from checkrein.policy.analyzers.verdicts import MAX_RAW_KEY, VerdictCache, value_key
from checkrein.policy.decision import Finding

TRAVERSAL = "../../../etc/passwd"


def _keys(findings: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.analyzer, f.kind, f.path) for f in findings]


def test_lru_keeps_at_most_max_entries_and_evicts_the_least_recently_used() -> None:
    """Past the bound the oldest untouched entry goes; a read refreshes an entry."""
    cache = VerdictCache(max_entries=3)
    for k in ("a", "b", "c"):
        cache.put(k, ())
    assert cache.get("a") == ()  # a is now the most recent
    cache.put("d", ())
    assert len(cache) == 3
    assert cache.get("b") is None
    assert cache.get("a") == () and cache.get("c") == () and cache.get("d") == ()
    assert (cache.hits, cache.misses) == (4, 1)


def test_zero_entries_is_refused() -> None:
    """A cache that can hold nothing is a configuration error, not a silent no-op."""
    with pytest.raises(ValueError):
        VerdictCache(max_entries=0)


def test_short_values_are_their_own_key_and_long_ones_a_digest() -> None:
    """Exact keys for short strings; long strings keyed by length and digest, lone surrogates included."""
    assert value_key("utf-8") == "utf-8"
    long_a, long_b = "a" * (MAX_RAW_KEY + 1), "a" * MAX_RAW_KEY + "b"
    ka, kb = value_key(long_a), value_key(long_b)
    assert ka != kb and isinstance(ka, tuple) and ka[0] == MAX_RAW_KEY + 1 and isinstance(ka[1], bytes) and len(ka[1]) == 32
    assert value_key("\ud800" * (MAX_RAW_KEY + 1)) != value_key("\ud801" * (MAX_RAW_KEY + 1))


def test_a_hit_reports_the_same_findings_at_the_new_pointer() -> None:
    """The second call is served from the cache, with the pointer of where the value is now."""
    ctx = ScanContext(verdicts=VerdictCache())
    first = scan_arguments({"a": TRAVERSAL}, ctx)
    assert ctx.verdicts is not None and ctx.verdicts.hits == 0
    second = scan_arguments({"b": [TRAVERSAL]}, ctx)
    assert ctx.verdicts.hits == 1
    assert [(a, k) for a, k, _ in _keys(first)] == [(a, k) for a, k, _ in _keys(second)]
    assert {p for _, _, p in _keys(second)} == {"/b/0"}
    assert _keys(second) == _keys(scan_arguments({"b": [TRAVERSAL]}, ScanContext()))


def test_contexts_with_different_roots_never_share_a_verdict() -> None:
    """A path inside one tool's roots is outside another's: the cache must keep them apart."""
    shared = VerdictCache()
    inside = ScanContext(kinds={"/p": "path"}, path_roots=("/srv/data",), verdicts=shared)
    outside = replace(inside, path_roots=("/srv/other",))
    assert scan_arguments({"p": "/srv/data/report.csv"}, inside) == []
    assert _keys(scan_arguments({"p": "/srv/data/report.csv"}, outside)) == _keys(
        scan_arguments({"p": "/srv/data/report.csv"}, replace(outside, verdicts=None))
    )
    assert scan_arguments({"p": "/srv/data/report.csv"}, outside), "outside its roots the path is reported"


def test_kinds_are_part_of_the_key() -> None:
    """The same string typed `path` and untyped gets each kind's own verdict."""
    shared = VerdictCache()
    typed = ScanContext(kinds={"/p": "path"}, path_roots=("/srv",), verdicts=shared)
    untyped = ScanContext(path_roots=("/srv",), verdicts=shared)
    for ctx in (typed, untyped, typed, untyped):
        assert _keys(scan_arguments({"p": "/etc/hosts"}, ctx)) == _keys(scan_arguments({"p": "/etc/hosts"}, replace(ctx, verdicts=None)))


def test_nothing_is_cached_with_a_dns_resolver() -> None:
    """With `resolve_dns` the URL verdict depends on today's DNS answer: no caching at all."""
    answers = {"docs.example.com": ["93.184.216.34"]}
    ctx = ScanContext(kinds={"/u": "url"}, resolver=lambda host: answers.get(host, []), verdicts=VerdictCache())
    assert scan_arguments({"u": "http://docs.example.com/x"}, ctx) == []
    answers["docs.example.com"] = ["169.254.169.254"]  # rebinding
    assert scan_arguments({"u": "http://docs.example.com/x"}, ctx), "the new answer is seen"
    assert ctx.verdicts is not None and len(ctx.verdicts) == 0


def test_full_scan_bypasses_the_cache() -> None:
    """`full=True` is the reference path: it neither reads nor fills the cache."""
    ctx = ScanContext(verdicts=VerdictCache())
    scan_arguments({"a": TRAVERSAL}, ctx, full=True)
    assert ctx.verdicts is not None and len(ctx.verdicts) == 0


def test_kind_memo_is_bounded_and_not_copied_by_replace() -> None:
    """Attacker-chosen argument names cannot grow the memo past its bound; a replaced context starts empty."""
    ctx = ScanContext(kinds={"/p": "path"})
    scan_arguments({f"k{i}": "x" for i in range(KIND_MEMO_SIZE + 50)}, ctx)
    assert len(ctx.kind_memo) == KIND_MEMO_SIZE
    other = replace(ctx, kinds={"/k1": "url"})
    assert other.kind_memo == {}
    assert _keys(scan_arguments({"k1": "http://169.254.169.254/"}, other))


def test_threads_sharing_one_small_cache_always_get_the_uncached_answer() -> None:
    """Eight threads, a cache of 4 entries under constant eviction: every answer is the uncached one."""
    values = [TRAVERSAL, "x; rm -rf /", "' or 1=1 --", "http://169.254.169.254/", "plain", "AKIA" + "Q" * 16, "a/b", "c.txt"]
    expected = {v: _keys(scan_arguments({"v": v}, ScanContext())) for v in values}
    ctx = ScanContext(verdicts=VerdictCache(max_entries=4))
    errors: list[str] = []

    def work(offset: int) -> None:
        for i in range(200):
            v = values[(i + offset) % len(values)]
            got = _keys(scan_arguments({"v": v}, ctx))
            if got != expected[v]:
                errors.append(f"{v!r}: {got} != {expected[v]}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert ctx.verdicts is not None and len(ctx.verdicts) <= 4 and ctx.verdicts.hits > 0


# --- inside decide -------------------------------------------------------------------------------

POLICY = """
[policy]
allow = ["fs__*"]
path_roots = ["/srv/data"]

[policy.tools."fs__*"]
risk = "low"
"""
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"path": {"type": "string"}, "note": {"type": "string"}}}


def _policy(toml: str = POLICY) -> Any:
    return compile_policy(parse_config(toml), {"fs__read": ToolDefinition("fs", "read", "read a file", SCHEMA)})


def _decide(p: Any, args: dict[str, Any]) -> Any:
    call = ToolCall(Identity("alice", source="stdio"), "s", "t", "sp", "fs__read", args, server="fs", tool="read")
    return decide(p, call, SessionState("s"), 0.0)


def test_decide_warm_and_cold_give_the_same_decision() -> None:
    """Repeating a call (cache hits) changes nothing in the decision."""
    p = _policy()
    for args in ({"path": "/srv/data/a.csv", "note": "ok"}, {"path": "/etc/passwd"}, {"path": "/srv/data/x", "note": "x; rm -rf /"}):
        cold = _decide(p, args)
        p.verdicts.clear()
        assert _decide(p, args) == cold
        assert _decide(p, args) == cold
    assert p.verdicts.hits > 0


def test_each_compiled_policy_has_its_own_cache() -> None:
    """A reload (a new compiled policy) starts empty: a verdict never outlives its policy."""
    old = _policy()
    _decide(old, {"path": "/srv/data/a.csv"})
    assert len(old.verdicts) > 0
    new = _policy(POLICY.replace('path_roots = ["/srv/data"]', 'path_roots = ["/srv/other"]'))
    assert new.verdicts is not old.verdicts and len(new.verdicts) == 0
    assert _decide(new, {"path": "/srv/data/a.csv"}).effect == "deny"
    assert _decide(old, {"path": "/srv/data/a.csv"}).effect == "allow"


def test_a_failing_cache_denies_with_policy_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: an exception in the cache is an analyzer failure, denied with `policy.error`."""
    p = _policy()

    def broken(key: object) -> None:
        raise RuntimeError("cache corrupted")

    monkeypatch.setattr(p.verdicts, "get", broken)
    d = _decide(p, {"path": "/srv/data/a.csv"})
    assert (d.effect, d.error_code, d.degraded) == ("deny", "policy.error", ("policy.analyzer_failed",))


def test_resource_reads_use_the_cache_and_decide_the_same() -> None:
    """Non-tool requests (a resource URI) share the policy's cache; a hit changes nothing."""
    p = _policy(POLICY.replace("[policy]\n", '[policy]\ndefault = "allow"\n'))
    effects = []
    for uri in ("file:///etc/shadow", "file:///srv/data/a.csv"):
        call = ToolCall(Identity("alice", source="stdio"), "s", "t", "sp", f"fs__{uri}", {"uri": uri}, server="fs", tool=uri, kind="resource")
        cold = decide(p, call, SessionState("s"), 0.0)
        hits = p.verdicts.hits
        assert decide(p, call, SessionState("s"), 0.0) == cold
        assert p.verdicts.hits > hits
        effects.append(cold.effect)
    assert effects == ["deny", "allow"]


def test_secrets_are_not_kept_in_the_cache() -> None:
    """A declared secret or a value holding one is scanned every time and never stored."""
    ctx = ScanContext(kinds={"/api_key": "secret"}, verdicts=VerdictCache())
    token = "ghp_" + "Zq8Xw2Lm4Np6Rt0Vb3Yc5Hd7Jf9Kg1Saabcd"
    for _ in range(2):
        assert scan_arguments({"api_key": "s3cr3t-value-123"}, ctx) == []
        assert {f.analyzer for f in scan_arguments({"note": f"use {token}"}, ctx)} == {"secrets"}
    assert ctx.verdicts is not None
    kept = [key[2] for key in ctx.verdicts._entries]
    assert kept == ["api_key"], kept  # the (clean) key is remembered; neither secret is
    scan_arguments({"note": "plain words"}, ctx)
    assert len(ctx.verdicts) == 2


def test_quiet_words_skip_the_cache_and_lookalikes_do_not() -> None:
    """An untyped quiet word (`utf-8`) is neither looked up nor stored (a word of letters is not even
    remembered as quiet: testing it again is cheaper); a typed one, a 12-character word and a non-ASCII
    lookalike that `(?i)[a-z]` matches (Kelvin sign, long s) are scanned and stored."""
    ctx = ScanContext(kinds={"/p": "path"}, verdicts=VerdictCache())
    assert scan_arguments({"enc": "utf-8", "tags": ["finance", "emea", "x-1"]}, ctx) == []
    assert ctx.verdicts is not None and len(ctx.verdicts) == 0 and ctx.verdicts.misses == 0
    assert ctx.verdicts.quiet == {"utf-8", "x-1"}
    assert scan_arguments({"enc": "utf-8"}, ctx) == [] and ctx.verdicts.misses == 0
    scan_arguments({"p": "finance"}, ctx)
    assert len(ctx.verdicts) == 1
    for value in ("abcdefghijkl", "\u212aelvin", "\u017fecret"):
        before = ctx.verdicts.misses
        scan_arguments({"v": value}, ctx)
        assert ctx.verdicts.misses == before + 1


def test_the_quiet_set_is_bounded_and_cleared_with_the_cache() -> None:
    """At most ``max_entries`` quiet words are kept, and `clear` forgets them with the verdicts."""
    ctx = ScanContext(verdicts=VerdictCache(max_entries=2))
    assert scan_arguments({"a": "alpha-1", "b": "beta-2", "c": "gamma-3"}, ctx) == []
    assert ctx.verdicts is not None and len(ctx.verdicts.quiet) == 2
    ctx.verdicts.clear()
    assert ctx.verdicts.quiet == set()
