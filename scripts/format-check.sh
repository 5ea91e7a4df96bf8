#!/usr/bin/env bash
# Fails when a tracked .cc/.h file differs from what clang-format (the tree's .clang-format) makes of it,
# and names the files; `git clang-format` (or clang-format -i FILE) fixes them. scripts/test.sh runs it first.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h')
if ! out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  echo "format-check: these files are not formatted as .clang-format says (run clang-format -i on them):" >&2
  grep -o '^[^:]*\.\(cc\|h\):' <<<"$out" | sort -u | sed 's/:$//; s/^/  /' >&2
  exit 1
fi
echo "format-check: ${#files[@]} files formatted as .clang-format says"
