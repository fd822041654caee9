"""Write docs/rules.md from the finding-code table (core/rules/codes.py): ``python scripts/gen_rules_doc.py``."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.rules.explain import markdown  # noqa: E402

TARGET = ROOT / "docs" / "rules.md"

if __name__ == "__main__":
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(markdown(), encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")
