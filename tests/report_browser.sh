#!/usr/bin/env bash
# The HTML report of a prompt-set run, checked in a real headless browser (Chromium): every
# prompt's answers are in the DOM side by side (same row, left to right, as laid out by the
# browser), and prompts or answers carrying markup stay text (nothing injected runs).
#
#   tests/report_browser.sh [path/to/palaver]
#
# Exits 0 when the checks pass, 1 when one fails, 77 (skipped) when no Chromium is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-target/debug/palaver}"
CHROME="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$CHROME" ]; then
  echo "report_browser: SKIPPED — no chromium found (apt-get install -y chromium)" >&2
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export PALAVER_HOME="$WORK/home"
{
  for i in $(seq 1 6); do echo "Prompt number $i: tell me about item $i"; done
  echo 'Hostile <script>document.title="pwned"</script> and <img src=x onerror="document.title=1">'
} > "$WORK/prompts.txt"
"$BIN" compare --demo -m demo -m demo-reasoning -m demo-tools --prompts "$WORK/prompts.txt" \
  --concurrency 8 --report "$WORK/r.html" > "$WORK/stdout.txt"

# The report plus one script of ours at the end: it measures where the browser put each answer.
sed 's#</body></html>##' "$WORK/r.html" > "$WORK/check.html"
cat >> "$WORK/check.html" <<'EOF'
<script>
(function () {
  var problems = [];
  var sections = document.querySelectorAll("section.prompt");
  sections.forEach(function (s) {
    var cols = s.querySelectorAll(".answers > article");
    if (cols.length !== 3) problems.push(s.id + ": " + cols.length + " answers");
    for (var i = 1; i < cols.length; i++) {
      var a = cols[i - 1].getBoundingClientRect(), b = cols[i].getBoundingClientRect();
      if (Math.abs(a.top - b.top) > 1 || !(b.left >= a.right - 1)) problems.push(s.id + ": answer " + i + " not beside the one before");
    }
  });
  document.body.setAttribute("data-sections", String(sections.length));
  document.body.setAttribute("data-scripts", String(document.scripts.length));
  document.body.setAttribute("data-images", String(document.images.length));
  document.body.setAttribute("data-title", document.title);
  document.body.setAttribute("data-layout", problems.length ? "broken: " + problems.join("; ") : "side-by-side");
})();
</script></body></html>
EOF

PROFILE="$(mktemp -d)"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --no-first-run --user-data-dir="$PROFILE" --window-size=1400,1000 --dump-dom "file://$WORK/check.html" \
  > "$WORK/dom.html" 2> "$WORK/chrome.log" || { cat "$WORK/chrome.log" >&2; rm -rf "$PROFILE"; exit 1; }
rm -rf "$PROFILE"

fail=0
check() { # description, command…
  local what="$1"; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what" >&2; fail=1; fi
}
body="$(grep -o '<body[^>]*>' "$WORK/dom.html" | head -1)"
echo "body: $body"
check "the browser laid every prompt's three answers side by side" grep -q 'data-layout="side-by-side"' <<<"$body"
check "all 7 prompts are in the DOM" grep -q 'data-sections="7"' <<<"$body"
check "no script but the checker's ran (nothing injected)" grep -q 'data-scripts="1"' <<<"$body"
check "no image element was made from model or prompt text" grep -q 'data-images="0"' <<<"$body"
check "the title was not changed by injected markup" grep -q 'data-title="palaver compare run-' <<<"$body"
check "the hostile prompt is shown as text" grep -q '&lt;script&gt;document.title="pwned"&lt;/script&gt;' "$WORK/dom.html"
for i in $(seq 1 6); do
  check "prompt $i is there" grep -q "Prompt number $i: tell me about item $i" "$WORK/dom.html"
done
check "demo-tools answers are in the DOM" grep -q 'data-model="demo-tools"' "$WORK/dom.html"
exit $fail
