package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	promconfig "github.com/prometheus/common/config"
	"gopkg.in/yaml.v3"

	"github.com/redis-prober/redis-prober/internal/smallfile"
)

// Target sources beside the static list: Prometheus service-discovery files
// (file_sd) and URLs (http_sd) in Prometheus's own format, a list of
// {targets: [...], labels: {...}} groups. Each discovered address becomes a
// target with the settings of the source's `target:` block.

// TargetTemplate holds the settings every target of a source gets, the
// fields a static target has besides its name, address and labels.
type TargetTemplate struct {
	Username     string    `yaml:"username"`
	PasswordFile string    `yaml:"password_file"`
	TLS          *TLS      `yaml:"tls"`
	Probe        Probe     `yaml:"probe"`
	Objective    *Duration `yaml:"objective"`
	Discovery    Discovery `yaml:"discovery"`
}

// FileSD reads targets from files, read again every refresh_interval.
type FileSD struct {
	Files           []string       `yaml:"files"`
	RefreshInterval *Duration      `yaml:"refresh_interval"`
	Target          TargetTemplate `yaml:"target"`
}

// HTTPSD reads targets from a URL, fetched every refresh_interval.
type HTTPSD struct {
	URL             string         `yaml:"url"`
	RefreshInterval *Duration      `yaml:"refresh_interval"`
	Timeout         *Duration      `yaml:"timeout"`
	Target          TargetTemplate `yaml:"target"`
	// HTTPClientConfig is how the URL is fetched: authentication, TLS,
	// proxy, inline as in Prometheus (sd_http.go).
	HTTPClientConfig promconfig.HTTPClientConfig `yaml:",inline"`
}

// Sharding keeps the share of the targets that is this prober's: the
// targets whose hashmod of source_labels (Prometheus's relabel action, an
// MD5 of the joined values) is index.
type Sharding struct {
	Shards       int      `yaml:"shards"`
	Index        *int     `yaml:"index"`
	SourceLabels []string `yaml:"source_labels"`
}

// Defaults and bounds of the sources.
const (
	DefaultFileSDRefresh = 30 * time.Second
	DefaultHTTPSDRefresh = time.Minute
	DefaultHTTPSDTimeout = 10 * time.Second
	// MinRefresh bounds how often a source is read.
	MinRefresh = 100 * time.Millisecond
	// MaxSDBody bounds one file_sd file or one http_sd answer.
	MaxSDBody = smallfile.MaxConfig
	// MaxShards bounds sharding.shards.
	MaxShards = 1000
	// maxGroupLabels bounds the labels of one group (meta labels included;
	// at most MaxLabels of them become target labels).
	maxGroupLabels = 64
	maxLabelValue  = 1024
)

// Refresh is the file_sd refresh interval, with its default.
func (s FileSD) Refresh() time.Duration { return durationOr(s.RefreshInterval, DefaultFileSDRefresh) }

// Refresh is the http_sd refresh interval, with its default.
func (s HTTPSD) Refresh() time.Duration { return durationOr(s.RefreshInterval, DefaultHTTPSDRefresh) }

// FetchTimeout is the http_sd request timeout, with its default.
func (s HTTPSD) FetchTimeout() time.Duration { return durationOr(s.Timeout, DefaultHTTPSDTimeout) }

func durationOr(d *Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}

// Group is one entry of a service-discovery file: addresses and the labels
// they share.
type Group struct {
	Targets []string          `yaml:"targets" json:"targets"`
	Labels  map[string]string `yaml:"labels" json:"labels"`
	// Source names where the group came from (the file, the URL) for
	// errors and the __meta_filepath / __meta_url label.
	Source string `yaml:"-" json:"-"`
}

// ParseGroups decodes a service-discovery document: JSON (as http_sd and
// .json files hold) or YAML (.yml, .yaml). Unknown fields are refused and
// every group is checked: addresses non-empty, label names valid, values
// bounded UTF-8. A group without addresses is allowed, as in Prometheus.
func ParseGroups(b []byte, asJSON bool) ([]Group, error) {
	var groups []Group
	if asJSON {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&groups); err != nil {
			return nil, fmt.Errorf("not a JSON list of {targets, labels} groups: %v", err)
		}
		if dec.More() {
			return nil, errors.New("data after the JSON list")
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&groups); err != nil && !errors.Is(err, io.EOF) {
			var te *yaml.TypeError
			if errors.As(err, &te) && len(te.Errors) > 0 {
				first := strings.TrimSpace(te.Errors[0])
				var root yaml.Node
				if yaml.Unmarshal(b, &root) == nil {
					if msg, ok := unknownField(&root, reflect.TypeFor[[]Group](), first, groupPath); ok {
						first = msg
					}
				}
				return nil, errors.New(first)
			}
			return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	n := 0
	for i, g := range groups {
		n += len(g.Targets)
		if n > MaxTargets {
			return nil, fmt.Errorf("more than %d targets", MaxTargets)
		}
		for _, t := range g.Targets {
			if strings.TrimSpace(t) == "" || len(t) > 1024 || !utf8.ValidString(t) {
				return nil, fmt.Errorf("group %d: %q is not an address", i, t)
			}
		}
		if len(g.Labels) > maxGroupLabels {
			return nil, fmt.Errorf("group %d: %d labels, at most %d", i, len(g.Labels), maxGroupLabels)
		}
		for k, v := range g.Labels {
			if !labelName.MatchString(k) {
				return nil, fmt.Errorf("group %d: %q is not a valid label name", i, k)
			}
			if len(v) > maxLabelValue || !utf8.ValidString(v) {
				return nil, fmt.Errorf("group %d: label %s: the value is not UTF-8 text of at most %d bytes", i, k, maxLabelValue)
			}
		}
	}
	return groups, nil
}

// groupPath names a place in a service-discovery document as the other
// errors of ParseGroups do: "group 2", then the path within it.
func groupPath(path []any) string {
	if len(path) == 0 {
		return ""
	}
	i, ok := path[0].(int)
	if !ok {
		return fieldName(path)
	}
	return strings.TrimSuffix(fmt.Sprintf("group %d.%s", i, fieldName(path[1:])), ".")
}

// ReadFileSD reads every file the patterns of s match, in name order. An
// error names the file. A pattern that matches nothing is no error (the
// file may come later, as with Prometheus).
func ReadFileSD(s FileSD) ([]Group, error) {
	var out []Group
	seen := map[string]bool{}
	for _, pat := range s.Files {
		paths, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", pat, err)
		}
		slices.Sort(paths)
		for _, p := range paths {
			if seen[p] {
				continue
			}
			seen[p] = true
			b, err := smallfile.Read(p, MaxSDBody)
			if err != nil {
				return nil, err // smallfile names the file
			}
			groups, err := ParseGroups(b, strings.EqualFold(filepath.Ext(p), ".json"))
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p, err)
			}
			for i := range groups {
				groups[i].Source = p
			}
			out = append(out, groups...)
		}
	}
	return out, nil
}

// FetchHTTPSD reads the groups s.URL answers, within its timeout and
// MaxSDBody. Errors name the URL without its query or credentials.
func FetchHTTPSD(ctx context.Context, client *http.Client, s HTTPSD) ([]Group, error) {
	name := RedactURL(s.URL)
	ctx, cancel := context.WithTimeout(ctx, s.FetchTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: bad URL", name)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Prometheus-Refresh-Interval-Seconds", fmt.Sprint(s.Refresh().Seconds()))
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL
		}
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP status %d", name, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
			return nil, fmt.Errorf("%s: content type %q, want application/json", name, mt)
		}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxSDBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(b) > MaxSDBody {
		return nil, fmt.Errorf("%s: the answer is larger than %d bytes", name, MaxSDBody)
	}
	groups, err := ParseGroups(b, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	for i := range groups {
		groups[i].Source = s.URL
	}
	return groups, nil
}

// RedactURL is a URL fit for a log line: scheme, host and path only.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

func (s *FileSD) validate(fail func(msg string, path ...any) error) error {
	if len(s.Files) == 0 {
		return fail("needs at least one file or pattern", "files")
	}
	for _, p := range s.Files {
		if _, err := filepath.Match(p, ""); err != nil || p == "" {
			return fail(fmt.Sprintf("%q is not a file name or pattern", p), "files")
		}
	}
	if s.RefreshInterval != nil && time.Duration(*s.RefreshInterval) < MinRefresh {
		return fail(fmt.Sprintf("must be at least %v", MinRefresh), "refresh_interval")
	}
	return s.Target.validate(func(msg string, p ...any) error { return fail(msg, append([]any{"target"}, p...)...) })
}

func (s *HTTPSD) validate(fail func(msg string, path ...any) error) error {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail("must be an http:// or https:// URL", "url")
	}
	if u.User != nil {
		return fail("must not hold credentials: give basic_auth with a password_file", "url")
	}
	if s.RefreshInterval != nil && time.Duration(*s.RefreshInterval) < MinRefresh {
		return fail(fmt.Sprintf("must be at least %v", MinRefresh), "refresh_interval")
	}
	if s.Timeout != nil && *s.Timeout <= 0 {
		return fail("must be above 0", "timeout")
	}
	if err := s.validateHTTPClient(fail); err != nil {
		return err
	}
	return s.Target.validate(func(msg string, p ...any) error { return fail(msg, append([]any{"target"}, p...)...) })
}

func (t *TargetTemplate) validate(fail func(msg string, path ...any) error) error {
	if err := t.Probe.validate(func(msg string, p ...any) error { return fail(msg, append([]any{"probe"}, p...)...) }); err != nil {
		return err
	}
	if t.Objective != nil && *t.Objective <= 0 {
		return fail("must be above 0", "objective")
	}
	if err := t.Discovery.validate(func(msg string, p ...any) error { return fail(msg, append([]any{"discovery"}, p...)...) }); err != nil {
		return err
	}
	if t.PasswordFile != "" {
		if _, err := ReadSecret(t.PasswordFile); err != nil {
			return fail(fmt.Sprintf("cannot read: %v", err), "password_file")
		}
	}
	if t.TLS != nil {
		if _, err := t.TLS.Config(); err != nil {
			return fail(err.Error(), "tls")
		}
	}
	return nil
}

func (s *Sharding) validate(fail func(msg string, path ...any) error) error {
	if s.Shards < 1 || s.Shards > MaxShards {
		return fail(fmt.Sprintf("must be from 1 to %d", MaxShards), "shards")
	}
	if s.Index != nil && (*s.Index < 0 || *s.Index >= s.Shards) {
		return fail(fmt.Sprintf("must be from 0 to shards-1 (%d)", s.Shards-1), "index")
	}
	for _, l := range s.SourceLabels {
		if !labelName.MatchString(l) {
			return fail(fmt.Sprintf("%q is not a valid label name", l), "source_labels")
		}
	}
	return nil
}
