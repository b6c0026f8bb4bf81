#!/usr/bin/env bash
# Every published figure the project uses is cited from docs/sources.md, which ships with the
# sources. No file may point instead at the notes file the figures were first gathered in: it
# lives outside the repository, so users do not have it. Greps the source folders (not build
# output, not .git), so it also runs in a fresh tarball. Prints every hit as file:line: error:
# and exits 1 if there is any.
set -u
cd "$(dirname "$0")/.."
pat='FACTS[.]md' # written so that this file does not match itself
dirs=""
for d in Makefile README.md base bench cli docs fabric host hw isa machines plots tests workloads; do
  [ -e "$d" ] && dirs="$dirs $d"
done
# shellcheck disable=SC2086
hits=$(grep -rnI -e "$pat" $dirs 2>/dev/null)
if [ -n "$hits" ]; then
  echo "$hits" | sed 's/^\([^:]*:[0-9]*\):.*/\1: error: cites a file users do not have; cite docs\/sources.md (its section) instead/'
  exit 1
fi
echo "check-sources: every figure is cited from docs/sources.md"
