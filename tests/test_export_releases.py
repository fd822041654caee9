"""The export forms mean the same to each release: the file as written, its minimal form (``strip_defaults``) and
its explicit form (``explicit_config``), each for that release, give the same parsed ``DeepSpeedConfig`` in the
real release (every attribute it sets). The defaults differ between releases (``gradient_clipping`` 0.0 up to
0.18.9 and 1.0 from 0.19.0; offload ``pin_memory`` and ``bf16.check_grad_overflow`` False before 0.19), so a form
built from the newest release's defaults changed what an older release trains."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.export import explicit_config, strip_defaults
from core.presets import BUILTIN_DIR, list_presets
from tests.conftest import REPO_ROOT
from tests.oracle.oracle import SIDE_BY_SIDE, SIDE_BY_SIDE_ROOT, WORKER_PYTHONS, oracle_available

pytestmark = pytest.mark.deepspeed

RELEASES = (*SIDE_BY_SIDE, "0.19.5", "0.19.8")

#: Reads each config of a JSON list on stdin with the release's DeepSpeedConfig; prints every attribute it set
#: (repr, object addresses removed), or the error.
_PARSE = r"""
import contextlib, io, json, logging, re, sys
logging.disable(logging.WARNING)
with contextlib.redirect_stdout(io.StringIO()):
    from deepspeed.runtime.config import DeepSpeedConfig
out = []
for cfg in json.loads(sys.stdin.read()):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            parsed = DeepSpeedConfig(cfg)
        out.append({k: re.sub(r" at 0x[0-9a-f]+", "", repr(v)) for k, v in sorted(vars(parsed).items())
                    if k != "_param_dict"})
    except Exception as exc:
        out.append({"error": repr(exc)})
print(json.dumps(out))
"""

CONFIGS = [
    *(p.config for p in list_presets([BUILTIN_DIR])[0]),
    {"train_micro_batch_size_per_gpu": 4},
    {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0},
    {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 0.0, "bf16": {"enabled": True}},
    {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True},
     "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}},
]


def _parsed(release: str, configs: list[dict]) -> list[dict]:
    if release in SIDE_BY_SIDE:
        command, env = [sys.executable], {**os.environ, "PYTHONPATH": str(SIDE_BY_SIDE_ROOT / release)}
    elif release in WORKER_PYTHONS:
        command, env = [str(WORKER_PYTHONS[release])], None
    else:
        command, env = [sys.executable], None
    done = subprocess.run([*command, "-c", _PARSE], input=json.dumps(configs), capture_output=True, text=True,
                          timeout=600, cwd=REPO_ROOT, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("release", RELEASES)
def test_every_export_form_means_the_same_to_the_release(release):
    reason = oracle_available(release)
    if reason:
        pytest.skip(reason)
    forms = [(config, strip_defaults(config, version=release), explicit_config(config, version=release))
             for config in CONFIGS]
    parsed = _parsed(release, [form for triple in forms for form in triple])
    compared = 0
    for i, config in enumerate(CONFIGS):
        written, minimal, explicit = parsed[3 * i: 3 * i + 3]
        if "error" in written:  # "auto" presets: the HF Trainer's to fill, not this parser's
            continue
        compared += 1
        for name, form in (("minimal", minimal), ("explicit", explicit)):
            changed = sorted(k for k in set(written) | set(form) if written.get(k) != form.get(k))
            assert not changed, (release, name, config, forms[i], changed)
    assert compared >= 8
