#!/usr/bin/env bash
# The HTML report in a real browser: headless Chromium loads it, the page logs no console
# error, and the key numbers (total time, top stage and its share) are in the DOM.
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
check "top stage in the DOM ($name, $share)" '[ -n "$name" ] && grep -qF "id=\"top-stage\"><b>$name</b><span>top stage: $share of an iteration</span>" "$tmp/dom"'
check "sortable tables rendered" '[ "$(grep -o "class=\"sortable\"" "$tmp/dom" | wc -l)" -ge 2 ]'
check "page under 5 MB" '[ "$(stat -c %s "$tmp/report.html")" -lt 5000000 ]'
exit $fail
