"""Agent skills as checkrein pins and reviews them.

A skill is a directory holding ``SKILL.md`` whose YAML front matter has ``name`` and
``description``; a skills root is either one skill or a directory whose immediate non-hidden
subdirectories each are one. `check_skills` reports structure errors, a digest per skill and a
review scan of what the skill asks an agent to do. The scan points a reviewer at lines worth
reading (links, shell, credential reads, concealment, injection phrasing); it is not a control.

Digest (stable across machines and file order): ``sha256:`` of the canonical JSON of
``{"files": [{"path": <POSIX path relative to the skill>, "sha256": <hex>} ...]}`` sorted by
path. Text files (valid UTF-8, no NUL byte) are hashed with CRLF and lone CR line endings turned
into LF, so a Windows checkout (``core.autocrlf``) gives the same digest as a Linux one; other
files are hashed byte for byte. A symlink inside the skill is recorded as ``{"path", "symlink":
<target as written>}`` and never followed; one that resolves outside the root is also a finding.
``.git`` directories and ``.DS_Store`` files are left out; file modes and times are not covered.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from checkrein.canonical import digest

__all__ = ["SkillFinding", "SkillReport", "SkillsCheck", "check_skills", "skill_digest"]

FindingKind = Literal["structure", "review"]
_SKIP_DIRS = frozenset({".git"})
_SKIP_FILES = frozenset({".DS_Store"})
_MAX_SCAN_BYTES = 1024 * 1024
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class SkillFinding:
    """``kind`` ``structure`` is an error in the skill's shape; ``review`` is a line to read."""

    kind: FindingKind
    rule: str
    file: str
    line: int | None
    message: str
    excerpt: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "rule": self.rule, "file": self.file, "line": self.line, "message": self.message, "excerpt": self.excerpt}


@dataclass(frozen=True, slots=True)
class SkillReport:
    name: str
    """The front matter's ``name`` (the directory name if it has none)."""
    path: str
    """The skill directory, relative to the checked root (``.`` for a root that is one skill)."""
    description: str | None
    digest: str
    files: int
    findings: tuple[SkillFinding, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(f.kind == "structure" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "path": self.path, "description": self.description, "digest": self.digest,
            "files": self.files, "ok": self.ok, "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True, slots=True)
class SkillsCheck:
    root: str
    skills: tuple[SkillReport, ...]
    findings: tuple[SkillFinding, ...] = field(default=())
    """Findings that belong to no one skill (root missing, a subdirectory without SKILL.md...)."""

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.skills) and not any(f.kind == "structure" for f in self.findings)

    def digests(self) -> dict[str, str]:
        """Skill name -> digest (what the ledger pins)."""
        return {s.name: s.digest for s in self.skills}

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "ok": self.ok, "skills": [s.to_dict() for s in self.skills], "findings": [f.to_dict() for f in self.findings]}


def _file_sha256(path: Path) -> str:
    """SHA-256 of the file, line endings normalized for text (see the module docstring)."""
    h = hashlib.sha256()
    size = path.stat().st_size
    if size <= 16 * 1024 * 1024:
        data = path.read_bytes()
        if b"\0" not in data:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        h.update(data)
        return h.hexdigest()
    with path.open("rb") as fh:  # too big to be a text file worth normalizing: stream it raw
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def skill_digest(skill_dir: Path, *, root: Path | None = None) -> tuple[str, int, list[SkillFinding]]:
    """(digest, number of files, findings) of the skill at ``skill_dir``; symlinks resolving
    outside ``root`` (default: the skill itself) are findings. Never follows a symlink."""
    boundary = root or skill_dir
    entries: list[dict[str, str]] = []
    findings: list[SkillFinding] = []
    for dirpath, dirnames, filenames in os.walk(skill_dir, followlinks=False):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        linked_dirs = [d for d in dirnames if (base / d).is_symlink()]
        dirnames[:] = [d for d in dirnames if d not in linked_dirs]
        for name in sorted([*filenames, *linked_dirs]):
            if name in _SKIP_FILES:
                continue
            p = base / name
            rel = p.relative_to(skill_dir).as_posix()
            if p.is_symlink():
                target = os.readlink(p)
                entries.append({"path": rel, "symlink": target})
                if not _inside(p, boundary):
                    findings.append(SkillFinding("structure", "skill.symlink-outside", rel, None, f"symlink points outside the skills root ({target}); not followed"))
                continue
            if not p.is_file():
                continue
            try:
                entries.append({"path": rel, "sha256": _file_sha256(p)})
            except OSError as exc:
                findings.append(SkillFinding("structure", "skill.unreadable", rel, None, f"cannot read: {exc.strerror}"))
    entries.sort(key=lambda e: e["path"])
    return digest({"files": entries}), len(entries), findings


def _front_matter(text: str, rel: str) -> tuple[dict[str, Any] | None, list[SkillFinding]]:
    text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None, [SkillFinding("structure", "skill.front-matter", rel, 1, "SKILL.md does not start with YAML front matter (---)")]
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return None, [SkillFinding("structure", "skill.front-matter", rel, 1, "front matter is not closed by a --- line")]
    try:
        meta = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        return None, [SkillFinding("structure", "skill.front-matter", rel, line, f"front matter is not valid YAML: {getattr(exc, 'problem', exc)}")]
    if not isinstance(meta, dict):
        return None, [SkillFinding("structure", "skill.front-matter", rel, 1, "front matter is not a mapping")]
    return meta, []


_REVIEW: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("review.external-link", "links outside", re.compile(r"https?://(?!(localhost|127\.0\.0\.1|\[::1\])[:/])[^\s)>\]\"']+", re.I)),
    ("review.shell-command", "runs shell commands", re.compile(
        r"(```\s*(bash|sh|shell|zsh|console|powershell|pwsh)\b|^\s*\$ \S|\b(curl|wget)\b[^\n|]*\|\s*(ba|z)?sh\b|\brm\s+-[a-z]*r[a-z]*f|\bsudo\b|"
        r"\bchmod\s+[0-7+]|\beval\s*[\"'(`$]|\bbase64\s+(-d|--decode)\b|\bsubprocess\.|\bos\.system\(|\bnc\s+-[a-z]*e)", re.I | re.M)),
    ("review.credential-read", "reads credentials", re.compile(
        r"(~/\.ssh|\bid_(rsa|ed25519|ecdsa)\b|(^|[\s/'\"`(])\.env\b|\.aws/credentials|\.config/gcloud|application_default_credentials|\.azure/|"
        r"\.kube/config|\.netrc\b|\.npmrc\b|\.pypirc\b|\.docker/config\.json|\bprintenv\b|\benv\s*\|\s*grep|\b[A-Z][A-Z0-9_]*_(TOKEN|API_KEY|SECRET)\b|"
        r"\b(api[_ ]?key|access[_ ]?token|private key|password)s?\b)", re.I)),
    ("review.hidden-action", "hides actions from the user", re.compile(
        r"(do(n't| not) (tell|inform|mention|notify|show|alert)( this to)? the user|without (telling|asking|informing|notifying) the user|"
        r"(hide|conceal) (this|it|these|the (action|command|change)s?) from the user|without the user'?s? (knowledge|consent)|\bsilently\b|\bsecretly\b|"
        r"do(n't| not) (reveal|disclose|mention)|never (tell|mention|reveal))", re.I)),
    ("review.prompt-injection", "prompt-injection phrasing", re.compile(
        r"(ignore (all |any )?(the )?(previous|prior|above|earlier|preceding) (instructions|prompts|rules)|disregard (all |any )?(the )?(previous|prior|above|your) "
        r"(instructions|rules|guidelines)|forget (all )?(your|previous) instructions|you are now (in )?\w|new (system )?instructions:|override (your|the|all) "
        r"(rules|instructions|safety)|</?system>|\bjailbreak\b|developer mode|\bDAN\b)", re.I)),
)


def _review(path: Path, rel: str) -> list[SkillFinding]:
    try:
        if path.is_symlink() or path.stat().st_size > _MAX_SCAN_BYTES:
            return []
        data = path.read_bytes()
    except OSError:
        return []
    if b"\0" in data:
        return []
    text = data.decode("utf-8", errors="replace")
    out: list[SkillFinding] = []
    if path.suffix in (".sh", ".bash", ".py", ".js", ".ts", ".ps1", ".rb", ".pl"):
        out.append(SkillFinding("review", "review.script-file", rel, None, "ships a script an agent may run"))
    for lineno, line in enumerate(text.splitlines(), start=1):
        for rule, what, pattern in _REVIEW:
            m = pattern.search(line)
            if m:
                out.append(SkillFinding("review", rule, rel, lineno, f"{what}: {m.group(0).strip()[:80]!r}", line.strip()[:160]))
    return out


def _check_one(skill_dir: Path, root: Path) -> SkillReport:
    rel_dir = skill_dir.relative_to(root).as_posix() if skill_dir != root else "."
    prefix = "" if rel_dir == "." else rel_dir + "/"
    findings: list[SkillFinding] = []
    skill_md = skill_dir / "SKILL.md"
    meta: dict[str, Any] | None = None
    if skill_md.is_symlink() or not skill_md.is_file():
        findings.append(SkillFinding("structure", "skill.missing-skill-md", prefix + "SKILL.md", None, "no SKILL.md (a symlinked one is not followed)"))
    else:
        try:
            meta, errs = _front_matter(skill_md.read_text(encoding="utf-8"), prefix + "SKILL.md")
            findings.extend(errs)
        except (OSError, UnicodeDecodeError) as exc:
            findings.append(SkillFinding("structure", "skill.unreadable", prefix + "SKILL.md", None, f"cannot read as UTF-8: {exc}"))
    name = skill_dir.name if skill_dir != root else skill_dir.resolve().name
    description: str | None = None
    if meta is not None:
        raw_name, raw_desc = meta.get("name"), meta.get("description")
        if not isinstance(raw_name, str) or not raw_name.strip():
            findings.append(SkillFinding("structure", "skill.name", prefix + "SKILL.md", 2, "front matter has no `name`"))
        else:
            name = raw_name.strip()
            if not _NAME.fullmatch(name) or len(name) > 64:
                findings.append(SkillFinding("structure", "skill.name", prefix + "SKILL.md", 2, f"name {name!r} is not 1-64 lowercase letters, digits and hyphens"))
            if skill_dir != root and name != skill_dir.name:
                findings.append(SkillFinding("structure", "skill.name", prefix + "SKILL.md", 2, f"name {name!r} differs from its directory {skill_dir.name!r}"))
        if not isinstance(raw_desc, str) or not raw_desc.strip():
            findings.append(SkillFinding("structure", "skill.description", prefix + "SKILL.md", 2, "front matter has no `description`"))
        else:
            description = raw_desc.strip()
            if len(description) > 1024:
                findings.append(SkillFinding("structure", "skill.description", prefix + "SKILL.md", 2, "description is longer than 1024 characters"))
    value, count, link_findings = skill_digest(skill_dir, root=root)
    findings.extend(SkillFinding(f.kind, f.rule, prefix + f.file, f.line, f.message) for f in link_findings)
    for dirpath, dirnames, filenames in os.walk(skill_dir, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for fname in sorted(filenames):
            p = Path(dirpath) / fname
            findings.extend(_review(p, prefix + p.relative_to(skill_dir).as_posix()))
    return SkillReport(name=name, path=rel_dir, description=description, digest=value, files=count, findings=tuple(findings))


def check_skills(root: str | os.PathLike[str]) -> SkillsCheck:
    """Check the skill or skills root at ``root``. Never raises for bad content: a missing root,
    a subdirectory without SKILL.md or a symlinked skill directory are findings."""
    base = Path(root)
    if not base.is_dir():
        return SkillsCheck(str(base), (), (SkillFinding("structure", "skill.root", str(base), None, "not a directory"),))
    if (base / "SKILL.md").exists() or (base / "SKILL.md").is_symlink():
        return SkillsCheck(str(base), (_check_one(base, base),))
    skills: list[SkillReport] = []
    findings: list[SkillFinding] = []
    for child in sorted(base.iterdir(), key=lambda p: p.name):
        if child.name.startswith("."):
            continue
        if child.is_symlink():
            where = "inside" if _inside(child, base) else "outside"
            findings.append(SkillFinding("structure", "skill.symlink-outside" if where == "outside" else "skill.symlinked-dir", child.name, None, f"skill directory is a symlink ({os.readlink(child)}, {where} the root); not followed"))
            continue
        if child.is_dir():
            skills.append(_check_one(child, base))
    if not skills and not findings:
        findings.append(SkillFinding("structure", "skill.missing-skill-md", "SKILL.md", None, "no SKILL.md here and no skill subdirectories"))
    seen: dict[str, str] = {}
    for s in skills:
        if s.name in seen:
            findings.append(SkillFinding("structure", "skill.duplicate-name", s.path, None, f"skill name {s.name!r} is also used by {seen[s.name]!r}"))
        seen.setdefault(s.name, s.path)
    return SkillsCheck(str(base), tuple(skills), tuple(findings))
