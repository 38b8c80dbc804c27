"""Writes seeds/FuzzTimerCommands: the local Houndify-compatible service's answers (`hound-speaker serve`,
Sources/LocalHoundify/ClientCommandAnswers.swift, the shapes docs/houndify-protocol.md describes) to timer and alarm
requests, as the official SDK receives them. Run with the SDK's venv (Tests/sdk/setup-venv.sh):

    HOUND_SPEAKER_BIN=.build/debug/hound-speaker .venv-sdk/bin/python Tests/fuzz/seeds/make-timer-command-seeds.py
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import houndify

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "FuzzTimerCommands")
CLIENT_ID = "AAECAwQFBgcICQoLDA0ODw=="
CLIENT_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="
QUERIES = ["set a pasta timer for 10 minutes", "set a timer for 1 hour 30 minutes", "cancel the pasta timer",
           "cancel the 10 minute timer", "cancel all timers", "how much time is left on the pasta timer",
           "add 5 minutes to the pasta timer", "add 9999999999999999 seconds to the pasta timer", "pause the timer",
           "resume the timer", "reset the pasta timer", "set an alarm for 7:30 am",
           "set an alarm for 6 pm on mondays and fridays", "set an alarm for 7 am on weekdays", "cancel the 7 am alarm",
           "cancel all alarms", "what alarms do I have"]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "service.toml")
        with open(os.open(config, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
            out.write(f'[houndify]\nclient_id = "{CLIENT_ID}"\nclient_key = "{CLIENT_KEY}"\n')
        service = subprocess.Popen([os.environ["HOUND_SPEAKER_BIN"], "serve", "--port", "0", "--config", config],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = re.match(r"listening on http://127\.0\.0\.1:(\d+)", service.stdout.readline()).group(1)
            client = houndify.TextHoundClient(CLIENT_ID, CLIENT_KEY, "fuzz-seeds", requestInfo={"TimeZone": "UTC"},
                                              endpoint=f"http://127.0.0.1:{port}/v1/text")
            os.makedirs(OUT, exist_ok=True)
            for query in QUERIES:
                answer = client.query(query)
                kind = answer["AllResults"][0].get("CommandKind")
                assert kind in ("TimerCommand", "AlarmCommand"), f"{query}: {kind}"
                with open(os.path.join(OUT, re.sub(r"[^a-z0-9]+", "-", query.lower()).strip("-") + ".json"), "w") as out:
                    json.dump(answer, out, sort_keys=True)
                    out.write("\n")
        finally:
            service.terminate()
            service.wait()


if __name__ == "__main__":
    sys.exit(main())
