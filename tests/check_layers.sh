#!/usr/bin/env bash
# The layering rule (docs/architecture.md): includes point downwards only,
#   cli -> bench -> workloads -> host -> fabric -> hw -> isa -> base
# and a workload's folder includes no other workload's folder (shared workload modules sit
# directly in workloads/, in workloads/graph/ or in workloads/ops/). tests/ and the bench programs may include
# anything. Prints every violation as file:line: error: ... and exits 1 if there is any.
set -u
cd "$(dirname "$0")/.."
rank() {
  case "$1" in
    base) echo 0 ;; isa) echo 1 ;; hw) echo 2 ;; fabric) echo 3 ;; host) echo 4 ;;
    workloads) echo 5 ;; bench) echo 6 ;; cli) echo 7 ;; *) echo -1 ;;
  esac
}
bad=0
files=$(git ls-files -co --exclude-standard -- 'base/*.[ch]' 'isa/*.[ch]' 'isa/*.inc' 'isa/*.def' \
          'hw/*.[ch]' 'fabric/*.[ch]' 'host/*.[ch]' 'workloads/*.[ch]' 'workloads/*/*.[ch]' \
          'bench/*/*.[ch]' 'cli/*.[ch]' | sort -u)
for f in $files; do
  [ -f "$f" ] || continue
  from=${f%%/*}
  rf=$(rank "$from")
  wl=""
  case "$f" in workloads/*/*) wl=$(echo "$f" | cut -d/ -f2) ;; esac
  while IFS=: read -r line inc; do
    to=${inc%%/*}
    rt=$(rank "$to")
    if [ "$rt" -lt 0 ]; then
      echo "$f:$line: error: includes \"$inc\", outside the layers"; bad=1; continue
    fi
    if [ "$rt" -gt "$rf" ]; then
      echo "$f:$line: error: $from/ includes \"$inc\": $to/ is above $from/ (cli -> bench -> workloads -> host -> fabric -> hw -> isa -> base)"
      bad=1; continue
    fi
    if [ "$to" = workloads ]; then
      case "$inc" in
        workloads/*/*)
          other=$(echo "$inc" | cut -d/ -f2)
          if [ -n "$wl" ] && [ "$other" != "$wl" ] && [ "$other" != graph ] && [ "$other" != ops ]; then
            echo "$f:$line: error: workload $wl includes \"$inc\" of workload $other (across the layer)"; bad=1
          fi ;;
      esac
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | sed 's/^\([0-9]*\):.*"\([^"]*\)".*/\1:\2/')
done
if [ $bad = 0 ]; then echo "check-layers: every include points down"; fi
exit $bad
