"""Savings per answer: tokens a tool returned vs the tokens of the whole files its results point into
(what grep-and-read of those files would have cost), totalled per tool for this session and over all
sessions of the index (`savings.json` beside the database).

Whole-file counts are cached per (path, size, mtime), so a file is tokenized once until it changes.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from ..private_files import replace_private
from .tokens import counter

SAVINGS_FILE = "savings.json"
MAX_SESSIONS = 50  # sessions kept in the file (the oldest are folded into the totals only)


class ToolSavings(msgspec.Struct, rename="camel"):
    answers: int = 0
    returned_tokens: int = 0
    file_tokens: int = 0

    def add(self, returned: int, files: int) -> None:
        self.answers += 1
        self.returned_tokens += returned
        self.file_tokens += files


class SavingsReport(msgspec.Struct, rename="camel"):
    tokenizer: str
    session: str
    session_started_at: float
    this_session: dict[str, ToolSavings]
    all_sessions: dict[str, ToolSavings]
    sessions: int


def _ratio(s: ToolSavings) -> float | None:
    return round(s.file_tokens / s.returned_tokens, 2) if s.returned_tokens else None


class Savings:
    """The savings ledger of one process (a session) for one index."""

    def __init__(self, index_dir: Path, read_file: Callable[[str], str | None]) -> None:
        self.index_dir = index_dir
        self._read_file = read_file
        self.session = uuid.uuid4().hex[:12]
        self.started_at = time.time()
        self._lock = threading.Lock()
        self._tools: dict[str, ToolSavings] = {}
        self._file_tokens: dict[str, tuple[int, int, int]] = {}

    def file_tokens(self, path: str, stat: Callable[[str], os.stat_result | None]) -> int:
        st = stat(path)
        if st is None:
            return 0
        cached = self._file_tokens.get(path)
        if cached is not None and cached[:2] == (st.st_size, st.st_mtime_ns):
            return cached[2]
        text = self._read_file(path)
        tokens = counter().count(text) if text else 0
        self._file_tokens[path] = (st.st_size, st.st_mtime_ns, tokens)
        return tokens

    def record(
        self, tool: str, text: str, paths: Iterable[str], stat: Callable[[str], os.stat_result | None]
    ) -> dict[str, int]:
        """Count one answer; returns {returnedTokens, fileTokens} for the answer's data."""
        returned = counter().count(text)
        with self._lock:
            files = sum(self.file_tokens(p, stat) for p in dict.fromkeys(paths))
            self._tools.setdefault(tool, ToolSavings()).add(returned, files)
            snapshot = dict(self._tools)
        self._persist(snapshot)
        return {"returnedTokens": returned, "fileTokens": files}

    def _persist(self, tools: dict[str, ToolSavings]) -> None:
        """Write this session's totals into savings.json (best effort: savings never fail an answer)."""
        path = self.index_dir / SAVINGS_FILE
        try:
            data = read_ledger(path)
            sessions = data.setdefault("sessions", {})
            sessions[self.session] = {"startedAt": self.started_at, "tools": msgspec.to_builtins(tools)}
            if len(sessions) > MAX_SESSIONS:
                oldest = sorted(sessions, key=lambda s: sessions[s].get("startedAt", 0))[0]
                _fold(data.setdefault("archived", {}), sessions.pop(oldest)["tools"])
            replace_private(path, json.dumps(data).encode("utf-8"))
        except OSError:
            pass

    def report(self) -> SavingsReport:
        with self._lock:
            mine = {
                k: ToolSavings(v.answers, v.returned_tokens, v.file_tokens) for k, v in self._tools.items()
            }
        data = read_ledger(self.index_dir / SAVINGS_FILE)
        return ledger_report(data, counter().name, self.session, self.started_at, mine)


def read_ledger(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _fold(into: dict[str, Any], tools: dict[str, Any]) -> None:
    for tool, s in tools.items():
        t = into.setdefault(tool, {"answers": 0, "returnedTokens": 0, "fileTokens": 0})
        for key in ("answers", "returnedTokens", "fileTokens"):
            t[key] = int(t.get(key, 0)) + int(s.get(key, 0))


def ledger_report(
    data: dict[str, Any],
    tokenizer: str,
    session: str = "",
    started_at: float = 0.0,
    mine: dict[str, ToolSavings] | None = None,
) -> SavingsReport:
    """Totals per tool over every session in the ledger (plus `mine`, not yet written)."""
    sessions = dict(data.get("sessions", {}))
    if mine is not None:
        sessions[session] = {"startedAt": started_at, "tools": msgspec.to_builtins(mine)}
    total: dict[str, Any] = {}
    _fold(total, data.get("archived", {}))
    for s in sessions.values():
        _fold(total, s.get("tools", {}))
    every = {k: msgspec.convert(v, ToolSavings) for k, v in sorted(total.items())}
    return SavingsReport(
        tokenizer, session, started_at, dict(sorted((mine or {}).items())), every, len(sessions)
    )


def format_savings(report: SavingsReport) -> str:
    """Per tool: answers, tokens returned, tokens of the files they point into, and the ratio."""

    def table(rows: dict[str, ToolSavings]) -> list[str]:
        if not rows:
            return ["  (no answers yet)"]
        out = [f"  {'tool':<24}{'answers':>8}{'returned':>11}{'whole files':>13}{'saved':>9}"]
        total = ToolSavings()
        for tool, s in rows.items():
            ratio = _ratio(s)
            out.append(
                f"  {tool:<24}{s.answers:>8}{s.returned_tokens:>11}{s.file_tokens:>13}"
                f"{(f'{ratio}x' if ratio else '-'):>9}"
            )
            total.answers += s.answers
            total.returned_tokens += s.returned_tokens
            total.file_tokens += s.file_tokens
        ratio = _ratio(total)
        out.append(
            f"  {'all tools':<24}{total.answers:>8}{total.returned_tokens:>11}{total.file_tokens:>13}"
            f"{(f'{ratio}x' if ratio else '-'):>9}"
        )
        return out

    lines = [f"token savings (tokens counted with {report.tokenizer}):"]
    if report.session:
        lines += ["this session:", *table(report.this_session)]
    lines += [f"all sessions ({report.sessions}):", *table(report.all_sessions)]
    return "\n".join(lines)


def summary_line(rows: dict[str, ToolSavings]) -> str:
    """`12 answers: 9,830 tokens returned vs 412,776 in the whole files (42.0x)`."""
    answers = sum(s.answers for s in rows.values())
    if not answers:
        return "no answers recorded yet"
    returned = sum(s.returned_tokens for s in rows.values())
    files = sum(s.file_tokens for s in rows.values())
    ratio = f" ({files / returned:.1f}x)" if returned else ""
    return f"{answers} answers: {returned:,} tokens returned vs {files:,} in the whole files{ratio}"
