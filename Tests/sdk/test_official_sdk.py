"""Drive the OFFICIAL Houndify Python SDK (PyPI `houndify` 2.1.4) against `hound-speaker serve`.

The local service must serve the unmodified reference client. Run through Tests/sdk/run.sh, which
builds the virtualenv; the server binary comes from $HOUND_SPEAKER_BIN.

What the 2.1.4 SDK does, read from its source (houndify/houndify.py), and what these tests rely on:

* TextHoundClient.query(): POST /v1/text?query=<urllib.parse.quote(q)> with the RequestInfo JSON as
  the body, read with http.client. It gunzips the body only if the response carries the header
  `Hound-Response-Content-Encoding: gzip`. It never looks at the HTTP status: a body that is not
  JSON raises `HoundifySDKError("Invalid ID or Key")`. TextHoundClient ignores its `timeout`
  argument (no socket timeout), so pytest-timeout is what keeps these tests from hanging.
* StreamingHoundClient: start() sends the headers, starts a reader thread on the raw socket, then
  sends the RequestInfo and the WAV (or Speex) header, each as one HTTP chunk. fill() sends each
  PCM buffer as one chunk (Speex: each encoded 20 ms frame) and returns `self.audioFinished`.
  The reader thread parses the HTTP response itself: each HTTP chunk must be exactly one JSON
  message (gunzipped when it starts with 1f 8b); it calls listener.onPartialTranscript(text) for
  each partial and, with enableVAD=True, sets audioFinished when a partial has
  "SafeToStopAudio": true; it stops at the first "SoundHoundVoiceSearchResult" (or a message with
  "Status": "Error", which goes to listener.onError and is returned by finish()).
  It sets audioFinished in a `finally` too, so fill() also returns True once the reader has died.
  finish() sends the terminating chunk, joins the reader and returns the final HoundServer dict,
  or raises `HoundifySDKError` chained (__cause__) to whatever killed the reader: for a body that
  is not JSON that is a plain `Exception(<body text>)`.

So the server has to (the streaming reader is a hand-written HTTP parser):
* answer /v1/audio with `Transfer-Encoding: chunked` written exactly so (the reader matches the
  whole header line, lower-cased), start answering while the body is still uploading, and put
  one whole JSON message, gzipped on its own if asked, in each chunk, with a bare hex size line
  (no chunk extensions); never send two messages in one chunk or split one over two;
* give every partial a "PartialTranscript" string (a missing key kills the reader);
* send a Content-Length header, if any, as exactly `Content-Length: N` (the reader takes
  `split(" ")[1]`) and close the connection after such a body: the reader waits for N + 2 bytes
  or EOF;
* after refusing a request (403), read the request body to its end before closing; closing
  earlier makes the SDK's fill() raise a raw ConnectionResetError/BrokenPipeError.
"""

import base64
import contextlib
import datetime
import hashlib
import hmac
import http.client
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
import wave
import zoneinfo

import pytest

import houndify

pytestmark = pytest.mark.timeout(90)

BIN_ENV = "HOUND_SPEAKER_BIN"

CLIENT_ID = "AAECAwQFBgcICQoLDA0ODw=="
CLIENT_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="
# Same length and alphabet as CLIENT_KEY, different bytes: the signature will not verify.
WRONG_KEY = base64.urlsafe_b64encode(bytes(range(64, 128))).decode()
USER_ID = "test_user"

TIME_ZONE = "Asia/Kolkata"  # UTC+05:30: a server that ignores TimeZone is off by 5.5 hours
LATITUDE, LONGITUDE = 12.9716, 77.5946
TRANSCRIPT = "what time is it"

STARTUP_DEADLINE_S = 20.0
LISTEN_RE = re.compile(r"^listening on http://127\.0\.0\.1:(\d+)$")

SAMPLE_RATE = 16000
CHUNK_BYTES = 2 * SAMPLE_RATE * 20 // 1000  # 20 ms of 16-bit mono = 640 bytes
SILENCE_S = 3.0
# The server flags SafeToStopAudio after about 0.7 s of trailing silence. Audio is fed as fast as
# possible, so without a wait the client could send all 3 s before the server's partial comes
# back. After this much silence has been fed (plus espeak-ng's own ~0.4 s tail) the test stops
# feeding and waits, on an event and with a deadline, for the SDK's VAD flag.
SILENCE_BEFORE_WAIT_S = 1.5
SAFE_TO_STOP_DEADLINE_S = 15.0
STREAM_TIMEOUT_S = 30  # socket timeout given to StreamingHoundClient; must not expire in a good run


# --------------------------------------------------------------------------------------------
# Server fixture
# --------------------------------------------------------------------------------------------


class RunningServer:
    def __init__(self, proc, port, log_path):
        self.proc = proc
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        self.extra_stdout = []

    @property
    def text_endpoint(self):
        return self.base + "/v1/text"

    @property
    def audio_endpoint(self):
        return self.base + "/v1/audio"

    def log(self):
        try:
            with open(self.log_path, "r", errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""


def _write_config(directory):
    path = os.path.join(directory, "speaker.toml")
    text = (
        "[houndify]\n"
        f'client_id = "{CLIENT_ID}"\n'
        f'client_key = "{CLIENT_KEY}"\n'
        'endpoint = "http://127.0.0.1:1"\n'
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def _read_first_line(proc, deadline_s):
    """Read one stdout line from proc within deadline_s, without sleeping."""
    sel = selectors.DefaultSelector()
    fd = proc.stdout.fileno()
    sel.register(fd, selectors.EVENT_READ)
    buf = b""
    end = time.monotonic() + deadline_s
    try:
        while b"\n" not in buf:
            left = end - time.monotonic()
            if left <= 0:
                return None, buf
            if not sel.select(timeout=left):
                continue
            data = os.read(fd, 4096)
            if not data:  # EOF: the process closed stdout (probably exited)
                return None, buf
            buf += data
    finally:
        sel.close()
    line, rest = buf.split(b"\n", 1)
    return line.decode("utf-8", "replace"), rest


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    binary = os.environ.get(BIN_ENV)
    if not binary:
        pytest.skip(f"{BIN_ENV} is not set: set it to the hound-speaker executable to run the official-SDK tests")
    if os.sep not in binary:
        binary = shutil.which(binary) or binary
    assert os.path.isfile(binary) and os.access(binary, os.X_OK), f"{BIN_ENV}={binary!r} is not an executable file"

    tmp = tmp_path_factory.mktemp("hound-serve")
    config = _write_config(str(tmp))
    log_path = os.path.join(str(tmp), "server.stderr")
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [binary, "serve", "--port", "0", "--config", config],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log,
    )
    srv = None
    try:
        line, rest = _read_first_line(proc, STARTUP_DEADLINE_S)
        if line is None:
            state = "exited with code %s" % proc.poll() if proc.poll() is not None else "still running"
            pytest.fail(
                f"`{binary} serve` printed no 'listening on' line "
                f"({state}; deadline {STARTUP_DEADLINE_S:.0f} s); stdout so far: {rest!r}; stderr:\n" + open(log_path, errors="replace").read()[-4000:]
            )
        m = LISTEN_RE.match(line.rstrip("\r"))
        assert m, f"first stdout line must be 'listening on http://127.0.0.1:PORT', got {line!r}"
        srv = RunningServer(proc, int(m.group(1)), log_path)
        if rest:
            srv.extra_stdout.append(rest)

        # Keep draining stdout so the server can never block on a full pipe.
        def drain():
            for chunk in iter(lambda: proc.stdout.read1(4096), b""):
                srv.extra_stdout.append(chunk)

        threading.Thread(target=drain, daemon=True).start()
        yield srv
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                pytest.fail("hound-speaker serve did not exit within 10 s of SIGTERM")
        log.close()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _spoken_time_ok(spoken, before, after):
    """True if `spoken` contains a clock time between `before` and `after` (aware datetimes), ±1 min."""
    m = re.search(r"\b(\d{1,2}):(\d{2})\s*([AaPp])?\.?\s*[Mm]?\b", spoken)
    if not m:
        return False
    hour, minute, ampm = int(m.group(1)), int(m.group(2)), m.group(3)
    if ampm:
        if not 1 <= hour <= 12:
            return False
        hours = [(hour % 12) + (12 if ampm.lower() == "p" else 0)]
    else:
        hours = [hour % 24, (hour + 12) % 24]  # 24-hour clock, or 12-hour without AM/PM
    lo = before.replace(second=0, microsecond=0) - datetime.timedelta(minutes=1)
    hi = after.replace(second=0, microsecond=0) + datetime.timedelta(minutes=1)
    span = int((hi - lo).total_seconds() // 60)
    allowed = {((lo.hour * 60 + lo.minute) + i) % 1440 for i in range(span + 1)}
    return any((h * 60 + minute) % 1440 in allowed for h in hours)


def _now_in_zone():
    return datetime.datetime.now(zoneinfo.ZoneInfo(TIME_ZONE))


def _assert_time_answer(result, before, after):
    assert isinstance(result, dict), f"expected a HoundServer dict, got {result!r}"
    assert result.get("Format") == "SoundHoundVoiceSearchResult", result
    assert result.get("Status") == "OK", result
    first = result["AllResults"][0]
    assert first["CommandKind"] == "InformationCommand", first
    spoken = first["SpokenResponseLong"]
    assert _spoken_time_ok(spoken, before, after), (
        f"SpokenResponseLong {spoken!r} does not tell the time in {TIME_ZONE} "
        f"(expected {before:%H:%M}..{after:%H:%M} there)"
    )
    assert isinstance(first.get("ConversationState"), dict), first


def _text_client(server, key=CLIENT_KEY):
    client = houndify.TextHoundClient(
        CLIENT_ID, key, USER_ID, requestInfo={"TimeZone": TIME_ZONE}, endpoint=server.text_endpoint, timeout=20
    )
    client.setLocation(LATITUDE, LONGITUDE)
    return client


def _normalise(s):
    return " ".join(re.sub(r"[^\w\s']", " ", s.lower()).split())


class RecordingListener(houndify.HoundListener):
    def __init__(self):
        self.lock = threading.Lock()
        self.partials = []
        self.finals = []
        self.errors = []

    def onPartialTranscript(self, transcript):
        with self.lock:
            self.partials.append(transcript)

    def onFinalResponse(self, response):
        with self.lock:
            self.finals.append(response)

    def onError(self, err):
        with self.lock:
            self.errors.append(err)

    def snapshot(self):
        with self.lock:
            return list(self.partials)


class ObservedStreamingClient(houndify.StreamingHoundClient):
    """The official client, unchanged, except that its `audioFinished` flag (the one fill()
    returns) also sets an Event, so the test can wait for the VAD stop without sleep-polling."""

    def __init__(self, *args, **kwargs):
        self.audio_finished_event = threading.Event()
        self._audio_finished = False
        super().__init__(*args, **kwargs)

    @property
    def audioFinished(self):
        return self._audio_finished

    @audioFinished.setter
    def audioFinished(self, value):
        self._audio_finished = value
        if value:
            self.audio_finished_event.set()


def _streaming_client(server, use_speex, key=CLIENT_KEY):
    client = ObservedStreamingClient(
        CLIENT_ID,
        key,
        USER_ID,
        requestInfo={"TimeZone": TIME_ZONE},
        endpoint=server.audio_endpoint,
        sampleRate=SAMPLE_RATE,
        enableVAD=True,
        useSpeex=use_speex,
        timeout=STREAM_TIMEOUT_S,
    )
    client.setLocation(LATITUDE, LONGITUDE)
    client.setHoundRequestInfo("LocalServiceTranscript", TRANSCRIPT)
    return client


@contextlib.contextmanager
def _reader_cleanup(client):
    """If a test fails mid-stream, unblock the SDK's (non-daemon) reader thread."""
    try:
        yield
    finally:
        conn = getattr(client, "conn", None)
        if conn is not None and conn.sock is not None:
            client.killCallbackThread = True
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(Exception):
                conn.close()
        tid = getattr(client, "callbackTID", None)
        if tid is not None:
            tid.join(5)


@pytest.fixture(scope="module")
def speech_chunks(tmp_path_factory):
    """"what time is it" by espeak-ng, as 16 kHz mono 16-bit PCM cut into 20 ms chunks."""
    for tool in ("espeak-ng", "sox"):
        assert shutil.which(tool), f"{tool} is needed to make the speech fixture (apt-get install espeak-ng sox)"
    tmp = tmp_path_factory.mktemp("speech")
    raw, wav = str(tmp / "raw.wav"), str(tmp / "speech16k.wav")
    subprocess.run(["espeak-ng", "-w", raw, TRANSCRIPT], check=True, timeout=30)
    subprocess.run(["sox", raw, "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", "-e", "signed-integer", wav],
                   check=True, timeout=30)
    with wave.open(wav, "rb") as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (SAMPLE_RATE, 1, 2)
        pcm = w.readframes(w.getnframes())
    pcm += b"\x00" * (-len(pcm) % CHUNK_BYTES)
    chunks = [pcm[i:i + CHUNK_BYTES] for i in range(0, len(pcm), CHUNK_BYTES)]
    assert 0.5 <= len(chunks) * 0.02 <= 3.0, f"unexpected espeak-ng duration: {len(chunks) * 0.02:.2f} s"
    return chunks


def _run_voice_query(server, speech_chunks, use_speex):
    silence = [b"\x00" * CHUNK_BYTES] * int(SILENCE_S * 1000 / 20)
    wait_at = int(SILENCE_BEFORE_WAIT_S * 1000 / 20)
    listener = RecordingListener()
    client = _streaming_client(server, use_speex)

    before = _now_in_zone()
    with _reader_cleanup(client):
        client.start(listener)

        for i, chunk in enumerate(speech_chunks):
            stopped = client.fill(chunk)
            assert not stopped, (
                f"fill() returned True during the speech itself (chunk {i} of {len(speech_chunks)}); "
                f"reader error: {client.lastException!r}, final: {client.lastResult!r}"
            )

        stopped_at = None
        partials_at_stop = None
        for j, chunk in enumerate(silence):
            if j == wait_at and not client.audio_finished_event.is_set():
                assert client.audio_finished_event.wait(SAFE_TO_STOP_DEADLINE_S), (
                    f"no SafeToStopAudio within {SAFE_TO_STOP_DEADLINE_S:.0f} s after "
                    f"{SILENCE_BEFORE_WAIT_S} s of trailing silence; partials so far: {listener.snapshot()!r}"
                )
            if client.fill(chunk):
                stopped_at = j
                partials_at_stop = listener.snapshot()
                # The stop must come from a SafeToStopAudio partial, not from the response ending.
                assert client.lastException is None, f"reader thread failed: {client.lastException!r}"
                assert client.lastResult is None, "final result arrived before the request body ended"
                assert client.callbackTID.is_alive(), "the response ended before the request body did"
                break

        assert stopped_at is not None, "fill() never returned True although 3 s of silence followed the speech"
        assert stopped_at < len(silence) - 1, "fill() returned True only when all the silence had been fed"

        result = client.finish()
    after = _now_in_zone()

    # Partial transcripts: seen before fill() returned True, growing word by word.
    assert partials_at_stop, "onPartialTranscript was not called before fill() returned True"
    distinct = []
    for p in partials_at_stop:
        if p and (not distinct or distinct[-1] != p):
            distinct.append(p)
    assert len(distinct) >= 2, f"expected the transcript to grow over several partials, got {partials_at_stop!r}"
    for a, b in zip(partials_at_stop, partials_at_stop[1:]):
        assert _normalise(b).startswith(_normalise(a)), f"partial transcripts must grow: {a!r} then {b!r}"
    assert _normalise(partials_at_stop[-1]) == TRANSCRIPT, partials_at_stop

    # Final result: what finish() returns and what the listener got.
    assert listener.errors == [], listener.errors
    assert len(listener.finals) == 1 and listener.finals[0] is result
    _assert_time_answer(result, before, after)
    choice = result["Disambiguation"]["ChoiceData"][0]
    assert _normalise(choice["Transcription"]) == TRANSCRIPT, choice
    return result


def _raw_headers(key, request_info):
    """Houndify auth headers as every SDK builds them (docs/houndify-protocol.md, "Signing a request")."""
    request_id, ts = str(uuid.uuid4()), str(int(time.time()))
    auth = f"{USER_ID};{request_id}"
    mac = hmac.new(base64.urlsafe_b64decode(key), (auth + ts).encode(), hashlib.sha256).digest()
    return {
        "Hound-Request-Authentication": auth,
        "Hound-Client-Authentication": f"{CLIENT_ID};{ts};{base64.urlsafe_b64encode(mac).decode()}",
        "Hound-Request-Info-Length": str(len(request_info)),
        "Hound-Response-Accept-Encoding": "gzip",
    }


def _assert_not_json(body):
    text = body.decode("utf-8", "replace").strip()
    assert text, "the 403 body is empty"
    with pytest.raises(ValueError):
        json.loads(text)
    return text


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------


def test_text_time_query(server):
    client = _text_client(server)
    assert client.HoundRequestInfo["Latitude"] == LATITUDE
    before = _now_in_zone()
    result = client.query("what time is it")
    after = _now_in_zone()
    _assert_time_answer(result, before, after)


def test_text_other_domains(server):
    client = _text_client(server)
    weather = client.query("what is the weather like")
    assert weather["Status"] == "OK", weather
    assert weather["AllResults"][0]["CommandKind"] in ("WeatherCommand", "InformationCommand"), weather
    assert weather["AllResults"][0]["SpokenResponseLong"], weather

    nothing = client.query("sing me a song about otters")
    assert nothing["Status"] == "OK", nothing
    assert nothing["AllResults"][0]["CommandKind"] == "NoResultCommand", nothing


def test_text_conversation_state_round_trip(server):
    client = _text_client(server)
    first = client.query("what time is it")
    assert first["Status"] == "OK", first
    state = first["AllResults"][0]["ConversationState"]
    assert isinstance(state, dict) and state, f"result 0 has no ConversationState object: {state!r}"

    client.setConversationState(state)
    assert client.HoundRequestInfo["ConversationState"] == state
    if "ConversationStateTime" in state:
        assert client.HoundRequestInfo["ConversationStateTime"] == state["ConversationStateTime"]

    before = _now_in_zone()
    second = client.query("what time is it now")
    after = _now_in_zone()
    _assert_time_answer(second, before, after)


def test_voice_query_pcm(server, speech_chunks):
    _run_voice_query(server, speech_chunks, use_speex=False)


def test_voice_query_speex(server, speech_chunks):
    # pySHSpeex is the C extension compiled from the houndify sdist (SoundHound's Speex 1.2beta3,
    # fixed point, wideband, quality 10). setup-venv.sh checks that it imports, so a failure here
    # is a broken install, not a reason to skip.
    import pySHSpeex  # noqa: F401

    _run_voice_query(server, speech_chunks, use_speex=True)


def test_wrong_key_text_sdk_raises(server):
    client = _text_client(server, key=WRONG_KEY)
    with pytest.raises(houndify.HoundifySDKError) as info:
        client.query("what time is it")
    # 2.1.4 does not look at the status: any body that is not JSON becomes this exact error.
    assert type(info.value) is houndify.HoundifySDKError
    assert str(info.value) == "Invalid ID or Key"


def test_wrong_key_streaming_sdk_raises(server, speech_chunks):
    listener = RecordingListener()
    client = _streaming_client(server, use_speex=False, key=WRONG_KEY)
    with _reader_cleanup(client):
        try:
            client.start(listener)
            for chunk in speech_chunks:
                if client.fill(chunk):  # True once the reader thread has given up on the 403
                    break
        except (OSError, houndify.HoundifySDKError) as e:
            # fill() does not wrap socket errors: a server that closes the connection while the
            # client is still uploading makes the SDK raise a raw BrokenPipe/ConnectionResetError.
            pytest.fail(
                f"the SDK failed while uploading ({e!r}): after refusing a request the server must "
                "keep reading the request body (to its terminating chunk) before closing"
            )
        with pytest.raises(houndify.HoundifySDKError) as info:
            client.finish()
    # The reader thread raised Exception(<body>) on the non-JSON body; finish() re-raises it as a
    # bare HoundifySDKError (not HoundifyTimeoutError) chained to it. No listener callback fires.
    assert type(info.value) is houndify.HoundifySDKError, repr(info.value)
    cause = info.value.__cause__
    assert type(cause) is Exception, f"expected the SDK's Exception(<body>), got {cause!r}"
    _assert_not_json(str(cause).encode())
    assert listener.errors == [] and listener.finals == [] and listener.partials == []


def test_wrong_key_http_status(server):
    """Below the SDK (which ignores the status): both endpoints answer 403 with a plain-text body."""
    info = json.dumps({"ClientID": CLIENT_ID, "UserID": USER_ID, "SDK": "python3", "SDKVersion": "2.1.4"})

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request("POST", "/v1/text?query=what%20time%20is%20it", body=info,
                     headers=_raw_headers(WRONG_KEY, info))
        resp = conn.getresponse()
        body = resp.read()
        assert resp.status == 403, (resp.status, body)
        _assert_not_json(body)
    finally:
        conn.close()

    # /v1/audio, with a raw socket: the whole chunked body, then read the reply to EOF. The server
    # must close the connection after the refusal: the SDK reads a Content-Length body until
    # Content-Length + 2 bytes or EOF, so a connection kept open stalls it for its socket timeout.
    wav_header = houndify.StreamingHoundClient._wavHeader(None, SAMPLE_RATE)
    head = "POST /v1/audio HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % server.port
    for k, v in {**_raw_headers(WRONG_KEY, info), "Transfer-Encoding": "chunked"}.items():
        head += f"{k}: {v}\r\n"
    request = (head + "\r\n").encode()
    for part in (info.encode(), wav_header, b"\x00" * CHUNK_BYTES, b""):
        request += b"%x\r\n" % len(part) + part + b"\r\n"
    reply = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(request)
        try:
            for data in iter(lambda: sock.recv(65536), b""):
                reply += data
        except socket.timeout:
            pytest.fail(f"the server kept /v1/audio open for 20 s after answering {reply[:200]!r}")
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0]
    assert status_line.split(b" ")[1:2] == [b"403"], reply[:500]
    if b"transfer-encoding: chunked" in head.lower():
        decoded = b""
        while body:
            size_line, _, rest = body.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            decoded, body = decoded + rest[:size], rest[size + 2:]
            if size == 0:
                break
        body = decoded
    _assert_not_json(body)
