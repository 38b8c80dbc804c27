#!/usr/bin/env bash
# The main job until `hound-speaker demo` exists (issue #6): with no hardware and no Houndify account, start the
# local Houndify-compatible service, then ask it things through the real client (libcurl): text queries, a
# two-turn conversation, and a spoken query streamed in real time from a recording made with espeak-ng.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && export PATH="/opt/swift/usr/bin:$PATH"

bash tools/install-deps.sh
echo "== build"
swift build -c release 2>&1 | grep -E "error|warning:|Compiling|Build complete" | tail -3
bin="$(swift build -c release --show-bin-path)/hound-speaker"

work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
# Dummy credentials (the test vector of protocol.md §2.2): the local service checks signatures made with them.
export HOUNDIFY_CLIENT_ID="AAECAwQFBgcICQoLDA0ODw=="
export HOUNDIFY_CLIENT_KEY="AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="

"$bin" serve --port 0 --config config/speaker.toml > "$work/serve.out" 2> "$work/serve.log" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
url="$(sed -n 's/^listening on //p' "$work/serve.out")"
[ -n "$url" ] || { cat "$work/serve.log"; echo "demo: the local service did not start" >&2; exit 1; }
echo "== local Houndify service at $url"

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
ask "what time is it"
ask "what is the weather like"
ask "set a timer"
ask "ten minutes"

echo "== a spoken query, streamed in real time"
espeak-ng -w "$work/query.wav" "what time is it"
sox "$work/query.wav" "$work/padded.wav" pad 0.3 2.0
echo "you (recording): what time is it"
"$bin" voice "$work/padded.wav" --config "$work/speaker.toml"
