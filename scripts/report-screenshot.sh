#!/usr/bin/env bash
# A screenshot of a study's HTML report, as its reader sees it on a laptop: writes the report
# with `slurmsweep report --html` (or a comparison with `slurmsweep compare --html`), then renders
# it with headless Chromium, networking off, and fails if the page logged any console message.
# Default: the quickstart study (run scripts/quickstart.sh first) -> build/quickstart-report.png.
#   scripts/report-screenshot.sh [STUDY.toml [OUT.png]]              HEIGHT=4000 sets the page height in px
#   scripts/report-screenshot.sh --compare A.toml B.toml [...] OUT.png
set -euo pipefail
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "report-screenshot: chromium not found (scripts/setup.sh installs it)" >&2; exit 1; }

if [[ ${1:-} == --compare ]]; then
  shift
  (($# >= 3)) || { echo "usage: $0 --compare A.toml B.toml [...] OUT.png" >&2; exit 2; }
  png=${*: -1}
  html=${png%.png}.html
  build/bin/slurmsweep compare "${@:1:$#-1}" --html "$html"
else
  study=${1:-examples/quickstart.toml}
  png=${2:-build/quickstart-report.png}
  html=${png%.png}.html
  build/bin/slurmsweep report "$study" --html "$html"
fi
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --screenshot captures the window, so the window is as tall as the page is expected to be.
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --host-resolver-rules='MAP * ~NOTFOUND' --user-data-dir="$profile" \
  --enable-logging=stderr --v=0 --hide-scrollbars --window-size="1280,${HEIGHT:-4000}" --screenshot="$png" \
  "file://$(realpath "$html")" >/dev/null 2>"$profile/chromium.log" || { cat "$profile/chromium.log" >&2; exit 1; }
# The page has no script: any console line is an error or a blocked request.
if grep -E ':CONSOLE|Refused to|Uncaught' "$profile/chromium.log" >&2; then
  echo "report-screenshot: $html logged the console messages above" >&2
  exit 1
fi
echo "report-screenshot: $png (report: $html), no console message"
