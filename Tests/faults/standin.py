"""A misbehaving stand-in for Houndify on 127.0.0.1, for the fault-injection suite (test_faults.py).

Each request takes the next fault from `plan` (cycling; a HEAD request, the speaker's check while offline, takes
none and is answered 200), so a test can say "this request fails this way, the next one is answered". It speaks just
enough HTTP/1.1 to be a real peer for libcurl: it reads the request head and the body (fixed-length for text,
chunked for voice) unless the fault is to stop reading, and every fault is something a real server or a broken
network does: refuse, stall, trickle, close mid-stream, send an error status with or without a body, send JSON that
is malformed, truncated, huge, deeply nested or of the wrong shape.
"""

import json
import socket
import socketserver
import threading
import time

TRANSCRIPT = "what time is it"
ANSWER = "It is noon."

# How long the stalling faults hold a connection at most (the client gives up well before).
HOLD_SECONDS = 60.0


def result(all_results=None, **extra):
    body = {
        "Format": "SoundHoundVoiceSearchResult",
        "FormatVersion": "1.0",
        "Status": "OK",
        "NumToReturn": 1,
        "AllResults": all_results if all_results is not None else [{
            "CommandKind": "InformationCommand",
            "SpokenResponse": ANSWER,
            "SpokenResponseLong": ANSWER,
            "WrittenResponse": ANSWER,
            "WrittenResponseLong": ANSWER,
            "AutoListen": False,
        }],
        "Disambiguation": {"NumToShow": 1, "ChoiceData": [{"Transcription": TRANSCRIPT, "ConfidenceScore": 0.9}]},
        "ResultsAreFinal": [True],
    }
    body.update(extra)
    return json.dumps(body).encode()


def partial(text):
    return json.dumps({"Format": "SoundHoundVoiceSearchParialTranscript", "FormatVersion": "1.0",
                       "PartialTranscript": text, "DurationMS": 500, "Done": False}).encode()


GOOD = "good"

# fault name -> (what the client must report: "ok" or an error word the CLI's message contains)
FAULTS = {
    GOOD: "ok",
    "close-before-answer": "NoResponseReceived",
    "stall-before-headers": "ConnectionTimeout",
    "stall-after-headers": "ConnectionTimeout",
    "trickle": "ConnectionTimeout",
    "partials-forever": "ConnectionTimeout",
    "close-mid-stream": "NoResponseReceived",
    "status-401-empty": "AuthenticationFailed",
    "status-403-empty": "AuthenticationFailed",
    "status-403-body": "AuthenticationFailed",
    "status-500-empty": "HTTP 500",
    "status-500-body": "HTTP 500",
    "status-503-empty": "HTTP 503",
    "status-302-empty": "HTTP 302",
    "status-200-empty": "NoResponseReceived",
    "error-status-json": "ServerStatusError",
    "malformed-json": "ParseFailed",
    "truncated-json": "NoResponseReceived",
    "huge-json": "InvalidResponse",
    "deeply-nested-json": "ParseFailed",
    "no-format": "InvalidResponse",
    "all-results-empty": "nothing to say",
    "all-results-not-a-list": "nothing to say",
    "responses-not-strings": "nothing to say",
    "result-not-an-object": "InvalidResponse",
    "stop-reading-upload": "ConnectionTimeout",
}


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        server = self.server
        sock = self.request
        sock.settimeout(HOLD_SECONDS)
        try:
            head, rest = self.read_head(sock)
            if head is None:
                return
            if head.startswith("head "):
                # The speaker's light check while it is offline (SpeakerLoop.watchNetwork): answered, and no fault
                # of the plan taken, so the plan stays in step with the questions.
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            fault = server.next_fault()
            if fault == "stop-reading-upload":
                # Take nothing more: the client's socket buffer fills and its upload stalls.
                self.hold(sock, read=False)
                return
            body_done = self.read_body(sock, head, rest, fault)
            self.respond(sock, fault, body_done)
            if not fault.startswith("close") and (not body_done or "content-length:" not in head):
                self.drain(sock)
        except (OSError, socket.timeout):
            pass

    def drain(self, sock):
        """Reads what is left of an upload until the client closes: closing with unread data would reset the
        connection and lose the answer just sent (a real server drains too)."""
        sock.settimeout(5.0)
        while sock.recv(65536):
            pass

    def read_head(self, sock):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None, b""
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        return head.decode("latin-1").lower(), rest

    def read_body(self, sock, head, rest, fault):
        """Reads the request body; a voice query is answered once some audio is in (as Houndify answers while the
        person speaks), so returns early for the faults that answer mid-upload."""
        if "content-length:" in head:
            length = int(head.split("content-length:")[1].split("\r\n")[0])
            while len(rest) < length:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
            return True
        # Chunked voice upload: answer after about half a second of 16 kHz audio, or at its end.
        got = len(rest)
        while b"\r\n0\r\n\r\n" not in rest[-64:] and got < 16000:
            chunk = sock.recv(65536)
            if not chunk:
                return False
            rest = rest[-64:] + chunk
            got += len(chunk)
        return True

    def hold(self, sock, read=True):
        end = time.monotonic() + HOLD_SECONDS
        while time.monotonic() < end and not self.server.stopping:
            if read:
                sock.settimeout(0.5)
                try:
                    if sock.recv(65536) == b"":
                        return
                except socket.timeout:
                    continue
            else:
                time.sleep(0.2)
                # A closed client shows as a readable socket with no data, but reading would drain the upload.
                try:
                    if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                        return
                except BlockingIOError:
                    pass

    def send_chunk(self, sock, payload):
        sock.sendall(b"%x\r\n%s\r\n" % (len(payload), payload))

    def start_200(self, sock):
        # One request per connection (the handler ends with it): say so, or libcurl would send the next query on
        # a connection nobody reads any more.
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")

    def respond(self, sock, fault, body_done):
        if fault == GOOD:
            self.start_200(sock)
            self.send_chunk(sock, partial("what time") + b"\r\n")
            self.send_chunk(sock, result() + b"\r\n")
            sock.sendall(b"0\r\n\r\n")
            return
        if fault == "close-before-answer":
            return
        if fault == "stall-before-headers":
            self.hold(sock)
            return
        if fault == "stall-after-headers":
            self.start_200(sock)
            self.hold(sock)
            return
        if fault == "trickle":
            self.start_200(sock)
            end = time.monotonic() + HOLD_SECONDS
            while time.monotonic() < end and not self.server.stopping:
                self.send_chunk(sock, b" ")
                time.sleep(0.5)
            return
        if fault == "partials-forever":
            self.start_200(sock)
            end = time.monotonic() + HOLD_SECONDS
            while time.monotonic() < end and not self.server.stopping:
                self.send_chunk(sock, partial("what") + b"\r\n")
                time.sleep(0.5)
            return
        if fault == "close-mid-stream":
            self.start_200(sock)
            whole = result()
            self.send_chunk(sock, whole[: len(whole) // 2])
            return
        if fault.startswith("status-"):
            _, code, kind = fault.split("-")
            reason = {"401": "Unauthorized", "403": "Forbidden", "500": "Internal Server Error",
                      "503": "Service Unavailable", "302": "Found", "200": "OK"}[code]
            body = b"" if kind == "empty" else b'{"Status":"Error","ErrorMessage":"stand-in says no"}'
            extra = b"Location: http://127.0.0.1:1/elsewhere\r\n" if code == "302" else b""
            sock.sendall(b"HTTP/1.1 %s %s\r\nContent-Length: %d\r\nConnection: close\r\n%s\r\n%s" % (code.encode(), reason.encode(), len(body), extra, body))
            return
        payload = {
            "error-status-json": json.dumps({"Format": "SoundHoundVoiceSearchResult", "Status": "Error",
                                             "ErrorMessage": "stand-in error"}).encode(),
            "malformed-json": b'{"Format": "SoundHoundVoiceSearchResult", "Status": OK!!}',
            "truncated-json": result()[:40],
            "huge-json": result(WrittenResponseLong="x" * (12 << 20)),
            "deeply-nested-json": b'{"Format":"SoundHoundVoiceSearchResult","Status":"OK","X":' + b"[" * 100000 + b"]" * 100000 + b"}",
            "no-format": json.dumps({"Status": "OK", "AllResults": []}).encode(),
            "all-results-empty": result(all_results=[]),
            "all-results-not-a-list": result(all_results=5),
            "responses-not-strings": result(all_results=[{"CommandKind": "InformationCommand", "SpokenResponse": 5,
                                                          "SpokenResponseLong": ["a"], "WrittenResponse": None}]),
            "result-not-an-object": result(all_results=[5]),
        }[fault]
        self.start_200(sock)
        for i in range(0, len(payload), 1 << 16):
            self.send_chunk(sock, payload[i:i + (1 << 16)])
        if fault != "truncated-json":
            self.send_chunk(sock, b"\r\n")
        sock.sendall(b"0\r\n\r\n")


class StandIn(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.plan = [GOOD]
        self.index = 0
        self.lock = threading.Lock()
        self.stopping = False
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self):
        return self.server_address[1]

    def set_plan(self, plan):
        with self.lock:
            self.plan = list(plan)
            self.index = 0

    def next_fault(self):
        with self.lock:
            fault = self.plan[self.index % len(self.plan)]
            self.index += 1
            return fault

    def stop(self):
        self.stopping = True
        self.shutdown()
        self.server_close()
