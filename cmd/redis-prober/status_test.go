package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// waitPage polls path until its body matches every pattern, for up to 15 s.
func waitPage(t *testing.T, p *runningProber, path string, patterns ...string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body := p.get(t, path)
		ok := code == http.StatusOK
		for _, pat := range patterns {
			ok = ok && regexp.MustCompile(pat).MatchString(body)
		}
		if ok {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: status %d, no match of %q within 15s; page:\n%s\nstderr: %s", path, code, patterns, body, p.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The status page of a real prober: one Redis it may log in to, one whose
// password is another, and neither page ever shows the password.
func TestStatusPage(t *testing.T) {
	const secret = "st4tus-Pa55-never-shown"
	right := redistest.Start(t, "requirepass "+secret)
	wrong := redistest.Start(t, "requirepass something-else")
	p := startProber(t, []string{"REDIS_PASSWORD=" + secret}, "--redis.addr="+right.URL(), "--redis.addr="+wrong.URL(),
		"--probe.rate=50", "--burst.interval=0")

	latency := `\d+(\.\d+)? (µs|ms|s)`
	home := waitPage(t, p, "/",
		`<tr class="node" data-target="`+regexp.QuoteMeta(right.Addr())+`">`,
		`<td class="name up">up</td>\s*<td>`+latency+`</td><td class="[a-z]*">`+latency+`</td>`,
		`<td class="name down">down</td>`,
		`WRONGPASS`)
	for _, want := range []string{
		`<meta http-equiv="refresh" content="10">`,
		`<svg class="spark"`,
		`1 of 2 nodes up`,
		`href="/?target=` + strings.ReplaceAll(right.Addr(), ":", "%3a"),
		`href="/metrics"`,
	} {
		if !strings.Contains(strings.ToLower(home), strings.ToLower(want)) {
			t.Errorf("/ lacks %s", want)
		}
	}
	if strings.Contains(home, "<script") {
		t.Error("/ has a script")
	}

	detail := waitPage(t, p, "/?target="+right.Addr(), `<td class="name">ping</td>\s*<td>`+latency)
	for _, cmd := range []string{"ping", "get", "set"} {
		if !strings.Contains(detail, `<td class="name">`+cmd+`</td>`) {
			t.Errorf("detail view lacks the %s row", cmd)
		}
	}
	if strings.Contains(detail, wrong.Addr()) {
		t.Error("detail view of one target shows the other")
	}
	bad := waitPage(t, p, "/?target="+wrong.Addr(), `<table class="errors">`, `WRONGPASS`)
	if code, _ := p.get(t, "/?target=no-such-target"); code != http.StatusNotFound {
		t.Errorf("unknown target: status %d, want 404", code)
	}
	if code, _ := p.get(t, "/no-such-page"); code != http.StatusNotFound {
		t.Errorf("/no-such-page: status %d, want 404", code)
	}
	for name, text := range map[string]string{"/": home, "detail": detail, "wrong detail": bad, "logs": p.stderr.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the password", name)
		}
	}
}

// chromium finds the headless browser, or fails (CI) / skips (elsewhere)
// the test, as redistest does for redis-server.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found on PATH: CI must install it (see .ci/run)")
	}
	t.Skip("SKIPPING: chromium not found on PATH; install it (apt-get install chromium) to run the browser test")
	return ""
}

func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	// Chromium logs page errors (a refused resource, a script error) to
	// stderr as CONSOLE lines; the page must have none.
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Refused to") {
			t.Errorf("console: %s", line)
		}
	}
	return out
}

// The page as a browser renders it, against a real prober and Redis: the
// DOM Chromium built, and a screenshot kept under $ARTIFACTS_DIR. The
// Redis has the latency monitor off (a failing check), the prober bursts
// every 2 s, and the test changes the config once the probe has samples,
// so the last burst, the last change and the failing checks all show.
func TestStatusPageInBrowser(t *testing.T) {
	bin := chromium(t)
	srv := redistest.Start(t, "latency-monitor-threshold 0")
	p := startProber(t, nil, "--redis.addr="+srv.URL(), "--redis.addr=redis://127.0.0.1:1", "--probe.rate=50",
		// A generous abort threshold: on a busy host every burst still
		// completes, so the one the browser sees is like the one waited for.
		"--burst.interval=2s", "--burst.test-time=500ms", "--burst.warmup=0", "--burst.rate=500", "--burst.abort-p99=1s",
		"--changes.interval=200ms", "--changes.min-samples=1", "--collector.refresh-interval=500ms")
	waitPage(t, p, "/", `<td class="name up">up</td>\s*<td>\d`, `<td class="name down">down</td>`)
	if err := srv.Client().ConfigSet(t.Context(), "appendfsync", "always").Err(); err != nil {
		t.Fatal(err)
	}
	waitPage(t, p, "/", `<span class="outcome completed">`, `<span class="kind">config</span>`, `<span class="after">\d`)

	dom := string(runChromium(t, bin, "--dump-dom", p.url+"/"))
	for _, pat := range []string{
		`<title>Redis Prober</title>`,
		`<table id="targets">`,
		`data-target="` + regexp.QuoteMeta(srv.Addr()) + `"`,
		`<td class="name up">up</td>\s*<td>\d+(\.\d+)? (µs|ms)</td>`,
		`<td class="name down">down</td>`,
		`connection refused`,
		`<svg class="spark"[^>]*>`,
		// The current minute's p99 is the sparkline's first point, and
		// the blank rest says the line gains one point a minute.
		`<svg class="spark"[^>]*><title>p99 per minute[^<]*</title>.*?<circle `,
		`<svg class="spark"[^>]*><title>p99 per minute[^<]*</title>[^\n]*?<text [^>]*>1 point a minute</text></svg>`,
		`p99, last hour`,
		// The Redis node's last burst (outcome, ops/s, p99, when), last
		// change (kind, when, the slowest command's p99 before → after)
		// and failing checks; the unreachable node has none of them.
		`<td class="burst"><span class="outcome completed">completed</span> [\d,]+ ops/s, p99 <span class="p99">\d+(\.\d+)? (µs|ms)</span> <span class="note">\(\d+s ago\)</span></td>`,
		`<td class="change"><span class="kind">config</span> <span class="note">\(\d+s ago\)</span><br>[a-z]+ p99 <span class="before">\d+(\.\d+)? (µs|ms)</span> → <span class="after">\d+(\.\d+)? (µs|ms)</span></td>`,
		`<td class="checks">[^<]*(<span class="check [a-z]+" title="[^"]*">[a-z_]+</span>)*<span class="check info" title="info: latency-monitor-threshold 0 \(off\)">latency_monitor</span>`,
		// Why the node's requests were slow (the bursts make some), or
		// that none was; the unreachable node's refusals are not slow.
		`<td class="name up">up</td>(?s:.*?)<td class="why">(<span class="cause">[a-z_]+</span> \d+ %(<br><span class="cause">[a-z_]+</span> \d+ %)?|<span class="note">none slow</span>)</td>`,
		`<td class="name down">down</td>(?s:.*?)<td class="why"><span class="note">none slow</span></td>`,
		// The unreachable node: its bursts fail to start (or none ran
		// yet), it saw no change.
		`<td class="name down">down</td>(?s:.*?)<td class="burst">(<span class="note">none yet</span>|<span class="outcome failed">failed</span> \([a-z]+\) <span class="note">\(\d+s ago\)</span>)</td>\s*<td class="change"><span class="note">none seen</span></td>`,
	} {
		if !regexp.MustCompile(pat).MatchString(dom) {
			t.Errorf("rendered DOM lacks %s", pat)
		}
	}
	detail := string(runChromium(t, bin, "--dump-dom", p.url+"/?target="+srv.Addr()))
	for _, pat := range []string{
		`<td class="name">get</td>\s*<td>\d`,
		`<table class="burst">.*?<td class="name">default</td><td class="name outcome completed">completed</td><td>[\d,]+ ops/s</td><td class="p99">\d`,
		`<p class="change"><span class="kind">config</span> at \d\d:\d\d:\d\d \(\d+s ago\)\.</p>`,
		`<table class="change">.*?<td class="name">get</td><td>\d[^<]*</td><td class="">\d[^<]*</td><td>[1-9]\d*</td>`,
		`<table class="checks">.*?<span class="check info">latency_monitor</span></td><td class="name">info</td><td class="text">latency-monitor-threshold 0 \(off\)</td>`,
		`<h3>Why slow</h3>\s*<p class="why">Slow: at or above \d+(\.\d+)? (µs|ms)\. Last 5 minutes: `,
	} {
		if !regexp.MustCompile(`(?s)` + pat).MatchString(detail) {
			t.Errorf("rendered detail view lacks %s", pat)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s\ndetail:\n%s", dom, detail)
	}

	dir := artifactsDir(t)
	for name, url := range map[string]string{"status-page.png": p.url + "/", "status-detail.png": p.url + "/?target=" + srv.Addr()} {
		screenshot(t, bin, filepath.Join(dir, name), 1600, url)
	}

	// The page fits the window, with no horizontal scrolling: a laptop's
	// 1280 and 1400 px and a phone's 390. The failing checks and the last
	// error (the down node's "connection refused", the longest text in
	// the table) are inside it, and no word of an error is broken.
	frames := frameServer(t, p.url)
	for _, width := range []int{1280, 1400, 390} {
		t.Run(fmt.Sprintf("width=%d", width), func(t *testing.T) {
			f := measureFit(t, bin, frames, "/", width, filepath.Join(dir, fmt.Sprintf("status-page-%d.png", width)))
			f.checkNoOverflow(t)
			var up, down int
			for _, c := range f.Cells {
				if c.Width <= 0 || c.Left < 0 || c.Right > f.ClientWidth+0.5 {
					t.Errorf("%s's %s cell spans x %.0f to %.0f, outside the %.0f px window", c.Target, c.Cell, c.Left, c.Right, f.ClientWidth)
				}
				if len(c.Broken) > 0 {
					t.Errorf("%s's %s cell breaks the words %q across lines: %q", c.Target, c.Cell, c.Broken, c.Text)
				}
				switch {
				case c.Cell == "error" && strings.Contains(c.Text, "connection refused"):
					down++
				case c.Cell == "checks" && strings.Contains(c.Text, "latency_monitor"):
					up++
				}
			}
			if up != 1 || down != 1 {
				t.Errorf("measured %d failing-checks cells with latency_monitor and %d error cells with connection refused, want 1 each: %+v", up, down, f.Cells)
			}
		})
	}
	t.Run("detail width=390", func(t *testing.T) {
		measureFit(t, bin, frames, "/?target="+srv.Addr(), 390, filepath.Join(dir, "status-detail-390.png")).checkNoOverflow(t)
	})
}

func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ARTIFACTS_DIR")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves url as Chromium shows it in a window width px wide.
func screenshot(t *testing.T, bin, shot string, width int, url string) {
	t.Helper()
	runChromium(t, bin, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,900", width), url)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 5000 {
		t.Fatalf("screenshot %s: %v (size %d)", shot, err, st.Size())
	}
	t.Logf("screenshot: %s", shot)
}

// fitFrame is the page that measures another in a frame of a given
// width: headless Chromium makes no window narrower than 500 px, and the
// status page's own policy (no script) must stay as it is served. The
// frame's document comes through the same origin (frameServer), so this
// page's script reads its layout and writes the figures into #fit for
// --dump-dom.
const fitFrame = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>html { overflow: hidden; } body { margin: 0; } iframe { display: block; border: 0; } #fit { display: none; }</style></head>
<body><iframe id="frame" width="%d" height="900" data-src="%s"></iframe><pre id="fit"></pre>
<script>
const frame = document.getElementById("frame");
frame.addEventListener("load", () => {
  const w = frame.contentWindow, d = frame.contentDocument;
  // A word (up to a space or after a hyphen) of up to 30 characters fits
  // any cell: one drawn on two lines was broken inside.
  const broken = (cell) => {
    const out = [];
    const walk = d.createTreeWalker(cell, 4 /* NodeFilter.SHOW_TEXT */);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      for (const m of n.data.matchAll(/[^\s-]+-*/g)) {
        if (m[0].length > 30) continue;
        const r = d.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1) out.push(m[0]);
      }
    }
    return out;
  };
  const fit = {clientWidth: d.documentElement.clientWidth, innerWidth: w.innerWidth,
    scrollWidth: d.documentElement.scrollWidth, cells: []};
  for (const row of d.querySelectorAll("#targets tr.node")) {
    for (const [name, sel] of [["why", "td.why"], ["checks", "td.checks"], ["error", "td.text"]]) {
      const cell = row.querySelector(sel);
      if (!cell) { fit.cells.push({target: row.dataset.target, cell: name, text: "(no cell " + sel + ")"}); continue; }
      const r = cell.getBoundingClientRect();
      fit.cells.push({target: row.dataset.target, cell: name, text: cell.textContent.trim(),
        left: r.left, right: r.right, width: r.width, broken: broken(cell)});
    }
  }
  document.getElementById("fit").textContent = JSON.stringify(fit);
});
frame.src = frame.dataset.src;
</script></body></html>
`

// frameServer serves fitFrame at /fit?width=&path= and passes every other
// request through to the prober at url, headers and body untouched.
func frameServer(t *testing.T, url string) string {
	t.Helper()
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", httputil.NewSingleHostReverseProxy(target))
	mux.HandleFunc("/fit", func(w http.ResponseWriter, r *http.Request) {
		width, err := strconv.Atoi(r.URL.Query().Get("width"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, fitFrame, width, html.EscapeString(r.URL.Query().Get("path")))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

type fit struct {
	ClientWidth, InnerWidth, ScrollWidth float64
	Cells                                []struct {
		Target, Cell, Text string
		Left, Right, Width float64
		Broken             []string
	}
}

// measureFit renders path of the prober behind frames in a frame width
// px wide, saves a screenshot of it to shot and returns its layout.
func measureFit(t *testing.T, bin, frames, path string, width int, shot string) fit {
	t.Helper()
	page := fmt.Sprintf("%s/fit?width=%d&path=%s", frames, width, neturl.QueryEscape(path))
	dom := string(runChromium(t, bin, "--dump-dom", fmt.Sprintf("--window-size=%d,900", max(width, 500)), page))
	m := regexp.MustCompile(`<pre id="fit">([^<]+)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no measure in the DOM:\n%s", dom)
	}
	var f fit
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &f); err != nil {
		t.Fatalf("measure %s: %v", m[1], err)
	}
	if f.ClientWidth != float64(width) && f.InnerWidth != float64(width) {
		t.Fatalf("the frame is %.0f px wide (%.0f inside), want %d", f.InnerWidth, f.ClientWidth, width)
	}
	screenshot(t, bin, shot, max(width, 500), page)
	return f
}

// checkNoOverflow fails when the document is wider than the window.
func (f fit) checkNoOverflow(t *testing.T) {
	t.Helper()
	if f.ScrollWidth > f.ClientWidth {
		t.Errorf("the page is %.0f px wide in a %.0f px window (%.0f inside): it scrolls horizontally", f.ScrollWidth, f.InnerWidth, f.ClientWidth)
	}
}
