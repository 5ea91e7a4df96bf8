#!/usr/bin/env bash
# A screenshot of a study's HTML report, as its reader sees it on a laptop: writes the report
# with `slurmsweep report --html`, then renders it with headless Chromium, networking off.
# Default: the quickstart study (run scripts/quickstart.sh first) -> build/quickstart-report.png.
#   scripts/report-screenshot.sh [STUDY.toml [OUT.png]]     HEIGHT=4000 sets the page height in px
set -euo pipefail
cd "$(dirname "$0")/.."
study=${1:-examples/quickstart.toml}
png=${2:-build/quickstart-report.png}
html=${png%.png}.html
command -v chromium >/dev/null || { echo "report-screenshot: chromium not found (scripts/setup.sh installs it)" >&2; exit 1; }

build/bin/slurmsweep report "$study" --html "$html"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --screenshot captures the window, so the window is as tall as the page is expected to be.
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --host-resolver-rules='MAP * ~NOTFOUND' --user-data-dir="$profile" \
  --hide-scrollbars --window-size="1280,${HEIGHT:-4000}" --screenshot="$png" "file://$(realpath "$html")" \
  >/dev/null 2>"$profile/chromium.log" || { cat "$profile/chromium.log" >&2; exit 1; }
echo "report-screenshot: $png (report: $html)"
