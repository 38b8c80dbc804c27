#!/usr/bin/env python3
"""A stand-in for Home Assistant's conversation API (POST /api/conversation/process), for the speaker's tests.

Listens on 127.0.0.1 on a port the kernel picks and prints it on the first line of stdout. Answers as Home
Assistant's REST API does (developers.home-assistant.io, "REST API" and "Conversation API"): a request without
`Authorization: Bearer TOKEN` gets 401 with aiohttp's plain-text body, any other path 404, and the conversation
endpoint a documented reply:

    "turn off the kitchen light"   action_done, "Turned off the light"
    "what is the temperature"      query_answer, "It is 21 degrees"
    "turn on the garage"           error no_valid_targets, "Sorry, I am not aware of any device called garage"
    "break it"                     error failed_to_handle, with no speech (the speaker's own sentence then)
    anything else                  error no_intent_match, "Sorry, I couldn't understand that"

A conversation_id sent is kept; without one a new one is made. Every request (path, Authorization header and
body) is appended as one JSON line to --record, for the test to read back.

    python3 ha_standin.py --token T --record FILE [--status N | --not-json | --sleep SECONDS]
"""
import argparse
import json
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWERS = {
    "turn off the kitchen light": ("action_done", "Turned off the light", None),
    "what is the temperature": ("query_answer", "It is 21 degrees", None),
    "turn on the garage": ("error", "Sorry, I am not aware of any device called garage", "no_valid_targets"),
    "break it": ("error", "", "failed_to_handle"),
}


def conversation_reply(text, conversation_id):
    kind, speech, code = ANSWERS.get(text.strip().lower(),
                                     ("error", "Sorry, I couldn't understand that", "no_intent_match"))
    if kind == "error":
        data = {"code": code}
    else:
        data = {"targets": [], "success": [{"type": "entity", "name": "Kitchen light", "id": "light.kitchen"}],
                "failed": []}
    return {
        "response": {
            "response_type": kind,
            "language": "en",
            "data": data,
            "speech": {"plain": {"speech": speech, "extra_data": None}},
            "card": {},
        },
        "conversation_id": conversation_id or uuid.uuid4().hex.upper()[:26],
        "continue_conversation": False,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--token", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--status", type=int, help="answer the conversation endpoint with this status instead")
    parser.add_argument("--not-json", action="store_true", help="answer 200 with an HTML page")
    parser.add_argument("--sleep", type=float, default=0, help="wait this long before answering")
    args = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def send(self, status, body, content_type="application/json"):
            payload = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            with open(args.record, "a", encoding="utf-8") as f:
                f.write(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"),
                                    "content_type": self.headers.get("Content-Type"),
                                    "body": raw.decode("utf-8", "replace")}) + "\n")
            if args.sleep:
                time.sleep(args.sleep)
            # Home Assistant's auth middleware comes first: aiohttp's HTTPUnauthorized, in plain text.
            if self.headers.get("Authorization") != f"Bearer {args.token}":
                return self.send(401, "401: Unauthorized", "text/plain; charset=utf-8")
            if self.path != "/api/conversation/process":
                return self.send(404, "404: Not Found", "text/plain; charset=utf-8")
            if args.status:
                return self.send(args.status, "500 Internal Server Error\n\nServer got itself in trouble",
                                 "text/plain; charset=utf-8")
            if args.not_json:
                return self.send(200, "<html><body>Welcome to the captive portal</body></html>", "text/html")
            try:
                request = json.loads(raw)
                text = request["text"]
            except (ValueError, KeyError, TypeError):
                return self.send(400, json.dumps({"message": "Message format incorrect"}))
            self.send(200, json.dumps(conversation_reply(text, request.get("conversation_id"))))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
