#!/usr/bin/env bash
# The HTML report of a prompt-set run, checked in a real headless browser (Chromium): every
# prompt's answers are in the DOM side by side (same row, left to right, as laid out by the
# browser), rendered from markdown; prompts or answers carrying markup, a javascript: link or a
# terminal escape stay inert text (nothing injected runs, nothing is fetched); the filters by
# model, by failing check (CSS alone, checked again with the page's script removed) and by text
# (the page's one script, allowed by its hash) work.
# Then a conversation page (`history export ID --format html`) with a tool flow and an image:
# laid out, its image decoded from the page itself with the network cut off, nothing injected.
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
# A prompt set: items 1–4 pass their check, 5–6 fail a regex; then hostile prompts, which the
# demo quotes into its answers (markup, a javascript: link, a terminal escape).
python3 - "$WORK/prompts.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 7):
        expect = "you said" if i <= 4 else {"regex": "^NEVER$"}
        f.write(json.dumps({"id": f"item-{i}", "prompt": f"Prompt number {i}: tell me about item {i}", "expect": expect}) + "\n")
    for p in ['Hostile <script>document.title="pwned"</script> and <img src=x onerror="document.title=1">',
              '<img src=x onerror="document.title=1">', '[click me](javascript:document.title=2)',
              'ansi \x1b[31mred\x1b[0m text']:
        f.write(json.dumps({"prompt": p}) + "\n")
PY
# Exit 3 (items 5–6 fail their check) is expected; the report is what is checked.
"$BIN" compare --demo -m demo -m demo-reasoning -m demo-tools --prompts "$WORK/prompts.jsonl" \
  --concurrency 8 --report "$WORK/r.html" > "$WORK/stdout.txt" || [ $? -eq 3 ]

# The report plus one script of ours at the end: it measures where the browser put each answer,
# then works the filters as a reader would (clicking their labels, typing in the text box).
# The page's policy allows its own script by hash; the checker's hash is added to it, so
# anything injected still cannot run.
cat > "$WORK/checker.js" <<'JS'
(function () {
  var problems = [], b = document.body;
  var shown = function (el) { return getComputedStyle(el).display !== "none" && el.getClientRects().length > 0; };
  var visible = function (sel) { return Array.prototype.filter.call(document.querySelectorAll(sel), shown); };
  var sections = document.querySelectorAll("section.prompt");
  sections.forEach(function (s) {
    var cols = s.querySelectorAll(".answers > article");
    if (cols.length !== 3) problems.push(s.id + ": " + cols.length + " answers");
    for (var i = 1; i < cols.length; i++) {
      var a = cols[i - 1].getBoundingClientRect(), c = cols[i].getBoundingClientRect();
      if (Math.abs(a.top - c.top) > 1 || !(c.left >= a.right - 1)) problems.push(s.id + ": answer " + i + " not beside the one before");
    }
  });
  b.setAttribute("data-sections", String(sections.length));
  b.setAttribute("data-scripts", String(document.scripts.length));
  b.setAttribute("data-images", String(document.images.length));
  b.setAttribute("data-title", document.title);
  b.setAttribute("data-layout", problems.length ? "broken: " + problems.join("; ") : "side-by-side");
  b.setAttribute("data-tables", String(document.querySelectorAll(".md table").length));
  b.setAttribute("data-code", String(document.querySelectorAll(".md pre.code span[style]").length > 0));
  b.setAttribute("data-js-links", String(document.querySelectorAll("a[href]:not([href^='http'])").length));
  b.setAttribute("data-esc", String(b.textContent.indexOf("\u001b") >= 0));
  b.setAttribute("data-resources", String(performance.getEntriesByType("resource").length));
  // By model: only demo-reasoning's answers, one a prompt.
  document.querySelector("label[for=fm-1]").click();
  var m = visible("article.answer");
  var only = m.every(function (a) { return a.getAttribute("data-model") === "demo-reasoning"; });
  b.setAttribute("data-filter-model", m.length + (only ? " all demo-reasoning" : " mixed"));
  document.querySelector("label[for=fm-all]").click();
  b.setAttribute("data-filter-model-reset", String(visible("article.answer").length));
  // By failing check: only the prompts whose regex failed.
  document.querySelector("label[for=fc-regex]").click();
  b.setAttribute("data-filter-check", visible("section.prompt").map(function (s) { return s.getAttribute("data-prompt"); }).join(","));
  document.querySelector("label[for=fc-all]").click();
  // By text: the page's own script (allowed by its hash) shows the box and filters.
  var q = document.getElementById("q");
  b.setAttribute("data-q-hidden", String(q.hidden));
  q.value = "ITEM 3";
  q.dispatchEvent(new Event("input"));
  b.setAttribute("data-filter-text", visible("section.prompt").map(function (s) { return s.getAttribute("data-prompt"); }).join(","));
})();
JS
HASH="sha256-$(printf '%s' "$(cat "$WORK/checker.js")" | openssl dgst -sha256 -binary | base64)"
sed -e "s#script-src '\(sha256-[^']*\)'#script-src '\1' '$HASH'#" -e 's#</body></html>##' "$WORK/r.html" > "$WORK/check.html"
{ printf '<script>%s</script></body></html>\n' "$(cat "$WORK/checker.js")"; } >> "$WORK/check.html"

PROFILE="$(mktemp -d)"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --no-first-run --user-data-dir="$PROFILE" --proxy-server=127.0.0.1:9 --window-size=1400,1000 \
  --dump-dom "file://$WORK/check.html" > "$WORK/dom.html" 2> "$WORK/chrome.log" || { cat "$WORK/chrome.log" >&2; rm -rf "$PROFILE"; exit 1; }
rm -rf "$PROFILE"

fail=0
check() { # description, command…
  local what="$1"; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what" >&2; fail=1; fi
}
body="$(grep -o '<body[^>]*>' "$WORK/dom.html" | head -1)"
echo "body: $body"
check "the browser laid every prompt's three answers side by side" grep -q 'data-layout="side-by-side"' <<<"$body"
check "all 10 prompts are in the DOM" grep -q 'data-sections="10"' <<<"$body"
check "no script but the page's and the checker's ran (nothing injected)" grep -q 'data-scripts="2"' <<<"$body"
check "no image element was made from model or prompt text" grep -q 'data-images="0"' <<<"$body"
check "the title was not changed by injected markup" grep -q 'data-title="palaver compare run-' <<<"$body"
check "the report fetched nothing" grep -q 'data-resources="0"' <<<"$body"
check "answers are rendered markdown: tables" grep -Eq 'data-tables="[1-9]' <<<"$body"
check "answers are rendered markdown: highlighted code" grep -q 'data-code="true"' <<<"$body"
check "no link goes anywhere but the web (the javascript: one has no target)" grep -q 'data-js-links="0"' <<<"$body"
check "no terminal escape reached the page" grep -q 'data-esc="false"' <<<"$body"
check "the model filter shows one model's answers, one a prompt" grep -q 'data-filter-model="10 all demo-reasoning"' <<<"$body"
check "the model filter back on all shows every answer" grep -q 'data-filter-model-reset="30"' <<<"$body"
check "the failing-check filter shows only the prompts whose regex failed" grep -q 'data-filter-check="item-5,item-6"' <<<"$body"
check "the page's hashed script ran under its policy (the text box shows)" grep -q 'data-q-hidden="false"' <<<"$body"
check "the text filter keeps only the prompt with that text" grep -q 'data-filter-text="item-3"' <<<"$body"
check "the hostile prompt is shown as text" grep -q '&lt;script&gt;document.title="pwned"&lt;/script&gt;' "$WORK/dom.html"
check "the javascript: link is text" grep -q '<a>click me</a>' "$WORK/dom.html"
for i in $(seq 1 6); do
  check "prompt $i is there" grep -q "Prompt number $i: tell me about item $i" "$WORK/dom.html"
done
check "demo-tools answers are in the DOM" grep -q 'data-model="demo-tools"' "$WORK/dom.html"
check "the report's policy allows one script by its hash and nothing inline" \
  grep -Eq "content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-[A-Za-z0-9+/=]{44}'; base-uri 'none'; form-action 'none'\"" "$WORK/r.html"
# The same page without its script (as a reader with JavaScript off sees it; the checker still
# runs, to click and measure): the model and failing-check filters are CSS alone and still
# work, and the text box stays hidden.
sed -e "s#script-src '\(sha256-[^']*\)'#script-src '$HASH'#" -e 's#<script>(function(){var q=.*</script>##' \
  -e 's#</body></html>##' "$WORK/r.html" > "$WORK/nojs.html"
{ printf '<script>%s</script></body></html>\n' "$(cat "$WORK/checker.js")"; } >> "$WORK/nojs.html"
PROFILE="$(mktemp -d)"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --no-first-run --user-data-dir="$PROFILE" --proxy-server=127.0.0.1:9 --window-size=1400,1000 \
  --dump-dom "file://$WORK/nojs.html" > "$WORK/nojs-dom.html" 2> "$WORK/chrome-nojs.log" || { cat "$WORK/chrome-nojs.log" >&2; rm -rf "$PROFILE"; exit 1; }
rm -rf "$PROFILE"
body="$(grep -o '<body[^>]*>' "$WORK/nojs-dom.html" | head -1)"
echo "without the page's script: $body"
check "without the page's script only the checker ran" grep -q 'data-scripts="1"' <<<"$body"
check "without script the model filter still works" grep -q 'data-filter-model="10 all demo-reasoning"' <<<"$body"
check "without script the failing-check filter still works" grep -q 'data-filter-check="item-5,item-6"' <<<"$body"
check "without script the text box stays hidden" grep -q 'data-q-hidden="true"' <<<"$body"
# ── The conversation page: demo-tools (a tool flow) then demo-vision with an image ─────────
CONV="$WORK/conv"; mkdir -p "$CONV"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"  # the runs below are in $CONV
echo 'a file <script>document.title="pwned"</script>' > "$CONV/notes.txt"
# A 2×2 PNG, written from base64 so the script needs no image tool.
echo 'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==' \
  | base64 -d > "$CONV/shot.png"
( cd "$CONV" && "$BIN" --demo -m demo-tools --yes \
    -p 'Files? <script>document.title="pwned"</script> <img src=x onerror="document.title=1">' > /dev/null \
  && "$BIN" --continue -m demo-vision -a shot.png -p 'and this picture?' > /dev/null )
ID="$("$BIN" history list | awk '{print $1; exit}')"
"$BIN" history export "$ID" --format html > "$WORK/page.html"
# The page as written, plus our checker: the page's CSP is kept except that inline script is
# allowed, so the checker runs — and so would anything injected, which is what is tested.
sed -e "s#content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\"#content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\"#" \
    -e 's#</body></html>##' "$WORK/page.html" > "$WORK/page-check.html"
cat >> "$WORK/page-check.html" <<'EOF'
<script>
window.addEventListener("load", function () {
  var b = document.body, problems = [];
  var arts = document.querySelectorAll("article.msg");
  arts.forEach(function (a) {
    var r = a.getBoundingClientRect();
    if (r.width < 300 || r.height < 10) problems.push(a.id + " is " + r.width + "x" + r.height);
  });
  for (var i = 1; i < arts.length; i++) {
    if (arts[i].getBoundingClientRect().top < arts[i - 1].getBoundingClientRect().bottom - 1) problems.push(arts[i].id + " overlaps");
  }
  var imgs = Array.prototype.slice.call(document.images);
  var decoded = imgs.filter(function (im) { return im.complete && im.naturalWidth > 0 && im.src.indexOf("data:image/") === 0; });
  b.setAttribute("data-articles", String(arts.length));
  b.setAttribute("data-tools", String(document.querySelectorAll("details.tool").length));
  b.setAttribute("data-images", imgs.length + "/" + decoded.length);
  b.setAttribute("data-scripts", String(document.scripts.length));
  b.setAttribute("data-title", document.title);
  b.setAttribute("data-resources", String(performance.getEntriesByType("resource").length));
  b.setAttribute("data-layout", problems.length ? "broken: " + problems.join("; ") : "stacked");
});
</script></body></html>
EOF
PROFILE="$(mktemp -d)"
# --proxy-server to a closed port: the page must open with no network at all.
"$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --no-first-run --user-data-dir="$PROFILE" --proxy-server=127.0.0.1:9 --window-size=1200,900 \
  --dump-dom "file://$WORK/page-check.html" > "$WORK/page-dom.html" 2> "$WORK/chrome2.log" \
  || { cat "$WORK/chrome2.log" >&2; rm -rf "$PROFILE"; exit 1; }
rm -rf "$PROFILE"
body="$(grep -o '<body[^>]*>' "$WORK/page-dom.html" | head -1)"
echo "page body: $body"
check "the conversation page's messages are laid out one under another" grep -q 'data-layout="stacked"' <<<"$body"
check "the page has its tool calls folded" grep -Eq 'data-tools="[1-9]' <<<"$body"
check "the attached image is the page's only image and decodes offline" grep -q 'data-images="1/1"' <<<"$body"
check "no script but the checker's ran on the page (nothing injected)" grep -q 'data-scripts="1"' <<<"$body"
check "the page fetched nothing" grep -q 'data-resources="0"' <<<"$body"
check "the page's title was not changed by injected markup" grep -q 'data-title="Files? ' <<<"$body"
check "the hostile prompt is shown as text on the page" \
  grep -q '&lt;img src=x onerror="document.title=1"&gt;' "$WORK/page-dom.html"
check "the page keeps its content security policy as written" \
  grep -q "content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\"" "$WORK/page.html"
exit $fail
