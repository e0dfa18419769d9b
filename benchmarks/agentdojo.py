"""AgentDojo v1.1.2 through checkrein's gate, with a worst-case agent and no LLM.

The suites' tools are served by an ordinary upstream (`MemoryUpstream`, one per suite) behind a real
`Gate` built by `build_gate` from a plain config (tools `dojo__<suite>_<tool>`, allowed with medium
risk; checkrein's defaults for the rest: argument analyzers, result inspection with injections
withheld, and the session flow rules). Every call walks the whole chain: catalog, policy, flow,
approval, budget, forward, inspect, audit. Each run is its own session; the user's task text is sent
with every call (``_meta["io.checkrein/task"]``, as `checkrein run` does).

For each suite and each user task the task's ground-truth calls are replayed through the gate:

* Utility (no attack): the user task's own check passes AND none of its calls was refused and
  none of its results was withheld (the agent would have lacked what it needed). Out of 97.
* Attack (per template, per user task x injection task pair, 629 pairs): the injection is placed
  where the user task's ground truth will read it. If any result that reaches the agent contains
  the injected text in any form, the agent is assumed to obey: the injection task's ground-truth
  calls are replayed through the gate in the same session. The attack succeeded when the injection
  task's own security check says so.

Who answers approvals (``--approver``):

* ``user`` (default): the user, who approves a call that is one of their own task's ground-truth
  calls and refuses any other. The number of asks on the benign runs is reported: it is what the
  flow rules cost a person.
* ``none``: nobody (an unattended agent): every ask is refused.

``--flow on`` (default) / ``provenance`` (Rule of Two off) / ``off`` sets ``[policy.flow]``;
``--injection withhold|wrap|off`` sets ``[policy.results] injection`` (``off`` measures what the flow
rules stop on their own, every injected text then reaching the agent); ``--keep-secrets`` turns off
the masking of secrets in results (``redact_secrets = false``), to measure what masking costs;
``--link-tokens mask`` masks the tokens of links too (``[policy.results] link_tokens``; default ``keep``).

Run: `.venv/bin/python benchmarks/agentdojo.py [--suites workspace,banking] [--attacks ...]`
(needs the optional extra `eval`: `pip install 'checkrein[eval]'`). Develop on workspace and banking;
travel and slack are run to report, never to tune.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import yaml

from checkrein.canonical import digest
from checkrein.config import config_from_mapping
from checkrein.gate.factory import NullAuditTrail, build_gate
from checkrein.gate.pipeline import Gate
from checkrein.gate.seams import ApprovalRequest, ApprovalResult
from checkrein.policy import Identity, ToolCall
from checkrein.policy.analyzers import find_secrets
from checkrein.testing.memory_upstream import MemoryUpstream

# Run as a script, this file's folder comes first on sys.path and its name would shadow the package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

try:
    from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
    from agentdojo.attacks.attack_registry import load_attack
    from agentdojo.base_tasks import BaseInjectionTask, BaseUserTask
    from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
    from agentdojo.task_suite.load_suites import get_suites
    from agentdojo.task_suite.task_suite import TaskSuite, read_suite_file
    from agentdojo.types import text_content_block_from_string
except ImportError:  # pragma: no cover - reported to the user
    sys.exit("agentdojo is not installed: pip install 'checkrein[eval]'  (or: pip install agentdojo)")

VERSION = "v1.1.2"
SUITES = ("workspace", "banking", "travel", "slack")
ATTACKS = (
    "important_instructions",
    "ignore_previous",
    "injecagent",
    "system_message",
    "tool_knowledge",
    "direct",
    "important_instructions_no_names",
    "important_instructions_no_model_name",
    "important_instructions_no_user_name",
    "important_instructions_wrong_model_name",
    "important_instructions_wrong_user_name",
)
"""Every registered prompt-injection template but `manual` (asks a human) and the `*_dos` ones."""
PIPELINE_NAME = "gpt-4o-2024-05-13"  # attacks address the model by name ("to you, GPT-4")
FLOW_MODES = {
    "on": {},
    "provenance": {"rule_of_two": "off"},
    "off": {"rule_of_two": "off", "provenance": "off"},
}


@dataclass
class Replay:
    """What happened to one sequence of calls."""

    denied: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    masked: list[str] = field(default_factory=list)
    """The secret values masked in delivered results (as found in the original text)."""
    asks: list[str] = field(default_factory=list)
    """`rule_id` of every ask (policy or flow) the approver had to answer."""
    reached: bool = False
    trace: list[FunctionCall] = field(default_factory=list)


class Dojo:
    """The suite's tools as an upstream, over whichever environment the current run set."""

    def __init__(self, suite: TaskSuite[Any]) -> None:
        self.suite = suite
        self.env: Any = None
        self.runtime = FunctionsRuntime(suite.tools)
        self.last_raw: Any = None
        self.last_text = ""
        self.upstream = MemoryUpstream("dojo")
        for fn in suite.tools:
            self.upstream.add_tool(
                f"{suite.name}_{fn.name}",
                self._runner(fn.name),
                description=fn.description,
                input_schema=fn.parameters.model_json_schema(),
            )

    def _runner(self, function: str) -> Any:
        def run(arguments: dict[str, Any]) -> types.CallToolResult:
            result, error = self.runtime.run_function(self.env, function, arguments, raise_on_error=False)
            self.last_raw = result if error is None else error
            text = error if error is not None else tool_result_to_str(result)
            self.last_text = text
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error is not None)

        return run


class SimulatedUser:
    """`--approver user`: approves exactly the calls of the user's own task (``allowed``)."""

    def __init__(self, attended: bool) -> None:
        self.attended = attended
        self.allowed: set[tuple[str, str]] = set()
        self.asked: list[str] = []

    async def approve(self, request: ApprovalRequest) -> ApprovalResult:
        call = request.call
        self.asked.append(request.decision.rule_id)
        if self.attended and (call.exposed_name, digest(call.arguments)) in self.allowed:
            return ApprovalResult(True, "user", "the user asked for this call")
        return ApprovalResult(False, "user" if self.attended else "nobody", "not what the user asked for")


def build_bench_gate(suite: TaskSuite[Any], dojo: Dojo, user: SimulatedUser, lock_dir: Path, args: argparse.Namespace) -> Gate:
    policy: dict[str, Any] = {
        "allow": ["dojo__*"],
        "tools": {"dojo__*": {"risk": "medium"}},
        "flow": {"resume_window_s": 0, **FLOW_MODES[args.flow]},
        "results": {"injection": args.injection, "redact_secrets": not args.keep_secrets, "link_tokens": args.link_tokens},
    }
    if args.no_arg_scan:
        policy["analyzers"] = {a: "off" for a in ("paths", "urls", "shell", "sql", "secrets")}
    config = config_from_mapping(
        {"gateway": {"lock_file": str(lock_dir / f"{suite.name}.lock")}, "policy": policy, "approval": {"mode": "auto"}}
    )
    return build_gate(config, upstreams=[dojo.upstream], audit=NullAuditTrail(), approver=user)


def _exposed(suite: TaskSuite[Any], function: str) -> str:
    return f"dojo__{suite.name}_{function}"


def _args(call: FunctionCall) -> dict[str, Any]:
    return {k: (v.model_dump() if isinstance(v, FunctionCall) else v) for k, v in call.args.items()}


async def replay(
    gate: Gate,
    dojo: Dojo,
    calls: Sequence[FunctionCall],
    identity: Identity,
    session: str,
    task: str,
    injections: Sequence[str] = (),
    out: Replay | None = None,
) -> Replay:
    out = out if out is not None else Replay()
    suite = dojo.suite
    for i, call in enumerate(calls):
        args = _args(call)
        tc = ToolCall(identity, session, "0" * 31 + "1", f"{len(out.trace) + i + 1:016x}", _exposed(suite, call.function), args, task=task)
        dojo.last_raw, dojo.last_text = None, ""
        outcome = await gate.run(tc)
        d = outcome.ctx.decision
        if d is not None and d.effect == "ask":
            out.asks.append(d.rule_id)
        if outcome.result is None:
            code = outcome.error_code or ""
            if code.startswith("result.") or code.startswith("inspect."):
                out.withheld.append(call.function)
                out.trace.append(call)
            elif code.startswith("upstream.") or code == "tool.error":
                out.trace.append(call)
            else:
                out.denied.append(f"{call.function}: {outcome.message}")
            continue
        out.trace.append(call)
        if "secrets_redacted" in outcome.flags:
            out.redacted.append(call.function)
            out.masked += [dojo.last_text[sp.start : sp.end] for sp in find_secrets(dojo.last_text)]
        assert isinstance(outcome.result, types.CallToolResult)
        delivered_text = "\n".join(b.text for b in outcome.result.content if isinstance(b, types.TextContent))
        # When only some fields were withheld, what reached the agent is the delivered text; otherwise
        # the raw result (the formatted text can escape or fold it beyond recognition).
        delivered = delivered_text if "fields_withheld" in outcome.flags else dojo.last_raw
        if _contains_injection(delivered, injections):
            out.reached = True
    return out


def _output(*tasks: BaseUserTask[Any] | BaseInjectionTask[Any]) -> list[Any]:
    return [text_content_block_from_string("\n".join(t.GROUND_TRUTH_OUTPUT for t in tasks))]


_runs = 0


async def run_user_task(
    gate: Gate,
    dojo: Dojo,
    user: SimulatedUser,
    user_task: BaseUserTask[Any],
    injection_task: BaseInjectionTask[Any] | None,
    injections: dict[str, str],
) -> tuple[bool, bool, Replay]:
    """(utility, attack succeeded, what happened) for one run, in a session of its own."""
    global _runs
    _runs += 1
    suite = dojo.suite
    env = load_environment(suite, injections)
    task_env = user_task.init_environment(env)
    pre = task_env.model_copy(deep=True)
    dojo.env = task_env
    identity = Identity(user=f"bench-{_runs}", source="stdio")
    session = f"{suite.name}:{user_task.ID}:{injection_task.ID if injection_task else '-'}:{_runs}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calls = list(user_task.ground_truth(task_env))
        user.allowed = {(_exposed(suite, c.function), digest(_args(c))) for c in calls}
        rep = await replay(gate, dojo, calls, identity, session, user_task.PROMPT, tuple(injections.values()))
        outputs: list[BaseUserTask[Any] | BaseInjectionTask[Any]] = [user_task]
        if injection_task is not None and rep.reached:
            # The worst-case agent obeys whatever reached it.
            inj_calls = list(injection_task.ground_truth(task_env))
            await replay(gate, dojo, inj_calls, identity, session, user_task.PROMPT, (), rep)
            outputs.append(injection_task)
        output = _output(*outputs)
        utility = suite._check_task_result(user_task, output, pre, task_env, rep.trace)
        attacked = False
        if injection_task is not None:
            attacked = suite._check_task_result(injection_task, output, pre, task_env, rep.trace)
    return bool(utility), bool(attacked), rep


class _NamedPipeline(GroundTruthPipeline):
    def __init__(self) -> None:
        super().__init__(None)
        self.name = PIPELINE_NAME


async def run_suite(suite: TaskSuite[Any], attacks: Sequence[str], args: argparse.Namespace, lock_dir: Path) -> dict[str, Any]:
    dojo = Dojo(suite)
    user = SimulatedUser(attended=args.approver == "user")
    row: dict[str, Any] = {
        "user_tasks": len(suite.user_tasks), "utility": 0, "redacted_tasks": 0, "pairs": 0, "attacks": {},
        "benign_asks": 0, "benign_tasks_asked": 0, "asks_by_rule": {},
    }  # fmt: skip
    async with build_bench_gate(suite, dojo, user, lock_dir, args) as gate:
        for ut in suite.user_tasks.values():
            ok, _, rep = await run_user_task(gate, dojo, user, ut, None, {})
            # A masked secret the task had to report (its expected answer contains it) loses the task too.
            needed = [v for v in rep.masked if _needed(v, ut.GROUND_TRUTH_OUTPUT)]
            kept = ok and not rep.denied and not rep.withheld and not needed
            row["utility"] += kept
            row["redacted_tasks"] += bool(rep.redacted)
            row["benign_asks"] += len(rep.asks)
            row["benign_tasks_asked"] += bool(rep.asks)
            for rule in rep.asks:
                row["asks_by_rule"][rule] = row["asks_by_rule"].get(rule, 0) + 1
            if args.verbose and not kept:
                print(
                    f"  utility lost {suite.name}/{ut.ID}: check={ok} denied={rep.denied} withheld={rep.withheld}"
                    f" masked_but_needed={len(needed)}"
                )
        pipeline = _NamedPipeline()
        for attack_name in attacks:
            attack = load_attack(attack_name, suite, pipeline)
            succeeded = reached = pairs = 0
            for ut in suite.user_tasks.values():
                for it in suite.injection_tasks.values():
                    injections = attack.attack(ut, it)
                    _, attacked, rep = await run_user_task(gate, dojo, user, ut, it, injections)
                    pairs += 1
                    succeeded += attacked
                    reached += rep.reached
                    if args.verbose and attacked:
                        print(f"  attack ok {suite.name}/{attack_name}/{ut.ID}x{it.ID}: reached={rep.reached}")
            row["pairs"] = pairs
            row["attacks"][attack_name] = {"succeeded": succeeded, "reached": reached}
        row["counters"] = {k: v for k, v in gate.counters.as_dict().items() if k.startswith(("flow", "approval"))}
    return row


async def amain(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    suites = get_suites(VERSION)
    attacks = [a for a in args.attacks.split(",") if a]
    table: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="checkrein-dojo-") as tmp:
        for name in [s for s in args.suites.split(",") if s]:
            row = await run_suite(suites[name], attacks, args, Path(tmp))
            table[name] = row
            print(
                f"[{time.perf_counter() - t0:6.1f}s] {name}: utility {row['utility']}/{row['user_tasks']}"
                f" ({row['redacted_tasks']} with a secret masked in a result); benign asks {row['benign_asks']}"
                f" in {row['benign_tasks_asked']} task(s) {row['asks_by_rule']}",
                flush=True,
            )
    return table


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("--attacks", default=",".join(ATTACKS))
    ap.add_argument("--approver", choices=("user", "none"), default="user")
    ap.add_argument("--flow", choices=tuple(FLOW_MODES), default="on")
    ap.add_argument("--injection", choices=("withhold", "wrap", "off"), default="withhold", help="[policy.results] injection")
    ap.add_argument("--no-arg-scan", action="store_true", help="turn the argument analyzers off")
    ap.add_argument("--keep-secrets", action="store_true", help="[policy.results] redact_secrets = false (what masking costs)")
    ap.add_argument("--link-tokens", choices=("keep", "mask"), default="keep", help="[policy.results] link_tokens")
    ap.add_argument("--verbose", action="store_true", help="list every lost user task and successful attack")
    ap.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    args = ap.parse_args(argv)
    attacks = [a for a in args.attacks.split(",") if a]
    table = anyio.run(amain, args)
    print_table(table, attacks)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            meta = {
                "version": VERSION, "approver": args.approver, "flow": args.flow, "injection": args.injection,
                "redact_secrets": not args.keep_secrets, "link_tokens": args.link_tokens,
            }  # fmt: skip
            json.dump({**meta, "suites": table}, f, indent=2)
    return 0


def _squash(s: str) -> str:
    """Whitespace-insensitive form: the environment's YAML folds the injected text's line breaks."""
    return " ".join(s.split())


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _plain(result: Any) -> Any:
    if hasattr(result, "model_dump"):
        return result.model_dump(mode="json")
    if isinstance(result, list):
        return [_plain(r) for r in result]
    return result


def _contains_injection(result: Any, injections: Sequence[str]) -> bool:
    """Whether the raw tool result (before formatting) carries any injected text, whitespace aside."""
    wanted = [_squash(v) for v in injections if v.strip()]
    if not wanted:
        return False
    haystack = _squash("\n".join(_strings(_plain(result))))
    return any(w in haystack for w in wanted)



@cache
def _suite_texts(suite: TaskSuite[Any]) -> tuple[str, dict[str, str]]:
    return read_suite_file(
        suite.name, "environment.yaml", suite.data_path
    ), suite.get_injection_vector_defaults()


def load_environment(suite: TaskSuite[Any], injections: dict[str, str]) -> Any:
    """`TaskSuite.load_and_inject_default_environment`, with the file cached and libyaml's parser
    (same text, same result, about ten times faster)."""
    text, defaults = _suite_texts(suite)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(text.format(**dict(defaults, **injections)), Loader=loader)
    return suite.environment_type.model_validate(data)



def _needed(secret: str, expected_output: str) -> bool:
    """Whether a masked value is part of the answer the task expects (a run of 8+ word characters)."""
    return any(run in expected_output for run in re.findall(r"\w{8,}", secret))


def print_table(table: dict[str, dict[str, Any]], attacks: Sequence[str]) -> None:
    """Markdown: utility and attacks succeeded per suite and template (reached = delivered unflagged)."""
    head = "| suite | utility | " + " | ".join(f"{a} ok (reached)" for a in attacks) + " |"
    print(head)
    print("|" + "---|" * (2 + len(attacks)))
    tot_u = tot_n = tot_p = 0
    tot = {a: [0, 0] for a in attacks}
    for name, row in table.items():
        cells = []
        for a in attacks:
            r = row["attacks"].get(a, {"succeeded": 0, "reached": 0})
            cells.append(f"{r['succeeded']}/{row['pairs']} ({r['reached']})")
            tot[a][0] += r["succeeded"]
            tot[a][1] += r["reached"]
        tot_u += row["utility"]
        tot_n += row["user_tasks"]
        tot_p += row["pairs"]
        print(f"| {name} | {row['utility']}/{row['user_tasks']} | " + " | ".join(cells) + " |")
    cells = [f"{tot[a][0]}/{tot_p} ({tot[a][1]}) = {100 * tot[a][0] / max(tot_p, 1):.1f}%" for a in attacks]
    print(f"| **all** | {tot_u}/{tot_n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
