#!/usr/bin/env bash
# The main job: `hound-speaker demo`, one whole interaction with no hardware and no Houndify account (the
# microphone played from "OK Hound ... what time is it" in real time through ALSA, the hot-phrase detector
# waking the speaker, the local Houndify service,
# the answer spoken by espeak-ng into hound-speaker-demo.wav or DEMO_OUTPUT); then a few text queries by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

bash tools/install-deps.sh
echo "== build"
swift build -c release 2>&1 | grep -E "error|warning:|Compiling|Build complete" | tail -3
bin="$(swift build -c release --show-bin-path)/hound-speaker"

echo "== hound-speaker demo: one whole interaction"
"$bin" demo --output "${DEMO_OUTPUT:-hound-speaker-demo.wav}"

# Then the same client by hand against the local service: text queries and a two-turn conversation.
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
# Dummy credentials (those of the first signing test vector: docs/houndify-protocol.md, "Test vectors"): the local
# service checks signatures made with them.
export HOUNDIFY_CLIENT_ID="AAECAwQFBgcICQoLDA0ODw=="
export HOUNDIFY_CLIENT_KEY="AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="
"$bin" serve --port 0 --config config/speaker.toml > "$work/serve.out" 2> "$work/serve.log" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
url="$(sed -n 's/^listening on //p' "$work/serve.out")"
[ -n "$url" ] || { cat "$work/serve.log"; echo "demo: the local service did not start" >&2; exit 1; }
echo "== text queries to the local Houndify service at $url"
cat > "$work/speaker.toml" <<TOML
[houndify]
endpoint = "$url"
# Each command is its own process: the conversation lives in this file between them.
conversation_state_file = "$work/conversation.json"
[location]
latitude = 37.3875
longitude = -122.0575
timezone = "America/Los_Angeles"
TOML
ask() { echo "you:     $1"; printf 'speaker: '; "$bin" text "$1" --config "$work/speaker.toml"; }
ask "what is the weather like"
ask "set a timer"
ask "ten minutes"
