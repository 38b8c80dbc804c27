"""The kiosk page in a real headless Chromium (Debian's), driven over its DevTools protocol, against `hound-speaker
run` (simulated board on stdin, file devices) and the local Houndify service: what a person sees on the speaker's
screen.

    HOUND_SPEAKER_BIN=.build/debug/hound-speaker Tests/kiosk/run.sh
KIOSK_SCREENSHOT=path also saves a screenshot of the page with an answer and a timer (the README's picture).
"""

import itertools
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest
import websocket

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from run_speaker import BIN, CLIENT_ID, CLIENT_KEY, HANG_GUARD, Speaker as RunSpeaker  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [pytest.mark.skipif(not BIN, reason="set HOUND_SPEAKER_BIN to the hound-speaker to test"),
              pytest.mark.skipif(not CHROMIUM, reason="Debian's chromium is not installed (apt-get install chromium)")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOUNDIFY_")}
    env.update(extra)
    return env


class Service:
    """The local Houndify-compatible service on a free port."""

    def __init__(self, tmp):
        self.config = os.path.join(tmp, "service.toml")
        with open(self.config, "w") as f:
            f.write(f'[houndify]\nclient_id = "{CLIENT_ID}"\nclient_key = "{CLIENT_KEY}"\n')
        os.chmod(self.config, 0o600)
        self.process = subprocess.Popen([BIN, "serve", "--port", "0", "--config", self.config], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, env=clean_env())
        line = self.process.stdout.readline()
        match = re.match(r"listening on http://127\.0\.0\.1:(\d+)", line)
        assert match, f"serve said {line!r}"
        self.port = int(match.group(1))
        threading.Thread(target=lambda: [None for _ in self.process.stdout], daemon=True).start()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=HANG_GUARD)


class Speaker(RunSpeaker):
    """`run` with the control API on a free port, against the local service; the microphone file read at a
    microphone's pace, so the level meter moves as it would (levels are paced by real time too)."""

    def __init__(self, tmp, service_port, screen="dim_after = 0", timers_file=None):
        self.control = free_port()
        super().__init__(pathlib.Path(tmp), service_port, pacing="auto", extra=f"""[houndify.request_info]
LocalServiceTranscript = "what time is it"
[speaker]
timers_file = "{timers_file or f'{tmp}/timers.json'}"
mute_file = "{tmp}/muted"
[control]
listen = "127.0.0.1:{self.control}"
[screen]
{screen}
""")

    def ctl(self, *words):
        return subprocess.run([BIN, "ctl", *words, "--config", self.config], capture_output=True, text=True,
                              timeout=HANG_GUARD, env=clean_env())


class Browser:
    """Headless Chromium with one page, over the DevTools protocol (a WebSocket)."""

    def __init__(self, tmp):
        self.process = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
             "--remote-allow-origins=*", f"--user-data-dir={tmp}/chromium", "--window-size=1024,600", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.monotonic() + HANG_GUARD
        while port is None and time.monotonic() < deadline:
            line = self.process.stderr.readline()
            match = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if match:
                port = int(match.group(1))
        assert port, "Chromium printed no DevTools address"
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(p for p in pages if p["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=HANG_GUARD)
        self.ids = itertools.count(1)

    def call(self, method, **params):
        id = next(self.ids)
        self.socket.send(json.dumps({"id": id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == id:
                assert "error" not in message, f"{method}: {message['error']}"
                return message.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def wait_until(self, expression, what):
        """Polls `expression` in the page until it is true (no fixed sleeps: up to the hang guard)."""
        deadline = time.monotonic() + HANG_GUARD
        while time.monotonic() < deadline:
            result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
            # Not there yet (the page still loading) counts as not true yet.
            if "exceptionDetails" not in result and result["result"].get("value"):
                return
            time.sleep(0.05)
        raise AssertionError(f"the page never showed {what}: {self.evaluate('document.body.innerText')!r}")

    def stop(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=HANG_GUARD)


@pytest.fixture
def rig():
    tmp = tempfile.mkdtemp(prefix="hs-kiosk-")
    service = Service(tmp)
    speaker = Speaker(tmp, service.port)
    browser = Browser(tmp)
    browser.call("Page.enable")
    browser.call("Page.navigate", url=f"http://127.0.0.1:{speaker.control}/")
    browser.wait_until("document.getElementById('state').textContent === 'Ready'", "the ready state")
    # Everything the state line and the partial transcript ever show, however briefly.
    browser.evaluate("""window.seen = { state: [], partial: [], level: [] };
        for (const id of ['state', 'partial']) new MutationObserver(() => {
            const text = document.getElementById(id).textContent;
            if (text && window.seen[id].at(-1) !== text) window.seen[id].push(text);
        }).observe(document.getElementById(id), { childList: true, characterData: true, subtree: true });
        const meter = document.querySelector('#level span');
        new MutationObserver(() => window.seen.level.push(parseFloat(meter.style.width)))
            .observe(meter, { attributes: true, attributeFilter: ['style'] }); true""")
    yield speaker, browser
    browser.stop()
    speaker.stop()
    service.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def test_a_question_by_the_button_shows_its_words_the_answer_and_the_states(rig):
    speaker, browser = rig
    events = speaker.press()
    final = next(e for e in events if e.get("event") == "final")
    browser.wait_until("document.getElementById('answer-text').textContent.length > 0", "the answer")
    assert browser.evaluate("document.getElementById('answer-text').textContent") == final["answer"]
    assert browser.evaluate("document.getElementById('transcript').textContent") == "what time is it"
    browser.wait_until("document.getElementById('state').textContent === 'Ready'", "ready again")
    seen = browser.evaluate("window.seen")
    for state in ("Listening…", "Thinking…", "Speaking"):
        assert state in seen["state"], seen
    assert seen["partial"], "no partial transcript was shown"
    assert all("what time is it".startswith(p) for p in seen["partial"]), seen["partial"]
    # The level meter moved with the question's loudness, as the level events told it.
    levels = [e["dbfs"] for e in events if e.get("event") == "level"]
    assert levels, "no level events while the question was recorded"
    widths = {max(0.0, min(100.0, (db + 60) / 60 * 100)) for db in levels}
    widths.add(0.0)  # the meter starts empty for each question (CSS keeps widths to 6 digits)
    assert seen["level"] and max(seen["level"]) > 0, seen["level"]
    assert all(any(abs(w - x) < 1e-3 for x in widths) for w in seen["level"]), (seen["level"], widths)


def test_the_weather_is_a_card_drawn_from_its_conditions(rig):
    speaker, browser = rig
    asked = speaker.ctl("text", "what's the weather like")
    assert asked.returncode == 0, asked.stderr
    weather = speaker.wait_for(lambda e: e.get("event") == "display")["data"]["Weather"]
    browser.wait_until("document.querySelector('#card .weather .temp') !== null", "the weather card")
    card = browser.evaluate("""(() => { const c = document.querySelector('#card .weather');
        return { temp: c.querySelector('.temp').textContent, conditions: c.querySelector('.conditions').textContent,
                 icon: c.querySelector('.now .icon').textContent, place: c.querySelector('.place').textContent,
                 days: [...c.querySelectorAll('.day .name')].map((d) => d.textContent) }; })()""")
    assert card["temp"] == weather["temperature"]
    assert card["conditions"] == weather["conditions"] == "Mostly cloudy"
    assert card["icon"] == "☁"  # "mostlycloudy", drawn by the page itself
    assert card["place"].startswith(weather["location"])
    assert card["days"] == ["Tue"]  # 2019-08-27, the recorded forecast's day
    assert not browser.evaluate("document.getElementById('card').hidden")


def test_a_hound_link_in_the_answers_html_asks_in_the_same_conversation(rig):
    speaker, browser = rig
    # Houndify's HTML, as a display event brings it: a link that fills the sandboxed frame.
    browser.evaluate("""showAnswer('Here you are.', { HTMLData: { SmallScreenHTML:
        "<a href='hound://textsearch?q=what%20time%20is%20it' style='display:block;height:100vh'>What time is it?</a>" } }); true""")
    box = browser.evaluate("(() => { const r = document.getElementById('answer-html').getBoundingClientRect();"
                           " return [r.x + r.width / 2, r.y + 20]; })()")
    browser.wait_until("document.getElementById('answer-html').contentWindow !== null", "the frame")
    time.sleep(0.5)  # the frame's document loads on its own; there is no event for it across the sandbox
    for kind in ("mousePressed", "mouseReleased"):
        browser.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
    final = speaker.wait_for(lambda e: e.get("event") == "final")
    assert final["transcript"] == "what time is it"
    browser.wait_until(f"document.getElementById('answer-text').textContent === {json.dumps(final['answer'])}",
                       "the linked question's answer")


def test_a_timer_counts_down_rings_and_stops_from_the_screen(rig):
    speaker, browser = rig
    asked = speaker.ctl("text", "set a timer for 4 seconds")
    assert asked.returncode == 0, asked.stderr
    browser.wait_until("document.querySelector('#timers li[data-kind=timer]') !== null", "the timer")
    shown = set()
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        li = browser.evaluate("(() => { const li = document.querySelector('#timers li');"
                              " return li && [li.dataset.status, li.querySelector('.left').textContent]; })()")
        shown.add(tuple(li))
        if li[0] == "ringing":
            break
        time.sleep(0.1)
    counted = sorted(t for s, t in shown if s == "running")
    assert len(counted) >= 2, f"the countdown did not move: {shown}"
    assert all(re.fullmatch(r"0:0[0-4]", t) for t in counted), shown
    browser.wait_until("document.getElementById('state').textContent === 'Timer!'", "the ringing state")
    if os.environ.get("KIOSK_SCREENSHOT"):
        shot = browser.call("Page.captureScreenshot", format="png")["data"]
        import base64
        with open(os.environ["KIOSK_SCREENSHOT"], "wb") as f:
            f.write(base64.b64decode(shot))
    browser.evaluate("document.querySelector('#timers .stop-ring').click(); true")
    speaker.wait_for(lambda e: e.get("event") == "timer" and e.get("change") == "stopped")
    browser.wait_until("document.querySelector('#timers li') === null", "the timer gone")
    browser.wait_until("document.getElementById('state').textContent === 'Ready'", "ready again")


def test_a_quiet_screen_dims_and_a_touch_wakes_it_without_pressing_anything():
    tmp = tempfile.mkdtemp(prefix="hs-kiosk-")
    service = Service(tmp)
    speaker = Speaker(tmp, service.port, screen="dim_after = 2\ndim_level = 10")
    browser = Browser(tmp)
    try:
        browser.call("Page.navigate", url=f"http://127.0.0.1:{speaker.control}/")
        dimmed = speaker.wait_for(lambda e: e.get("event") == "screen")
        assert dimmed == {"event": "screen", "dimmed": True, "percent": 10, "backlight": False}
        # No backlight of its own: the page darkens its picture to a tenth, and keeps showing it.
        browser.wait_until("document.body.classList.contains('dimmed')", "the dimmed page")
        browser.wait_until("getComputedStyle(document.getElementById('dim')).opacity === '0.9'", "the darkened picture")
        assert browser.evaluate("document.getElementById('state').textContent") == "Ready"
        # A touch on "Touch to talk" while dimmed only wakes the screen.
        box = browser.evaluate("(() => { const r = document.getElementById('talk').getBoundingClientRect();"
                               " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            browser.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)
        seen = []
        bright = speaker.wait_for(lambda e: e.get("event") == "screen", seen)
        assert bright == {"event": "screen", "dimmed": False, "percent": 100, "backlight": False}
        browser.wait_until("!document.body.classList.contains('dimmed')", "the page at full brightness")
        assert not [e for e in seen if e.get("event") == "state"], f"the touch pressed a button: {seen}"
    finally:
        browser.stop()
        speaker.stop()
        service.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_timers_that_could_not_be_saved_say_so_on_the_screen():
    """Issue #34: a timer confirmed that a restart would lose. Here the state directory is a file (the tests run as
    root, who may write any directory): the timer is set and counts down all the same, the answer says it could
    not be saved, and the screen says so until a save works."""
    tmp = tempfile.mkdtemp(prefix="hs-kiosk-")
    with open(f"{tmp}/state", "w") as f:
        f.write("not a directory")
    service = Service(tmp)
    speaker = Speaker(tmp, service.port, timers_file=f"{tmp}/state/timers.json")
    browser = Browser(tmp)
    try:
        browser.call("Page.navigate", url=f"http://127.0.0.1:{speaker.control}/")
        browser.wait_until("document.getElementById('state').textContent === 'Ready'", "the ready state")
        assert browser.evaluate("document.getElementById('unsaved').hidden")
        asked = speaker.ctl("text", "set a timer for 10 minutes")
        assert asked.returncode == 0, asked.stderr
        assert "I couldn't save it, though, so a restart would lose it." in asked.stdout, asked.stdout
        browser.wait_until("document.querySelector('#timers li[data-kind=timer]') !== null", "the timer")
        browser.wait_until("!document.getElementById('unsaved').hidden", "that the timers are not saved")
        notice = browser.evaluate("document.getElementById('unsaved').textContent")
        assert notice.startswith("Timers not saved: a restart would lose them") and f"{tmp}/state" in notice, notice
        status = speaker.ctl("status")
        assert status.returncode == 0, status.stderr
        snapshot = json.loads(status.stdout)
        assert snapshot["timers_saved"] is False and f"{tmp}/state" in snapshot["timers_save_problem"], snapshot
        # A page opened now learns it from the snapshot.
        browser.call("Page.reload")
        browser.wait_until("document.querySelector('#timers li[data-kind=timer]') !== null", "the timer after a reload")
        browser.wait_until("!document.getElementById('unsaved').hidden", "the notice after a reload")
    finally:
        browser.stop()
        speaker.stop()
        service.stop()
        shutil.rmtree(tmp, ignore_errors=True)
