"""``comms_logger`` is on whenever the key is present (a read-only hunt of 30 Nov 2026): DeepSpeed's
``DeepSpeedCommsConfig`` sets ``comms_logger_enabled = 'comms_logger' in ds_config`` and ``CommsLogger.configure``
takes ``enabled`` from that, never from the section's ``enabled``. The app had unticked ``enabled`` into
``{"enabled": false}`` and called the logger off; every collective was still timed and synchronised."""

from __future__ import annotations

import pytest
from app_support import app

import core
from core.autofix import fix_until_stable

WRITTEN_OFF = [{"enabled": False}, {}, {"enabled": False, "verbose": True}]
MEANT_ON = [{"enabled": True}, {"prof_all": False, "prof_ops": ["all_reduce"]}]


def _base(section):
    return {"train_micro_batch_size_per_gpu": 1, "comms_logger": section}


@pytest.mark.parametrize("section", WRITTEN_OFF)
def test_a_comms_logger_written_to_mean_off_is_warned_and_the_fix_removes_it(section):
    report = core.validate(_base(section))
    (finding,) = [f for f in report.findings if f.code == "misc.comms-logger-on"]
    assert not finding.fix.safe  # it turns the logger off: what the file seems to mean, not what it does
    assert "comms_logger" in fix_until_stable(_base(section)).config
    assert fix_until_stable(_base(section), unsafe=True).config == {"train_micro_batch_size_per_gpu": 1}


@pytest.mark.parametrize("section", MEANT_ON)
def test_a_comms_logger_meant_on_is_not_warned(section):
    assert "misc.comms-logger-on" not in {f.code for f in core.validate(_base(section)).findings}


@pytest.mark.deepspeed
@pytest.mark.parametrize("section", WRITTEN_OFF + MEANT_ON)
def test_deepspeed_logs_whenever_the_section_is_there(section):
    from deepspeed.utils.comms_logging import CommsLogger

    from tests.oracle import ds0195_worker

    with ds0195_worker._quiet():
        parsed = ds0195_worker._deepspeed_config_class()(_base(section), 1)
    logger = CommsLogger()
    logger.configure(parsed.comms_config)
    assert logger.enabled is True
    warned = "misc.comms-logger-on" in {f.code for f in core.validate(_base(section)).findings}
    assert warned == (section in WRITTEN_OFF)


def test_unticking_enabled_on_the_monitoring_page_does_not_say_off_and_offers_the_removal():
    at = app({"train_micro_batch_size_per_gpu": 1}, "pages/monitoring.py")
    box = lambda: next(w for w in at.checkbox if w.key == "cfg:comms_logger.enabled")  # noqa: E731
    box().check().run()
    box().uncheck().run()
    assert at.session_state["config"]["comms_logger"] == {"enabled": False}
    shown = " ".join(str(e.value) for e in at.main if hasattr(e, "value") and isinstance(e.value, str))
    assert "`comms_logger` is off" not in shown and "misc.comms-logger-on" in shown
