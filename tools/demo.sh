#!/usr/bin/env bash
# The main job: `hound-speaker demo`, one whole interaction with no hardware and no Houndify account (the
# microphone played from "OK Hound ... what time is it" in real time through ALSA, the hot-phrase detector
# waking the speaker, the local Houndify service,
# the answer spoken by espeak-ng into hound-speaker-demo.wav or DEMO_OUTPUT), then typed questions to the same
# speaker (a timer set in two turns, asked about and cancelled, as `ctl text` does with `run`); then the Houndify
# client alone (`hound-speaker text`), which prints answers and leaves timers to the speaker.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

bash tools/install-deps.sh
echo "== build"
swift build -c release 2>&1 | grep -E "error|warning:|Compiling|Build complete" | tail -3
bin="$(swift build -c release --show-bin-path)/hound-speaker"

echo "== hound-speaker demo: one whole interaction, then typed questions to the same speaker"
"$bin" demo --output "${DEMO_OUTPUT:-hound-speaker-demo.wav}"

# Then the Houndify client alone against the local service: text queries and a conversation kept between them.
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
echo "== hound-speaker text: the Houndify client alone, against the local service at $url"
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
# The second turn is understood from the first (the conversation state in the file above): a timer of ten minutes.
# Only the speaker sets timers (the demo above did); `text` says so and exits 1, rather than print Houndify's
# fallback for clients without timers as if it were the answer.
echo "you:     ten minutes"
if "$bin" text "ten minutes" --config "$work/speaker.toml" 2> "$work/text.err"; then
    echo "demo: \`text\` printed an answer to a timer command" >&2
    exit 1
fi
echo "text:    $(sed 's/^hound-speaker: error: //' "$work/text.err")"
