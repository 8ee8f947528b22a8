#!/usr/bin/env bash
# The HTML report in a real browser: headless Chromium loads it, the page logs no console
# error, and the key numbers (total time, top stage and its share) are in the DOM. The layout
# holds for a recorded op-heavy profile cut to 5 ops and padded to 70 (browser/layout_check.js:
# nothing wider than the window, no chart label cut, legends and charts phases only, ops folded
# and opening to at most N + 1 rows, the icicle inside its box and zooming on click); a
# screenshot of each is left in the test's directory.
# Skips (exit 77) when Debian's chromium is not installed.  usage: html_browser_test.sh CLI DEMO_LOOP
set -u
cli=$1 demo=$2
chromium=$(command -v chromium || true)
if [ -z "$chromium" ]; then echo "SKIP: chromium not installed (apt-get install chromium)"; exit 77; fi
. "$(dirname "$0")/lib.sh"
browse() {  # page -> DOM on stdout, browser log in $tmp/console
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
    --dump-dom "file://$1" 2>"$tmp/console"
}
console_errors() { grep -E "CONSOLE\(|Uncaught" "$tmp/console" | grep -v "dbus" ; }

# Negative control: a page with a script error must be caught by the console check.
printf '<!doctype html><html><body><p>x</p><script>throw new Error("planted")</script></body></html>' >"$tmp/bad.html"
browse "$tmp/bad.html" >/dev/null
check "the console check sees a planted error" 'console_errors | grep -q planted'

GNNPROF_QUIET=1 "$demo" --iterations 40 --profile "$tmp/p.json" >/dev/null
"$cli" report "$tmp/p.json" --html "$tmp/report.html" --markdown "$tmp/report.md" --stages >"$tmp/stages" 2>/dev/null
browse "$tmp/report.html" >"$tmp/dom"
check "page loaded" 'grep -q "gnnprof profile" "$tmp/dom"'
check "no console errors" '[ -z "$(console_errors)" ]'
wall=$(sed -n 's/^Wall \([^;]*\);.*/\1/p' "$tmp/stages")
check "total time in the DOM ($wall)" '[ -n "$wall" ] && grep -qF "id=\"total-time\"><b>$wall</b>" "$tmp/dom"'
# The top stage and its share, as the Markdown summary lists them first.
top=$(sed -n '/^| stage |/{n;n;p;q}' "$tmp/report.md")
name=$(echo "$top" | cut -d'|' -f2 | xargs); share=$(echo "$top" | cut -d'|' -f6 | xargs)
check "top stage in the DOM ($name, $share)" '[ -n "$name" ] && grep -qF "id=\"top-stage\"><b>$name</b><span>top stage: $share of an iteration (median)</span>" "$tmp/dom"'
check "sortable tables rendered" '[ "$(grep -o "class=\"sortable\"" "$tmp/dom" | wc -l)" -ge 2 ]'
check "page under 5 MB" '[ "$(stat -c %s "$tmp/report.html")" -lt 5000000 ]'
# Layout at 5 and at 70 ops: the recorded GAT profile (tests/data) cut and padded.
data=$(cd "$(dirname "$0")/../data" && pwd)
shot() {  # page png
  timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
    --window-size=1280,1800 --screenshot="$2" "file://$1" >/dev/null 2>&1
}
# Negative control: a label cut at the chart's left edge and an op in the legend are caught.
{ printf "<!doctype html><html><body><svg id=stage-chart viewBox='0 0 300 30' width=300><text class=label x=40 y=15 "
  printf "text-anchor=end>a phase name far too long for its column</text></svg><div class=legend><span>aten::mm</span></div><script>"
  cat "$(dirname "$0")/browser/layout_check.js"; printf '</script></body></html>'; } >"$tmp/cut.html"
browse "$tmp/cut.html" >"$tmp/dom_cut"
check "the layout check sees a cut label" 'grep -q "stage chart label cut" "$tmp/dom_cut"'
check "the layout check sees an op in the legend" 'grep -q "an op in the legend" "$tmp/dom_cut"'
for n in 5 70; do
  python3 "$(dirname "$0")/browser/ops_variant.py" "$data/gat_profile.json" "$tmp/gat$n.json" $n
  "$cli" report "$tmp/gat$n.json" --html "$tmp/gat$n.html" --source-root "$data/../.." >/dev/null 2>&1
  ops=$(grep -o "class='op[^']*' hidden" "$tmp/gat$n.html" | wc -l)
  { cat "$tmp/gat$n.html"; printf '<script>'; cat "$(dirname "$0")/browser/layout_check.js"; printf '</script>'; } >"$tmp/check$n.html"
  browse "$tmp/check$n.html" >"$tmp/dom$n"
  result=$(sed -n 's/.*<pre id="layout-check">\(.*\)<\/pre>.*/\1/p' "$tmp/dom$n" | sed 's/&quot;/"/g')
  echo "layout at $n ops ($ops op rows folded): $result"
  check "$n ops: no console errors" '[ -z "$(console_errors)" ]'
  check "$n ops: layout checked" '[ -n "$result" ]'
  check "$n ops: no layout problem" 'echo "$result" | grep -q "\"problems\":\[\]"'
  check "$n ops: phases in the chart and the legend" 'echo "$result" | grep -q "\"chart_rows\":5,\"legend\":6"'
  check "$n ops: a phase opens to its ops" 'echo "$result" | grep -qE "\"opened\":[1-9]"'
  check "$n ops: the icicle zooms into a phase and back" 'echo "$result" | grep -qE "\"zoomed\":\"[a-z]+\",\"zoomed_ops\":[1-9][0-9]*,\"crumbs\":\"iteration › [a-z]+\",\"back\":[3-9]"'
  shot "$tmp/gat$n.html" "$(pwd)/html_report_$n.png"
done
check "70 ops: more rows folded than at 5" '[ "$(grep -o "class=.op[^ ]* hidden" "$tmp/gat70.html" | wc -l)" -gt "$(grep -o "class=.op[^ ]* hidden" "$tmp/gat5.html" | wc -l)" ]'
# The comparison and merge pages are built on the same shell (reports/src/html_page.h).
for r in 0 1; do GNNPROF_QUIET=1 RANK=$r WORLD_SIZE=2 GNNPROF_RUN_ID=browser "$demo" --iterations 20 --profile "$tmp/r$r.json" >/dev/null; done
"$cli" compare "$tmp/r0.json" "$tmp/r1.json" --html "$tmp/cmp.html" >/dev/null 2>&1
browse "$tmp/cmp.html" >"$tmp/dom_cmp"
check "comparison page: loaded, sortable, no console errors" \
  'grep -q "gnnprof comparison" "$tmp/dom_cmp" && grep -q "id=\"compare-table\"" "$tmp/dom_cmp" && [ -z "$(console_errors)" ]'
"$cli" merge "$tmp/r0.json" "$tmp/r1.json" --html "$tmp/merge.html" >/dev/null 2>&1
browse "$tmp/merge.html" >"$tmp/dom_merge"
check "merge page: loaded with the shared stylesheet, no console errors" \
  'grep -q "gnnprof merge" "$tmp/dom_merge" && grep -q "class=\"kpi\"\|\.kpi{" "$tmp/merge.html" && [ -z "$(console_errors)" ]'
exit $fail
