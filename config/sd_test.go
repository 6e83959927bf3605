package config

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSourcesParse(t *testing.T) {
	f, err := Parse([]byte(`file_sd_configs:
  - files: [/srv/sd/*.json, /srv/sd/extra.yml]
    refresh_interval: 5s
    target:
      username: prober
      probe: {rate: 2}
http_sd_configs:
  - url: http://127.0.0.1:8080/redis
    timeout: 2s
relabel_configs:
  - source_labels: [__address__]
    regex: "(.*):6379"
    target_label: host
    replacement: $1
  - {source_labels: [env], regex: dev, action: drop}
sharding: {shards: 3, index: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.FileSD[0].Refresh() != 5*time.Second || f.HTTPSD[0].Refresh() != DefaultHTTPSDRefresh || f.HTTPSD[0].FetchTimeout() != 2*time.Second {
		t.Errorf("intervals: %v %v %v", f.FileSD[0].Refresh(), f.HTTPSD[0].Refresh(), f.HTTPSD[0].FetchTimeout())
	}
	if len(f.Relabel) != 2 || f.Relabel[1].Action != "drop" || *f.Sharding.Index != 2 {
		t.Errorf("relabel %+v sharding %+v", f.Relabel, f.Sharding)
	}
}

func TestSourcesErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"file_sd_configs:\n  - files: []\n", "file_sd_configs[0].files (line 2): needs at least one file"},
		{"file_sd_configs:\n  - files: [a]\n    refresh_interval: 1ms\n", "file_sd_configs[0].refresh_interval (line 3): must be at least 100ms"},
		{"file_sd_configs:\n  - files: [a]\n    target: {probe: {rate: 0}}\n", "file_sd_configs[0].target.probe.rate (line 3)"},
		{"file_sd_configs:\n  - filez: [a]\n", `file_sd_configs[0]: unknown field "filez" (did you mean files?)`},
		{"http_sd_configs:\n  - url: ftp://x/y\n", "http_sd_configs[0].url (line 2): must be an http:// or https:// URL"},
		{"http_sd_configs:\n  - url: http://u:pw@x/y\n", "must not hold credentials"},
		{"targets: [{name: a, addr: x}]\nrelabel_configs:\n  - {action: hashmod, source_labels: [__address__]}\n", "relabel_configs[0] (line 3): relabel configuration for hashmod requires non-zero modulus"},
		{"targets: [{name: a, addr: x}]\nrelabel_configs:\n  - {action: nonsense}\n", `unknown relabel action "nonsense"`},
		{"targets: [{name: a, addr: x}]\nrelabel_configs:\n  - {sourcelabels: [a]}\n", `relabel_configs[0]: unknown field "sourcelabels" (did you mean source_labels?)`},
		{"targets: [{name: a, addr: x}]\nsharding: {shards: 0}\n", "sharding.shards (line 2): must be from 1 to 1000"},
		{"targets: [{name: a, addr: x}]\nsharding: {shards: 3, index: 3}\n", "sharding.index (line 2): must be from 0 to shards-1 (2)"},
		{"global: {}\n", "at least one target (or file_sd_configs, http_sd_configs) is needed"},
	} {
		_, err := Parse([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want it to contain %q", tc.text, err, tc.want)
		}
	}
}

func TestParseGroups(t *testing.T) {
	g, err := ParseGroups([]byte(`[{"targets": ["10.0.0.1:6379", "10.0.0.2:6379"], "labels": {"team": "a", "__meta_x": "y"}}, {"targets": []}]`), true)
	if err != nil || len(g) != 2 || g[0].Labels["team"] != "a" {
		t.Fatalf("%+v %v", g, err)
	}
	g, err = ParseGroups([]byte("- targets: [a:1]\n  labels: {team: b}\n"), false)
	if err != nil || g[0].Targets[0] != "a:1" {
		t.Fatalf("yaml: %+v %v", g, err)
	}
	if g, err := ParseGroups(nil, false); err != nil || len(g) != 0 {
		t.Errorf("an empty YAML file is an empty list: %v %v", g, err)
	}
	for _, tc := range []struct {
		text string
		json bool
		want string
	}{
		{`{"targets": []}`, true, "not a JSON list"},
		{`[{"targets": ["a"], "lables": {}}]`, true, "unknown field"},
		{`[{"targets": [""]}]`, true, "is not an address"},
		{`[{"targets": ["a"], "labels": {"0bad": "x"}}]`, true, `"0bad" is not a valid label name`},
		{`[] []`, true, "data after the JSON list"},
		{"- targets: [a]\n  lables: {}\n", false, `line 2: group 0: unknown field "lables" (did you mean labels?)`},
		{"- targets: [a]\n- targets: [b]\n  password: x\n", false, `line 3: group 1: unknown field "password"`},
		{"lables: {}\n", false, "cannot unmarshal"},
		{"- targets: [a\n", false, "did not find expected"},
	} {
		if _, err := ParseGroups([]byte(tc.text), tc.json); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
}

func TestReadFileSD(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("b.json", `[{"targets": ["b:6379"]}]`)
	write("a.yml", "- targets: [a:6379]\n")
	g, err := ReadFileSD(FileSD{Files: []string{filepath.Join(dir, "*.json"), filepath.Join(dir, "*.yml"), filepath.Join(dir, "none-*.json")}})
	if err != nil || len(g) != 2 || g[0].Targets[0] != "b:6379" || g[1].Source != filepath.Join(dir, "a.yml") {
		t.Fatalf("%+v %v", g, err)
	}
	write("c.json", `[{"targets": ["c"]`)
	_, err = ReadFileSD(FileSD{Files: []string{filepath.Join(dir, "*.json")}})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "c.json")+": not a JSON list") {
		t.Errorf("malformed file: %v", err)
	}
	if err := mkfifo(filepath.Join(dir, "d.json")); err == nil {
		os.Remove(filepath.Join(dir, "c.json"))
		_, err = ReadFileSD(FileSD{Files: []string{filepath.Join(dir, "*.json")}})
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("fifo: %v", err)
		}
	}
}

func TestFetchHTTPSD(t *testing.T) {
	var body, ctype string
	status := 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Prometheus-Refresh-Interval-Seconds") == "" {
			t.Error("no refresh interval header")
		}
		if strings.Contains(r.URL.Path, "slow") {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	ctx := context.Background()
	sd := HTTPSD{URL: srv.URL + "/sd?token=secret"}
	body, ctype = `[{"targets": ["127.0.0.1:1"], "labels": {"team": "x"}}]`, "application/json; charset=utf-8"
	g, err := FetchHTTPSD(ctx, srv.Client(), sd)
	if err != nil || g[0].Targets[0] != "127.0.0.1:1" || g[0].Source != sd.URL {
		t.Fatalf("%+v %v", g, err)
	}
	for _, tc := range []struct {
		body, ctype string
		status      int
		want        string
	}{
		{"[]", "application/json", 500, "HTTP status 500"},
		{"[]", "text/html", 200, `content type "text/html"`},
		{"[", "application/json", 200, "not a JSON list"},
		{"[" + strings.Repeat(" ", MaxSDBody) + "]", "application/json", 200, "larger than"},
	} {
		body, ctype, status = tc.body, tc.ctype, tc.status
		_, err := FetchHTTPSD(ctx, srv.Client(), sd)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.want, err)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the query: %v", err)
		}
	}
	timeout := Duration(100 * time.Millisecond)
	start := time.Now()
	_, err = FetchHTTPSD(ctx, srv.Client(), HTTPSD{URL: srv.URL + "/slow", Timeout: &timeout})
	if err == nil || time.Since(start) > 3*time.Second {
		t.Errorf("slow server: %v after %v", err, time.Since(start))
	}
}

func addrs(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("10.0.0.%d:6379", i+1))
	}
	return out
}

func TestShardingPartitions(t *testing.T) {
	groups := []Group{{Targets: addrs(30), Labels: map[string]string{"team": "a"}, Source: "/srv/sd/a.json"}}
	seen := map[string]int{}
	for i := range 3 {
		f, err := Parse([]byte("file_sd_configs: [{files: [x]}]\nsharding: {shards: 3}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.DiscoveredTargets(TargetTemplate{}, groups); err == nil || !strings.Contains(err.Error(), "needs index") {
			t.Errorf("no index: %v", err)
		}
		if err := f.SetShardIndex(i); err != nil {
			t.Fatal(err)
		}
		ts, err := f.DiscoveredTargets(TargetTemplate{Username: "u"}, groups)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) == 0 || len(ts) == 30 {
			t.Errorf("shard %d has %d of 30 targets", i, len(ts))
		}
		for _, tg := range ts {
			seen[tg.Name]++
			if tg.Addr != tg.Name || tg.Labels["team"] != "a" || len(tg.Labels) != 1 || tg.Username != "u" {
				t.Errorf("target %+v", tg)
			}
		}
	}
	if len(seen) != 30 {
		t.Errorf("%d of 30 targets in some shard", len(seen))
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s in %d shards", name, n)
		}
	}
	f, _ := Parse([]byte("file_sd_configs: [{files: [x]}]\nsharding: {shards: 3}\n"))
	if err := f.SetShardIndex(3); err == nil {
		t.Error("index 3 of 3 accepted")
	}
}

func TestRelabelDiscovered(t *testing.T) {
	f, err := Parse([]byte(`file_sd_configs: [{files: [x]}]
relabel_configs:
  - {source_labels: [__meta_filepath], regex: ".*/(.*)\\.json", target_label: file}
  - {source_labels: [__address__], regex: "(.*):(.*)", target_label: target, replacement: "cache-$2"}
  - {source_labels: [env], regex: dev, action: drop}
  - {regex: env, action: labeldrop}
`))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := f.DiscoveredTargets(TargetTemplate{}, []Group{
		{Targets: []string{"10.0.0.1:7001", "10.0.0.1:7001"}, Labels: map[string]string{"env": "prod"}, Source: "/sd/eu.json"},
		{Targets: []string{"10.0.0.2:7002"}, Labels: map[string]string{"env": "dev"}, Source: "/sd/eu.json"},
		{Targets: []string{"10.0.0.3:26379"}, Labels: map[string]string{SentinelMasterLabel: "queue"}, Source: "/sd/eu.json"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "cache-7001" || ts[0].Addr != "10.0.0.1:7001" || fmt.Sprint(ts[0].Labels) != "map[file:eu]" {
		t.Fatalf("%+v", ts)
	}
	if ts[1].Sentinel == nil || ts[1].Sentinel.MasterName != "queue" || ts[1].Sentinel.Addrs[0] != "10.0.0.3:26379" || ts[1].Addr != "" {
		t.Errorf("sentinel %+v", ts[1])
	}

	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"node": "x"}, `/sd/b.json: target "10.0.0.1:1": label "node" is one the prober sets itself`},
		{map[string]string{"a": "1", "b": "1", "c": "1", "d": "1", "e": "1", "f": "1", "g": "1", "h": "1", "i": "1"}, "9 labels, at most 8"},
	} {
		f, _ := Parse([]byte("file_sd_configs: [{files: [x]}]\n"))
		_, err := f.DiscoveredTargets(TargetTemplate{}, []Group{{Targets: []string{"10.0.0.1:1"}, Labels: tc.labels, Source: "/sd/b.json"}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.labels, err, tc.want)
		}
	}
	f, _ = Parse([]byte("file_sd_configs: [{files: [x]}]\nrelabel_configs: [{target_label: target, replacement: same}]\n"))
	if _, err := f.DiscoveredTargets(TargetTemplate{}, []Group{{Targets: []string{"a:1", "b:1"}, Source: "/sd/c.json"}}); err == nil ||
		!strings.Contains(err.Error(), `target name "same" stands for two addresses`) {
		t.Errorf("two addresses, one name: %v", err)
	}
}

func TestRelabelStatic(t *testing.T) {
	f, err := Parse([]byte(`targets:
  - {name: a, addr: "10.0.0.1:6379", labels: {team: x}}
  - {name: b, addr: "10.0.0.2:6379"}
  - name: c
    cluster: {addrs: ["10.0.0.3:7000", "10.0.0.4:7000"]}
relabel_configs:
  - {source_labels: [target], regex: b, action: drop}
  - {source_labels: [__address__], regex: "10.0.0.3:7000", target_label: __address__, replacement: "10.0.0.9:7000"}
  - {source_labels: [team], target_label: owner}
`))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := f.StaticTargets()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "a" || fmt.Sprint(ts[0].Labels) != "map[owner:x team:x]" || ts[1].Cluster.Addrs[0] != "10.0.0.9:7000" ||
		ts[1].Cluster.Addrs[1] != "10.0.0.4:7000" || f.Targets[2].Cluster.Addrs[0] != "10.0.0.3:7000" {
		t.Errorf("%+v", ts)
	}
	// Without rules the static list is what the file says.
	f, _ = Parse([]byte("targets:\n  - {name: a, addr: x, labels: {team: y}}\n"))
	if ts, err := f.StaticTargets(); err != nil || len(ts) != 1 || ts[0].Name != "a" || ts[0].Labels["team"] != "y" || ts[0].Addr != "x" {
		t.Errorf("%+v %v", ts, err)
	}
}

// secretFile writes text to a file of dir and returns its path.
func secretFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The http_sd client fields are Prometheus's, inline in the source, with
// its defaults; bearer_token_file becomes authorization as in Prometheus.
func TestHTTPSDClientFields(t *testing.T) {
	dir := t.TempDir()
	tok := secretFile(t, dir, "token", "t0ken")
	f, err := Parse([]byte(fmt.Sprintf(`http_sd_configs:
  - url: https://sd.internal/redis
    authorization: {credentials_file: %s}
    tls_config: {server_name: sd.internal, min_version: TLS12}
    http_headers:
      X-Team: {values: [payments]}
  - url: https://sd.internal/other
    basic_auth: {username: prober, password_file: %[1]s}
    follow_redirects: false
  - url: https://sd.internal/legacy
    bearer_token_file: %[1]s
`, tok)))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := f.HTTPSD[0].HTTPClientConfig, f.HTTPSD[1].HTTPClientConfig, f.HTTPSD[2].HTTPClientConfig
	if a.Authorization == nil || a.Authorization.Type != "Bearer" || a.Authorization.CredentialsFile != tok || !a.FollowRedirects || !a.EnableHTTP2 || a.TLSConfig.ServerName != "sd.internal" {
		t.Errorf("authorization source: %+v", a)
	}
	if b.BasicAuth == nil || b.BasicAuth.Username != "prober" || b.BasicAuth.PasswordFile != tok || b.FollowRedirects {
		t.Errorf("basic_auth source: %+v", b)
	}
	if c.Authorization == nil || c.Authorization.CredentialsFile != tok || c.BearerTokenFile != "" {
		t.Errorf("bearer_token_file is not authorization: %+v", c)
	}
	// No proxy unless set: not even HTTPS_PROXY from the environment.
	t.Setenv("HTTPS_PROXY", "http://proxy.internal:3128")
	if a.ProxyFromEnvironment || a.ProxyURL.URL != nil || a.Proxy() != nil {
		t.Errorf("a proxy without proxy_url or proxy_from_environment")
	}
}

// Secrets come only from files: one written in the config is refused with
// one line naming the field, and the value is not repeated.
func TestHTTPSDSecretsOnlyFromFiles(t *testing.T) {
	dir := t.TempDir()
	tok := secretFile(t, dir, "token", "t0ken")
	const secret = "hunter2-inline"
	for _, tc := range []struct{ fields, want string }{
		{"authorization: {credentials: " + secret + "}", "http_sd_configs[0].authorization.credentials (line 3): secrets are read from files, not written in the config: give credentials_file"},
		{"basic_auth: {username: u, password: " + secret + "}", "http_sd_configs[0].basic_auth.password (line 3): secrets are read from files, not written in the config: give password_file"},
		{"bearer_token: " + secret, "http_sd_configs[0].bearer_token (line 3): secrets are read from files"},
		{"tls_config: {cert_file: " + tok + ", key: " + secret + "}", "http_sd_configs[0].tls_config.key (line 3): secrets are read from files"},
		{"http_headers: {X-Key: {secrets: [" + secret + "]}}", "http_sd_configs[0].http_headers.X-Key.secrets (line 3): secrets are read from files"},
		{"basic_auth: {username: u, password_ref: " + secret + "}", "http_sd_configs[0].basic_auth.password_ref (line 3): needs a secret manager"},
		{"proxy_url: http://u:" + secret + "@proxy:3128", "http_sd_configs[0].proxy_url (line 3): must not hold credentials"},
		{"proxy_url: http://proxy:3128\n    proxy_connect_header: {X-Auth: [" + secret + "]}", "http_sd_configs[0].proxy_connect_header (line 4): is not supported"},
		{"oauth2: {client_id: a, client_secret_file: " + tok + ", token_url: https://t/}", "http_sd_configs[0].oauth2 (line 3): is not supported by redis-prober"},
		{"authorization: {credentials_file: " + filepath.Join(dir, "missing") + "}", "http_sd_configs[0].authorization.credentials_file (line 3): cannot read"},
		{"bearer_token_file: " + filepath.Join(dir, "missing"), "http_sd_configs[0].bearer_token_file (line 3): cannot read"},
		{"basic_auth: {username: u, password_file: " + filepath.Join(dir, "missing") + "}", "http_sd_configs[0].basic_auth.password_file (line 3): cannot read"},
		{"basic_auth: {username: u, password_file: " + tok + "}\n    authorization: {credentials_file: " + tok + "}", "http_sd_configs[0] (line 2): at most one of basic_auth, oauth2 & authorization"},
		{"tls_config: {ca_file: " + tok + "}", "http_sd_configs[0].tls_config (line 3): unable to use specified CA cert"},
		{"basic_auth: {username: u, pasword_file: x}", `http_sd_configs[0].basic_auth: unknown field "pasword_file" (did you mean password_file?)`},
		{"authorisation: {credentials_file: x}", `http_sd_configs[0]: unknown field "authorisation" (did you mean authorization?)`},
	} {
		text := "http_sd_configs:\n  - url: https://sd.internal/redis\n    " + tc.fields + "\n"
		_, err := Parse([]byte(text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n err %v\nwant %q", tc.fields, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error is not one line without the secret: %v", tc.fields, err)
		}
	}
}

// tlsSD is an https httptest server that answers groups to requests its
// check lets through, and 401 to the others; caFile trusts its certificate.
func tlsSD(t *testing.T, body string, check func(*http.Request) bool) (srv *httptest.Server, caFile string) {
	t.Helper()
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !check(r) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, block, 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, caFile
}

// On loopback TLS: a bearer token read from its file (again on every
// fetch, so a rotated token applies), basic auth with a password_file; a
// refused credential is an error that names the URL and the status, not the
// secret.
func TestFetchHTTPSDAuthenticates(t *testing.T) {
	dir := t.TempDir()
	const good, wrong, pass = "good-token-1f3a", "wrong-token-9c2e", "pa55-word-77"
	tokFile := secretFile(t, dir, "token", good)
	passFile := secretFile(t, dir, "password", pass)
	body := `[{"targets": ["127.0.0.1:6379"]}]`
	srv, ca := tlsSD(t, body, func(r *http.Request) bool {
		if u, p, ok := r.BasicAuth(); ok {
			return u == "prober" && p == pass
		}
		return r.Header.Get("Authorization") == "Bearer "+good
	})
	parse := func(fields string) HTTPSD {
		t.Helper()
		f, err := Parse([]byte(fmt.Sprintf("http_sd_configs:\n  - url: %s/sd?k=q\n    tls_config: {ca_file: %s}\n    %s\n", srv.URL, ca, fields)))
		if err != nil {
			t.Fatal(err)
		}
		return f.HTTPSD[0]
	}
	fetch := func(sd HTTPSD) error {
		t.Helper()
		client, err := sd.Client()
		if err != nil {
			t.Fatal(err)
		}
		g, err := FetchHTTPSD(t.Context(), client, sd)
		if err == nil && (len(g) != 1 || g[0].Targets[0] != "127.0.0.1:6379") {
			t.Errorf("groups %+v", g)
		}
		return err
	}
	bearer := parse("authorization: {credentials_file: " + tokFile + "}")
	if err := fetch(bearer); err != nil {
		t.Errorf("bearer token from a file: %v", err)
	}
	if err := fetch(parse("basic_auth: {username: prober, password_file: " + passFile + "}")); err != nil {
		t.Errorf("basic auth with a password_file: %v", err)
	}
	if err := fetch(parse("follow_redirects: true")); err == nil || !strings.Contains(err.Error(), "HTTP status 401") {
		t.Errorf("no credentials: %v, want HTTP status 401", err)
	}
	secretFile(t, dir, "token", wrong) // rotated: the same client reads it again
	client, err := bearer.Client()
	if err != nil {
		t.Fatal(err)
	}
	_, err = FetchHTTPSD(t.Context(), client, bearer)
	if err == nil || err.Error() != srv.URL+"/sd: HTTP status 401" {
		t.Errorf("wrong token: %v, want %q", err, srv.URL+"/sd: HTTP status 401")
	}
	secretFile(t, dir, "token", good)
	if _, err := FetchHTTPSD(t.Context(), client, bearer); err != nil {
		t.Errorf("token put right, same client: %v", err)
	}
	// Without the CA the server's certificate is refused.
	f, err := Parse([]byte(fmt.Sprintf("http_sd_configs:\n  - url: %s/sd\n    authorization: {credentials_file: %s}\n", srv.URL, tokFile)))
	if err != nil {
		t.Fatal(err)
	}
	err = fetch(f.HTTPSD[0])
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("unknown CA: %v", err)
	}
	for _, s := range []string{good, wrong, pass} {
		if err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("an error shows a secret: %v", err)
		}
	}
}
