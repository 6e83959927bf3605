// Package config reads the YAML file that lists many targets: global
// defaults, then per-target overrides. Parsing is strict: unknown fields are
// refused and every error names the field and its line. Secrets are read from
// files named in the config, never written in it.
package config

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/relabel"
	"gopkg.in/yaml.v3"

	"github.com/redis-prober/redis-prober/internal/smallfile"
)

// Duration is a time.Duration written as "500ms", "10s", "15m".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration such as 10s", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration (examples: 500ms, 10s, 15m)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back in Go notation.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Probe holds probe settings; nil fields inherit from the level above.
type Probe struct {
	Rate            *float64  `yaml:"rate"`
	Timeout         *Duration `yaml:"timeout"`
	Commands        []string  `yaml:"commands"`
	Connections     *int      `yaml:"connections"`
	DataSize        *int      `yaml:"data_size"`
	KeyPrefix       *string   `yaml:"key_prefix"`
	KeyTTL          *Duration `yaml:"key_ttl"`
	ConnectInterval *Duration `yaml:"connect_interval"`
}

// TLS configures rediss:// connections.
type TLS struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// Cluster says the target is a Redis Cluster reached through seed nodes.
type Cluster struct {
	Addrs           []string  `yaml:"addrs"`
	Replicas        *bool     `yaml:"replicas"`
	RefreshInterval *Duration `yaml:"refresh_interval"`
}

// Sentinel says the target is the primary that Sentinels name.
type Sentinel struct {
	MasterName      string    `yaml:"master_name"`
	Addrs           []string  `yaml:"addrs"`
	Username        string    `yaml:"username"`
	PasswordFile    string    `yaml:"password_file"`
	ProbeReplicas   bool      `yaml:"probe_replicas"`
	RefreshInterval *Duration `yaml:"refresh_interval"`
}

// Discovery bounds the nodes a Cluster or Sentinel target expands into;
// nil fields inherit from the level above, a list replaces the inherited one.
type Discovery struct {
	MaxNodes         *int     `yaml:"max_nodes"`
	AllowedNetworks  []string `yaml:"allowed_networks"`
	AllowedHostnames []string `yaml:"allowed_hostnames"`
}

// MaxDiscoveryNodes is the highest max_nodes accepted: a Cluster has at most
// 16384 primaries with slots, and each node costs threads and connections.
const MaxDiscoveryNodes = 100000

// Over lays the set fields of d over base.
func (d Discovery) Over(base Discovery) Discovery {
	if d.MaxNodes != nil {
		base.MaxNodes = d.MaxNodes
	}
	if d.AllowedNetworks != nil {
		base.AllowedNetworks = d.AllowedNetworks
	}
	if d.AllowedHostnames != nil {
		base.AllowedHostnames = d.AllowedHostnames
	}
	return base
}

// Networks parses allowed_networks (validated by Parse).
func (d Discovery) Networks() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, n := range d.AllowedNetworks {
		p, err := netip.ParsePrefix(strings.TrimSpace(n))
		if err != nil {
			return nil, fmt.Errorf("%q is not a network in CIDR notation (10.0.0.0/8, fd00::/8)", n)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// hostSuffix is compiled when a discovery config first needs it: its
// {1,63} counts compile to a large program that stayed live in every
// prober, discovery or not (docs/performance.md, "Measured reasons").
var hostSuffix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\.?[A-Za-z0-9_-]{1,63}(\.[A-Za-z0-9_-]{1,63})*\.?$`)
})

func (d Discovery) validate(fail func(msg string, path ...any) error) error {
	if d.MaxNodes != nil && (*d.MaxNodes < 1 || *d.MaxNodes > MaxDiscoveryNodes) {
		return fail(fmt.Sprintf("must be from 1 to %d", MaxDiscoveryNodes), "max_nodes")
	}
	if _, err := d.Networks(); err != nil {
		return fail(err.Error(), "allowed_networks")
	}
	for _, h := range d.AllowedHostnames {
		if len(h) > 253 || !hostSuffix().MatchString(h) {
			return fail(fmt.Sprintf("%q is not a host name or domain suffix (such as .redis.internal)", h), "allowed_hostnames")
		}
	}
	return nil
}

// Global is the defaults block.
type Global struct {
	Probe     Probe     `yaml:"probe"`
	Objective *Duration `yaml:"objective"`
	Discovery Discovery `yaml:"discovery"`
	Labels    []string  `yaml:"-"`
}

// Target is one entry of targets:.
type Target struct {
	Name         string            `yaml:"name"`
	Addr         string            `yaml:"addr"`
	Cluster      *Cluster          `yaml:"cluster"`
	Sentinel     *Sentinel         `yaml:"sentinel"`
	Username     string            `yaml:"username"`
	PasswordFile string            `yaml:"password_file"`
	TLS          *TLS              `yaml:"tls"`
	Labels       map[string]string `yaml:"labels"`
	Probe        Probe             `yaml:"probe"`
	Objective    *Duration         `yaml:"objective"`
	Discovery    Discovery         `yaml:"discovery"`
}

// File is the whole config file.
type File struct {
	Global  Global   `yaml:"global"`
	Targets []Target `yaml:"targets"`
	// Target sources beside targets: (see sd.go), then relabelling and
	// sharding of every target (relabel.go).
	FileSD   []FileSD          `yaml:"file_sd_configs"`
	HTTPSD   []HTTPSD          `yaml:"http_sd_configs"`
	Relabel  []*relabel.Config `yaml:"relabel_configs"`
	Sharding *Sharding         `yaml:"sharding"`
	// BurstPlans are named loads for the bursts (burst.go).
	BurstPlans map[string]BurstPlan `yaml:"burst_plans"`
}

// Limits that keep a config from blowing up cardinality.
const (
	MaxLabels  = 8
	MaxTargets = 5000
)

var (
	labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	// Labels the prober sets itself cannot be overridden.
	reservedLabels = []string{"target", "node", "command", "phase", "result", "plan", "outcome", "quantile", "le", "kind", "check", "severity", "collector", "mode", "name", "instance", "job"}
)

// Error is a config error that names the field and its line.
type Error struct {
	Field string
	Line  int
	Msg   string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s (line %d): %s", e.Field, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Msg)
}

// Load reads and validates a config file.
func Load(path string) (*File, error) {
	b, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

func readConfig(path string) ([]byte, error) {
	b, err := smallfile.Read(path, smallfile.MaxConfig)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return b, nil
}

// Parse decodes and validates config text.
func Parse(b []byte) (*File, error) {
	f, root, err := decode(b)
	if err != nil {
		return nil, err
	}
	if err := f.validate(root); err != nil {
		return nil, err
	}
	return f, nil
}

// decode reads config text strictly (unknown fields refused) into a file
// and its node tree, which names the line of a later error.
func decode(b []byte) (*File, *yaml.Node, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	decodeErr := dec.Decode(&f)
	if errors.Is(decodeErr, io.EOF) {
		return nil, nil, &Error{Field: "config", Msg: "the file is empty"}
	}
	var te *yaml.TypeError
	if decodeErr != nil && !(errors.As(decodeErr, &te) && len(te.Errors) > 0) {
		return nil, nil, fmt.Errorf("config: %s", strings.TrimPrefix(decodeErr.Error(), "yaml: "))
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, nil, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if te != nil {
		// One line: the first problem is the one to fix first.
		first := strings.TrimSpace(te.Errors[0])
		if msg, ok := unknownField(&root, reflect.TypeFor[File](), first, fieldName); ok {
			first = msg
		}
		return nil, nil, fmt.Errorf("config: %s", first)
	}
	return &f, &root, nil
}

// failAt makes errors that name a field of the file under root and its line.
func failAt(root *yaml.Node) func(msg string, path ...any) error {
	return func(msg string, path ...any) error {
		return &Error{Field: fieldName(path), Line: lineOf(root, path...), Msg: msg}
	}
}

// Config builds the TLS client config, reading the files it names.
func (t *TLS) Config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := smallfile.Read(t.CAFile, smallfile.MaxPEM)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificate in it", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, fmt.Errorf("cert_file and key_file go together")
	}
	if t.CertFile != "" {
		certPEM, err := smallfile.Read(t.CertFile, smallfile.MaxPEM)
		if err != nil {
			return nil, fmt.Errorf("cert_file: %w", err)
		}
		keyPEM, err := smallfile.Read(t.KeyFile, smallfile.MaxPEM)
		if err != nil {
			return nil, fmt.Errorf("key_file: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("cert_file/key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// ReadSecret returns the first line of a password file (without its line
// end). The file must be a regular file of at most smallfile.MaxSecret
// bytes; errors name the file, never its content.
func ReadSecret(path string) (string, error) {
	b, err := smallfile.Read(path, smallfile.MaxSecret)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimRight(line, "\r"), nil
}

// fieldName renders a path such as targets[2].probe.rate.
func fieldName(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch v := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		}
	}
	return b.String()
}

// lineOf finds the line of the deepest node of path that exists.
func lineOf(root *yaml.Node, path ...any) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		var next *yaml.Node
		switch v := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == v {
						line = n.Content[i].Line
						next = n.Content[i+1]
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && v < len(n.Content) {
				next = n.Content[v]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}
