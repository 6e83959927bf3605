// Package promtest starts a real Prometheus server for tests: native
// histograms on (asked for the way its version needs, unless
// Config.Native says otherwise), a short scrape and rule-evaluation
// interval, storage in a temp dir, listening on a free loopback port,
// stopped when the test ends.
// Under CI=true a missing prometheus binary fails the test; elsewhere it
// skips loudly (the convention of internal/redistest).
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// Config is what the test Prometheus scrapes and evaluates.
type Config struct {
	// Targets are host:port pairs scraped as job "redis-prober".
	Targets []string
	// RuleFiles are absolute paths of rule files to load.
	RuleFiles []string
	// Interval is both the scrape and the rule-evaluation interval
	// (default 1s).
	Interval time.Duration
	// Native says how Prometheus is asked to ingest native histograms;
	// the zero value asks the way its version needs.
	Native Native
	// Features are more --enable-feature names (st-storage,
	// use-start-timestamps, ...), beside the native-histogram one.
	Features []string
}

// Native is how a Prometheus is asked to ingest native histograms. There
// are two ways, and which one works depends on the version: the feature
// flag --enable-feature=native-histograms (2.40 to 3.8; from 3.9 it is
// accepted and does nothing) and the scrape config setting
// scrape_native_histograms: true (3.8 on; an older Prometheus refuses the
// config as having an unknown field).
type Native int

const (
	// NativeAsNeeded asks the way the version needs: the flag before 3.9,
	// the setting from 3.8 (both on 3.8).
	NativeAsNeeded Native = iota
	// NativeOff asks neither way, as a default config does: only the
	// classic _bucket series are stored.
	NativeOff
	// NativeFlagOnly passes the flag and writes no setting, as a config
	// written for Prometheus 3.5 or older does.
	NativeFlagOnly
)

// ways says which ways ask for native histograms on Prometheus
// major.minor.
func (n Native) ways(major, minor int) (flag, setting bool) {
	switch n {
	case NativeOff:
		return false, false
	case NativeFlagOnly:
		return true, false
	}
	return !AtLeast(major, minor, 3, 9), AtLeast(major, minor, 3, 8)
}

// AtLeast reports whether version major.minor is wantMajor.wantMinor or newer.
func AtLeast(major, minor, wantMajor, wantMinor int) bool {
	return major > wantMajor || major == wantMajor && minor >= wantMinor
}

// Server is one running Prometheus.
type Server struct {
	// URL is the base URL of the HTTP API, e.g. http://127.0.0.1:41234.
	URL string
	// Dir holds the config, the TSDB and prometheus.log.
	Dir string

	client *http.Client
}

// BinEnv names the environment variable that selects the Prometheus
// binary (a path, e.g. Prometheus 3.5 or 3.16 fetched by scripts/peers.sh); unset,
// prometheus is looked up on PATH (Debian bookworm's 2.42).
const BinEnv = "PROMETHEUS_BIN"

// Binary finds prometheus (PROMETHEUS_BIN, else PATH), or fails (CI) /
// skips (elsewhere) the test.
func Binary(t testing.TB) string {
	t.Helper()
	p := os.Getenv(BinEnv)
	if p != "" {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
		missing(t, fmt.Sprintf("%s=%s is not an executable file", BinEnv, p), "run scripts/peers.sh to fetch Prometheus 3.5 and 3.16")
		return ""
	}
	p, err := exec.LookPath("prometheus")
	if err == nil {
		return p
	}
	missing(t, "prometheus not found on PATH", "install it (apt-get install prometheus)")
	return ""
}

// Promtool finds the promtool of the Prometheus the tests run: the one
// beside Binary (a Prometheus release and Debian's package both ship it
// there), else promtool on PATH. Missing, it fails (CI) or skips the test.
func Promtool(t testing.TB) string {
	t.Helper()
	if p := filepath.Join(filepath.Dir(Binary(t)), "promtool"); isExecutable(p) {
		return p
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	missing(t, "promtool not found beside "+Binary(t)+" or on PATH", "install it (apt-get install prometheus)")
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func missing(t testing.TB, what, fix string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: CI must provide it (see .ci/run)", what)
	}
	t.Skipf("SKIPPING: %s; %s to run this test", what, fix)
}

// Major is the major version of the Prometheus binary the tests run
// (2 or 3), from `prometheus --version`.
func Major(t testing.TB) int {
	t.Helper()
	major, _ := Version(t)
	return major
}

// Version is the major and minor version of the Prometheus binary the
// tests run, from `prometheus --version`.
func Version(t testing.TB) (major, minor int) {
	t.Helper()
	bin := Binary(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("promtest: %s --version: %v: %s", bin, err, out)
	}
	if _, err := fmt.Sscanf(string(out), "prometheus, version %d.%d.", &major, &minor); err != nil {
		t.Fatalf("promtest: %s --version: %q: %v", bin, out, err)
	}
	return major, minor
}

// Start writes the config and runs Prometheus until the test ends. It returns
// once /-/ready answers.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin := Binary(t)
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	major, minor := Version(t)
	flag, setting := cfg.Native.ways(major, minor)
	s := &Server{Dir: t.TempDir(), client: &http.Client{Timeout: 10 * time.Second}}
	cfgPath := filepath.Join(s.Dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(configYAML(cfg, setting)), 0o600); err != nil {
		t.Fatalf("promtest: write config: %v", err)
	}
	t.Logf("promtest: Prometheus %d.%d, native histograms asked for by %s", major, minor, asked(flag, setting))
	var lastErr error
	for range 3 {
		port := redistest.FreePort(t)
		s.URL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.start(t, bin, cfgPath, port, flag, cfg.Features); lastErr == nil {
			return s
		}
	}
	t.Fatalf("promtest: %v", lastErr)
	return nil
}

func asked(flag, setting bool) string {
	switch {
	case flag && setting:
		return "--enable-feature=native-histograms and scrape_native_histograms: true"
	case flag:
		return "--enable-feature=native-histograms"
	case setting:
		return "scrape_native_histograms: true"
	}
	return "nothing (classic histograms only)"
}

// configYAML renders the Prometheus config; nativeSetting writes
// scrape_native_histograms: true into the scrape config. Strings are
// written with %q, which YAML reads as double-quoted scalars.
func configYAML(cfg Config, nativeSetting bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n",
		cfg.Interval, cfg.Interval, cfg.Interval)
	b.WriteString("rule_files:\n")
	for _, f := range cfg.RuleFiles {
		fmt.Fprintf(&b, "  - %q\n", f)
	}
	b.WriteString("scrape_configs:\n  - job_name: redis-prober\n")
	if nativeSetting {
		b.WriteString("    scrape_native_histograms: true\n")
	}
	b.WriteString("    static_configs:\n      - targets:\n")
	for _, tg := range cfg.Targets {
		fmt.Fprintf(&b, "          - %q\n", tg)
	}
	return b.String()
}

func (s *Server) start(t testing.TB, bin, cfgPath string, port int, nativeFlag bool, features []string) error {
	logPath := filepath.Join(s.Dir, "prometheus.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	args := []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(s.Dir, "data"),
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(port),
		"--log.level=warn",
	}
	if nativeFlag {
		args = append(args, "--enable-feature=native-histograms")
	}
	for _, f := range features {
		args = append(args, "--enable-feature="+f)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, killed with the test binary, so no Prometheus
	// outlives a crashed test.
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}

	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			stop()
			return fmt.Errorf("prometheus exited: %v; log:\n%s", err, tail(logPath))
		default:
		}
		if s.ready() {
			t.Cleanup(stop)
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("prometheus log:\n%s", tail(logPath))
				}
			})
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return fmt.Errorf("prometheus on port %d not ready within 30s; log:\n%s", port, tail(logPath))
}

func (s *Server) ready() bool {
	resp, err := s.client.Get(s.URL + "/-/ready")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// Sample is one element of a query result. Histogram is true for a native
// histogram sample (its buckets are not decoded, and Value is 0); Value is
// the float value of any other sample (NaN when Prometheus says "NaN").
type Sample struct {
	Metric    map[string]string `json:"metric"`
	Histogram bool              `json:"-"`
	Value     float64           `json:"-"`
}

// Query evaluates expr at the current time through /api/v1/query. A
// scalar or string result is one sample without labels. The error carries
// Prometheus's own message for a bad expression.
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	return s.query(ctx, url.Values{"query": {expr}})
}

// QueryAt evaluates expr at time at (to the millisecond, Prometheus's
// resolution), as Query does at the current time.
func (s *Server) QueryAt(ctx context.Context, expr string, at time.Time) ([]Sample, error) {
	ms := at.UnixMilli()
	return s.query(ctx, url.Values{"query": {expr}, "time": {fmt.Sprintf("%d.%03d", ms/1000, ms%1000)}})
}

func (s *Server) query(ctx context.Context, form url.Values) ([]Sample, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := s.api(ctx, "/api/v1/query", form, &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(data.Result, &v); err != nil {
			return nil, fmt.Errorf("decode scalar result: %w", err)
		}
		f, err := sampleValue(v[1])
		return []Sample{{Value: f}}, err
	case "string":
		return []Sample{{}}, nil
	}
	var raw []struct {
		Metric    map[string]string `json:"metric"`
		Value     [2]any            `json:"value"`
		Histogram json.RawMessage   `json:"histogram"`
	}
	if err := json.Unmarshal(data.Result, &raw); err != nil {
		return nil, fmt.Errorf("decode %s result: %w", data.ResultType, err)
	}
	out := make([]Sample, len(raw))
	for i, r := range raw {
		out[i] = Sample{Metric: r.Metric, Histogram: len(r.Histogram) > 0}
		if out[i].Histogram {
			continue
		}
		f, err := sampleValue(r.Value[1])
		if err != nil {
			return nil, fmt.Errorf("decode %s result: %v: %w", data.ResultType, r.Metric, err)
		}
		out[i].Value = f
	}
	return out, nil
}

// sampleValue reads the value of a [timestamp, "value"] pair: Prometheus
// writes it as a string ("1", "NaN", "+Inf").
func sampleValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v)
	}
	return strconv.ParseFloat(s, 64)
}

// Rule is one loaded recording or alerting rule as /api/v1/rules shows it.
type Rule struct {
	Group       string            `json:"-"`
	Name        string            `json:"name"`
	Query       string            `json:"query"`
	Type        string            `json:"type"` // "recording" or "alerting"
	Health      string            `json:"health"`
	LastError   string            `json:"lastError"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// Rules lists every loaded rule.
func (s *Server) Rules(ctx context.Context) ([]Rule, error) {
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []Rule `json:"rules"`
		} `json:"groups"`
	}
	if err := s.api(ctx, "/api/v1/rules", nil, &data); err != nil {
		return nil, err
	}
	var out []Rule
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			r.Group = g.Name
			out = append(out, r)
		}
	}
	return out, nil
}

// api POSTs form (or GETs when form is nil) and decodes the data field of
// the standard response envelope into v.
func (s *Server) api(ctx context.Context, path string, form url.Values, v any) error {
	var req *http.Request
	var err error
	if form == nil {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, strings.NewReader(form.Encode()))
		if req != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: read: %w", path, err)
	}
	var env struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: HTTP %d, not JSON: %.200s", path, resp.StatusCode, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, env.ErrorType, env.Error)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return fmt.Errorf("%s: decode data: %w", path, err)
	}
	return nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
