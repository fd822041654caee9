"""Load test of the app server alone: many concurrent Streamlit websocket clients on loopback, no browser.

Usage: ``python scripts/load_test_ws.py [--sessions 50] [--duration 60]`` (``make load-ws``; ``LOAD_ARGS=...``).

Each client speaks Streamlit's own protocol (``BackMsg``/``ForwardMsg`` protobufs on ``/_stcore/stream``, as
the browser does): it opens a session, loads a preset on the Start page (selectbox + button), picks a model,
goes to the ZeRO page and then, until the time is up, flips the ZeRO stage between 2 and 3. The latency of a
change is from sending the widget change until the server reports the rerun finished; a change counts as an
error unless the rerun drew the memory caption for the new stage ("Current config: ZeRO-N") without an
exception. Unlike ``scripts/load_test.py`` (real Chromium sessions, which on a 2-core machine mostly measure
the browsers) this measures what the server does per change. Prints p50/p95/max, throughput and errors.
Each session picks its own model (``load_test.MODELS``) and every change must still name it: a session that
shows another's model, or loses its own, is an error (mixed-up or lost state).

``--hold-idle N`` instead opens N sessions that set up as above and then sit idle, and prints the server's
resident memory before, with all N held, and per session (``make load-memory``).
"""

from __future__ import annotations

import asyncio
import html
import os
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from e2e_support import streamlit_server  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from load_test import MODELS, PRESETS, Stats, report, room_arguments, think_time  # noqa: E402

from ui import fields  # noqa: E402

_STAGE = fields.field_for("zero_optimization.stage")
#: the stage control's option labels, as the app draws them (from the schema)
STAGE_LABELS = {s: fields.choice_label(s, _STAGE, fields.plain_default(_STAGE)) for s in (2, 3)}


@dataclass
class Run:
    """What one script run sent back: widgets by user key, page hashes by URL path, texts, exceptions."""

    widgets: dict[str, tuple[str, Any]] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    #: elements sent, and how the run ended (e.g. FINISHED_SUCCESSFULLY, FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
    elements: int = 0
    status: str = ""
    #: the column names of each table (st.dataframe or st.table) drawn
    tables: list[list[str]] = field(default_factory=list)


class Client:
    """One browser-less Streamlit session."""

    def __init__(self, ws: Any, timeout: float) -> None:
        self.ws = ws
        self.timeout = timeout
        self.page = ""
        self.widgets: dict[str, tuple[str, Any]] = {}
        self.pages: dict[str, str] = {}
        #: widget key → the fragment it is drawn in (a change to it reruns that fragment, as the browser does)
        self.fragments: dict[str, str] = {}

    async def rerun(self, *states: WidgetState, page: str | None = None, fragment: str | None = None) -> Run:
        """Send one rerun request (widget changes, or a page switch) and read until the script finishes."""
        if page is not None:
            self.page = self.pages[page]
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        msg.rerun_script.page_script_hash = self.page
        msg.rerun_script.widget_states.widgets.extend(states)
        if fragment is not None:
            msg.rerun_script.fragment_id = fragment
        await self.ws.send(msg.SerializeToString())
        return await self.read()

    async def read(self) -> Run:
        """Read one script run's messages until it finishes (e.g. the run of the whole app that a fragment asked
        for with ``st.rerun(scope="app")`` after its own run ended)."""
        run = Run()
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(await asyncio.wait_for(self.ws.recv(), self.timeout))
            kind = forward.WhichOneof("type")
            if kind == "navigation":
                run.pages = {p.url_pathname: p.page_script_hash for p in forward.navigation.app_pages}
            elif kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                element = forward.delta.new_element
                element_type = element.WhichOneof("type")
                inner = getattr(element, element_type)
                run.elements += 1
                if getattr(inner, "id", ""):
                    run.widgets[inner.id.split("-", 2)[-1]] = (element_type, inner)
                    if forward.delta.fragment_id:
                        self.fragments[inner.id.split("-", 2)[-1]] = forward.delta.fragment_id
                if element_type == "markdown":
                    run.texts.append(inner.body)
                elif element_type in ("dataframe", "table"):
                    run.tables.append(_columns(inner.arrow_data.data))
                elif element_type == "html":  # the app's small tables (ui.tables): the header cells
                    run.tables += [[html.unescape(c) for c in _HEADER_CELL.findall(head)]
                                   for head in _HEADER_ROW.findall(inner.body)]
                elif element_type == "exception":
                    run.exceptions.append(f"{inner.type}: {inner.message}")
            elif kind == "script_finished":
                run.status = ForwardMsg.ScriptFinishedStatus.Name(forward.script_finished)
                self.widgets = {**self.widgets, **run.widgets}
                self.pages = run.pages or self.pages
                return run

    def option(self, key: str, containing: str) -> WidgetState:
        """A change of a selectbox or a row of buttons (segmented control) to the option whose label contains
        ``containing``."""
        element_type, inner = self.widgets[key]
        buttons = element_type == "button_group"
        labels = [o.content for o in inner.options] if buttons else list(inner.options)
        label = next((o for o in labels if containing in o), None)
        if label is None:
            raise LookupError(f"{key} has no option containing {containing!r}")
        if buttons:  # the frontend sends the chosen option's label in a string array
            state = WidgetState(id=inner.id)
            state.string_array_value.data[:] = [label]
            return state
        return WidgetState(id=inner.id, string_value=label)

    def click(self, key: str) -> WidgetState:
        return WidgetState(id=self.widgets[key][1].id, trigger_value=True)


_HEADER_ROW = re.compile(r"<thead><tr>(.*?)</tr></thead>", re.S)
_HEADER_CELL = re.compile(r"<th>(.*?)</th>", re.S)


def _columns(arrow_ipc: bytes) -> list[str]:
    import pyarrow as pa

    return list(pa.ipc.open_stream(arrow_ipc).schema.names)


def _names(run: Run, model: str) -> bool:
    return any(text.startswith(f"{model} (") for text in run.texts)


def _caption_shows(run: Run, stage: int) -> bool:
    return any(f"Current config: ZeRO-{stage}" in text for text in run.texts)


async def _session(index: int, url: str, duration: float, stats: Stats, timeout: float, pace: float = 0.0,
                   hold: asyncio.Event | None = None) -> None:
    step = "connect"
    rng = random.Random(index)  # each session's own, repeatable think times
    try:
        started = time.perf_counter()
        ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None) as ws:
            client = Client(ws, timeout)
            step = "open"
            await client.rerun()
            step = "load preset"
            await client.rerun(client.option("start_preset", PRESETS[index % len(PRESETS)]))
            await client.rerun(client.click("start_load_preset"))
            step = "choose model"
            model = MODELS[index % len(MODELS)]
            await client.rerun(client.option("start_model", model))
            step = "ZeRO page"
            run = await client.rerun(page="zero")
            if not _caption_shows(run, 2) or not _names(run, model):
                raise RuntimeError(f"the ZeRO page did not show the preset's stage 2 for {model}")
            stats.setup.append(time.perf_counter() - started)
            if hold is not None:  # an idle session: stay connected until the memory is measured
                await hold.wait()
                return
            stage, end = 2, time.monotonic() + duration
            while time.monotonic() < end:
                await asyncio.sleep(think_time(pace, rng))
                stage = 5 - stage
                step = f"stage {stage}"
                sent = time.perf_counter()
                run = await client.rerun(client.option("cfg:zero_optimization.stage", STAGE_LABELS[stage]))
                elapsed = time.perf_counter() - sent
                if run.exceptions or not _caption_shows(run, stage):
                    stats.errors.append(f"session {index}: {step}: {run.exceptions or 'caption not updated'}")
                elif not _names(run, model):
                    stats.errors.append(f"session {index}: {step}: the page no longer shows its model {model}")
                else:
                    stats.latencies.append(elapsed)
                    stats.changes += 1
    except Exception as exc:  # a load test reports every failure instead of stopping at the first
        stats.errors.append(f"session {index}: {step}: {type(exc).__name__}: {exc}")


async def _main(url: str, sessions: int, duration: float, timeout: float, ramp: float, pace: float = 0.0) -> Stats:
    stats = Stats()
    tasks = []
    for index in range(sessions):
        tasks.append(asyncio.create_task(_session(index, url, duration, stats, timeout, pace)))
        await asyncio.sleep(ramp)
    await asyncio.gather(*tasks)
    return stats


def _rss_mib(pid: int) -> float:
    """Resident memory of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def _hold_idle(url: str, sessions: int, timeout: float, ramp: float, server_pid: int) -> int:
    """Open ``sessions`` idle sessions and print the server's memory with them held."""
    stats, hold = Stats(), asyncio.Event()
    await _session(0, url, 0.0, Stats(), timeout)  # warm: imports and caches, not counted as per-session memory
    before = _rss_mib(server_pid)
    tasks = []
    for index in range(sessions):
        tasks.append(asyncio.create_task(_session(index, url, 0.0, stats, timeout, hold=hold)))
        await asyncio.sleep(ramp)
    while len(stats.setup) + len(stats.errors) < sessions:
        await asyncio.sleep(0.5)
    await asyncio.sleep(2.0)
    held = _rss_mib(server_pid)
    hold.set()
    await asyncio.gather(*tasks)
    print(f"server memory: {before:.0f} MiB after one warm-up session; {held:.0f} MiB with {len(stats.setup)} idle "
          f"sessions held (each on the ZeRO page with its own preset and model): "
          f"{(held - before) / max(1, len(stats.setup)):.1f} MiB per session")
    print(f"errors: {len(stats.errors)}")
    for error in stats.errors[:20]:
        print(f"  {error}")
    return 1 if stats.errors else 0


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def main(argv: list[str] | None = None) -> int:
    parser = room_arguments(__doc__.split("\n\n")[0], kind="websocket", sessions=50, timeout=120.0, ramp=0.2)
    parser.add_argument("--hold-idle", type=int, default=0, metavar="N",
                        help="instead: hold N idle sessions and print the server's memory per session")
    args = parser.parse_args(argv)
    wall = time.perf_counter()
    if args.hold_idle:
        with streamlit_server("streamlit-load-memory.log", timeout=120) as url:
            server = next(child for child in _children(os.getpid()) if "streamlit" in _cmdline(child))
            return asyncio.run(_hold_idle(url, args.hold_idle, args.timeout, args.ramp, server))
    with streamlit_server("streamlit-load-ws.log", timeout=120) as url:
        print(f"app at {url}; {args.sessions} websocket sessions for {args.duration:.0f} s", flush=True)
        stats = asyncio.run(_main(url, args.sessions, args.duration, args.timeout, args.ramp, args.pace))
    return report(stats, args.sessions, "open + load preset + model + ZeRO page", "rerun finished",
                  time.perf_counter() - wall, duration=args.duration)


if __name__ == "__main__":
    sys.exit(main())
