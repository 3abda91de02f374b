"""Writing a project's `.opencode/codebase-index.json` in tests, trusted the way a user trusts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codebase_index.config import default_global_dir
from codebase_index.trust import trust


def write_project_config(root: Path, settings: dict[str, Any] | str, *, trusted: bool = True) -> Path:
    """Write the project file; `trusted` also records it as `codebase-index trust` does (in the test's own
    user config folder, see conftest.py), so its remote providers and outside folders are honoured."""
    path = root / ".opencode" / "codebase-index.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(settings if isinstance(settings, str) else json.dumps(settings))
    if trusted:
        trust(root, default_global_dir())
    return path
