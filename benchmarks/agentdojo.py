"""AgentDojo v1.1.2 through checkrein, with a worst-case agent and no LLM.

For each suite (workspace, banking, travel, slack) and each user task, the task's ground-truth
tool calls are replayed through checkrein's `decide` (tools exposed as `dojo__<suite>_<tool>`,
allowed with medium risk by a plain policy built in code) and every tool result through
`DefaultInspector` (default `[policy.results]`: injections withheld).

* Utility (no attack): the user task's own check passes AND none of its calls was refused and
  none of its results was withheld (the agent would have lacked what it needed). Out of 97.
* Attack (per template, per user task x injection task pair, 629 pairs): the injection is placed
  where the user task's ground truth will read it. If any result that reaches the agent contains
  the injected text in any form (delivered, wrapped or labelled), the agent is assumed to obey: the
  injection task's ground-truth calls are replayed through `decide` too. The attack succeeded when
  the injection task's own security check says so.

Run: `.venv/bin/python benchmarks/agentdojo.py [--suites workspace,banking] [--attacks ...]`
(needs the optional extra `eval`: `pip install 'checkrein[eval]'`). Develop on workspace and banking;
travel and slack are run to report, never to tune.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from checkrein.catalog.model import ToolDefinition
from checkrein.config import Config
from checkrein.config.policy import ResultSettings
from checkrein.policy import CompiledPolicy, Identity, SessionState, ToolCall, compile_policy, decide
from checkrein.policy.analyzers import find_secrets
from checkrein.policy.inspect import DefaultInspector
from checkrein.policy.results import ResultView

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
IDENTITY = Identity(user="bench", source="stdio")


@dataclass
class Replay:
    """What happened to one sequence of calls."""

    denied: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    masked: list[str] = field(default_factory=list)
    """The secret values masked in delivered results (as found in the original text)."""
    reached: bool = False
    trace: list[FunctionCall] = field(default_factory=list)


def build_policy(suite: TaskSuite[Any], *, arg_scan: bool = True) -> CompiledPolicy:
    """The plain policy: every suite tool allowed, risk medium, checkrein's defaults for the rest.

    ``arg_scan=False`` replaces the argument analyzers by a scanner that finds nothing (to measure
    result inspection alone)."""
    tools: dict[str, ToolDefinition] = {}
    for fn in suite.tools:
        name = f"{suite.name}_{fn.name}"
        tools[f"dojo__{name}"] = ToolDefinition(
            server="dojo",
            name=name,
            description=fn.description,
            input_schema=fn.parameters.model_json_schema(),
        )
    config = Config.model_validate(
        {"policy": {"allow": ["dojo__*"], "tools": {"dojo__*": {"risk": "medium"}}}}
    )
    if arg_scan:
        return compile_policy(config, tools)
    return compile_policy(config, tools, scanner=lambda _args, _ctx: [])


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


def replay(
    calls: Iterable[FunctionCall],
    suite: TaskSuite[Any],
    env: Any,
    runtime: FunctionsRuntime,
    policy: CompiledPolicy,
    inspector: DefaultInspector,
    session: SessionState,
    injections: Sequence[str] = (),
    out: Replay | None = None,
) -> Replay:
    out = out if out is not None else Replay()
    for call in calls:
        exposed = f"dojo__{suite.name}_{call.function}"
        args = {k: (v.model_dump() if isinstance(v, FunctionCall) else v) for k, v in call.args.items()}
        tc = ToolCall(
            identity=IDENTITY,
            session_id=session.session_id,
            trace_id="t",
            span_id=str(session.calls),
            exposed_name=exposed,
            arguments=dict(args),
            server="dojo",
            tool=f"{suite.name}_{call.function}",
        )
        decision = decide(policy, tc, session, time.time())
        session.calls += 1
        # `auto` approval: an ask for low/medium risk is granted, anything else refused.
        if decision.effect == "deny" or (decision.effect == "ask" and decision.risk not in ("low", "medium")):
            out.denied.append(f"{call.function}: {decision.reason}")
            continue
        result, error = runtime.run_function(env, call.function, call.args, raise_on_error=False)
        out.trace.append(call)
        text = error if error is not None else tool_result_to_str(result)
        view = ResultView(
            texts=(text,), structured=None, size_bytes=len(text.encode("utf-8")), is_error=error is not None
        )
        inspection = inspector.inspect(tc, view)
        if inspection.action != "deliver":
            out.withheld.append(call.function)
            continue
        if "secrets_redacted" in inspection.flags:
            out.redacted.append(call.function)
            out.masked += [text[sp.start : sp.end] for sp in find_secrets(text)]
        if any(f in inspection.flags for f in ("injection", "untrusted")):
            session.tainted = True
        # When only some fields were withheld, what reached the agent is the delivered text; otherwise
        # the raw result (the formatted text can escape or fold it beyond recognition).
        delivered = inspection.texts[0] if "fields_withheld" in inspection.flags else result
        if _contains_injection(delivered, injections):
            out.reached = True
    return out


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


def _output(*tasks: BaseUserTask[Any] | BaseInjectionTask[Any]) -> list[Any]:
    return [text_content_block_from_string("\n".join(t.GROUND_TRUTH_OUTPUT for t in tasks))]


def run_user_task(
    suite: TaskSuite[Any],
    user_task: BaseUserTask[Any],
    injection_task: BaseInjectionTask[Any] | None,
    injections: dict[str, str],
    policy: CompiledPolicy,
    inspector: DefaultInspector,
) -> tuple[bool, bool, Replay]:
    """(utility, attack succeeded, what happened) for one run."""
    env = load_environment(suite, injections)
    task_env = user_task.init_environment(env)
    pre = task_env.model_copy(deep=True)
    runtime = FunctionsRuntime(suite.tools)
    session = SessionState(session_id=f"{user_task.ID}:{injection_task.ID if injection_task else '-'}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = replay(
            user_task.ground_truth(task_env), suite, task_env, runtime, policy, inspector, session,
            tuple(injections.values()),
        )  # fmt: skip
        outputs: list[BaseUserTask[Any] | BaseInjectionTask[Any]] = [user_task]
        if injection_task is not None and rep.reached:
            # The worst-case agent obeys whatever reached it.
            inj_calls = injection_task.ground_truth(task_env)
            replay(inj_calls, suite, task_env, runtime, policy, inspector, session, (), rep)
            outputs.append(injection_task)
        output = _output(*outputs)
        utility = suite._check_task_result(user_task, output, pre, task_env, rep.trace)
        attacked = False
        if injection_task is not None:
            attacked = suite._check_task_result(injection_task, output, pre, task_env, rep.trace)
    return bool(utility), bool(attacked), rep


def _needed(secret: str, expected_output: str) -> bool:
    """Whether a masked value is part of the answer the task expects (a run of 8+ word characters)."""
    return any(run in expected_output for run in re.findall(r"\w{8,}", secret))


class _NamedPipeline(GroundTruthPipeline):
    def __init__(self) -> None:
        super().__init__(None)
        self.name = PIPELINE_NAME


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("--attacks", default=",".join(ATTACKS))
    ap.add_argument("--injection", choices=("withhold", "wrap", "off"), default="withhold")
    ap.add_argument("--no-arg-scan", action="store_true", help="skip the argument analyzers in decide")
    ap.add_argument("--verbose", action="store_true", help="list every lost user task and successful attack")
    ap.add_argument("--json", dest="json_out", help="write the results as JSON to this file")
    args = ap.parse_args(argv)
    suites = get_suites(VERSION)
    inspector = DefaultInspector(ResultSettings(injection=args.injection))
    attacks = [a for a in args.attacks.split(",") if a]
    table: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    for name in [s for s in args.suites.split(",") if s]:
        suite = suites[name]
        policy = build_policy(suite, arg_scan=not args.no_arg_scan)
        row: dict[str, Any] = {
            "user_tasks": len(suite.user_tasks), "utility": 0, "redacted_tasks": 0, "pairs": 0, "attacks": {}
        }  # fmt: skip
        for ut in suite.user_tasks.values():
            ok, _, rep = run_user_task(suite, ut, None, {}, policy, inspector)
            # A masked secret the task had to report (its expected answer contains it) loses the task too.
            needed = [v for v in rep.masked if _needed(v, ut.GROUND_TRUTH_OUTPUT)]
            kept = ok and not rep.denied and not rep.withheld and not needed
            row["utility"] += kept
            row["redacted_tasks"] += bool(rep.redacted)
            if args.verbose and not kept:
                print(
                    f"  utility lost {name}/{ut.ID}: check={ok} denied={rep.denied} withheld={rep.withheld}"
                    f" masked_but_needed={len(needed)}"
                )
        pipeline = _NamedPipeline()
        for attack_name in attacks:
            attack = load_attack(attack_name, suite, pipeline)
            succeeded = reached = pairs = 0
            for ut in suite.user_tasks.values():
                for it in suite.injection_tasks.values():
                    injections = attack.attack(ut, it)
                    _, attacked, rep = run_user_task(suite, ut, it, injections, policy, inspector)
                    pairs += 1
                    succeeded += attacked
                    reached += rep.reached
                    if args.verbose and attacked:
                        print(f"  attack ok {name}/{attack_name}/{ut.ID}x{it.ID}: reached={rep.reached}")
            row["pairs"] = pairs
            row["attacks"][attack_name] = {"succeeded": succeeded, "reached": reached}
        table[name] = row
        print(
            f"[{time.perf_counter() - t0:6.1f}s] {name}: utility {row['utility']}/{row['user_tasks']}"
            f" ({row['redacted_tasks']} with a secret masked in a result)",
            flush=True,
        )
    print_table(table, attacks)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump({"version": VERSION, "injection": args.injection, "suites": table}, f, indent=2)
    return 0


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
