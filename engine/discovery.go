package engine

import (
	"cmp"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxNodes is how many nodes one Cluster or Sentinel target may expand
// into when DiscoveryOptions.MaxNodes is 0. Redis Cluster's own guidance
// stops at 1,000 nodes, so a real cluster fits; a server that names more is
// broken or hostile, and each node costs threads and connections.
const DefaultMaxNodes = 1000

// maxNodeAddr bounds a node address: a DNS name is at most 253 bytes, then a
// colon and five digits; a bracketed IPv6 address with a zone is shorter.
const maxNodeAddr = 253 + len(":65535")

// DiscoveryOptions bound what Cluster and Sentinel discovery may add to a
// target. Every node a server names gets the target's credentials, so an
// operator who cannot trust every server on the path can fence the nodes in.
type DiscoveryOptions struct {
	// MaxNodes is the most nodes probed per target (0: DefaultMaxNodes).
	// Primaries come first, then replicas, each in address order.
	MaxNodes int
	// AllowedNetworks and AllowedHostnames, when either is set, are the
	// only places a discovered node may be: an IP address must fall in one
	// of the networks, a host name must equal one of the suffixes or end in
	// "." + suffix. A host name is not resolved to match a network. Empty:
	// every valid address is allowed, as in every Cluster client.
	AllowedNetworks  []netip.Prefix
	AllowedHostnames []string
}

func (o DiscoveryOptions) maxNodes() int {
	if o.MaxNodes > 0 {
		return o.MaxNodes
	}
	return DefaultMaxNodes
}

// allows tells whether a valid node address is inside the allow-list.
func (o DiscoveryOptions) allows(host string, ip netip.Addr) bool {
	if len(o.AllowedNetworks) == 0 && len(o.AllowedHostnames) == 0 {
		return true
	}
	if ip.IsValid() {
		ip = ip.WithZone("").Unmap()
		for _, p := range o.AllowedNetworks {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, s := range o.AllowedHostnames {
		s = strings.ToLower(strings.Trim(s, "."))
		if s != "" && (h == s || strings.HasSuffix(h, "."+s)) {
			return true
		}
	}
	return false
}

// checkNodeAddr validates an address a server named before it becomes a
// label or a connection: host:port in its canonical form, at most maxNodeAddr bytes of printable
// ASCII (IDNs travel as punycode), a port from 1 to 65535, and a host that is
// an IP address (not 0.0.0.0, ::, or multicast) or a DNS name.
func checkNodeAddr(addr string) (host string, ip netip.Addr, err error) {
	switch {
	case len(addr) > maxNodeAddr:
		return "", ip, fmt.Errorf("longer than %d bytes", maxNodeAddr)
	case !utf8.ValidString(addr):
		return "", ip, fmt.Errorf("not valid UTF-8")
	}
	for i := 0; i < len(addr); i++ {
		if addr[i] <= ' ' || addr[i] >= 0x7f {
			return "", ip, fmt.Errorf("holds a space, control or non-ASCII character")
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || net.JoinHostPort(host, port) != addr {
		// Not canonical either ("[10.0.0.1]:7000"): one node, one label.
		return "", ip, fmt.Errorf("not host:port")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || port[0] < '0' || port[0] > '9' {
		return "", ip, fmt.Errorf("port %q is not from 1 to 65535", port)
	}
	if ip, err = netip.ParseAddr(host); err == nil {
		if ip.IsUnspecified() || ip.IsMulticast() {
			return "", netip.Addr{}, fmt.Errorf("%s is not a node's address", host)
		}
		return host, ip, nil
	}
	if strings.ContainsAny(host, ":%[]") || !validHostname(host) {
		return "", netip.Addr{}, fmt.Errorf("host is neither an IP address nor a DNS name")
	}
	return host, netip.Addr{}, nil
}

// validHostname accepts DNS names: dot-separated labels of 1 to 63 letters,
// digits, '-' or '_' (not at a label's ends for '-'), 253 bytes at most, one
// trailing dot allowed.
func validHostname(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// nodeOutcome is what discovery did with one node a server named.
type nodeOutcome int

const (
	nodeProbed     nodeOutcome = iota
	nodeOverLimit              // beyond MaxNodes
	nodeInvalid                // not a valid host:port, or named twice
	nodeNotAllowed             // outside AllowedNetworks / AllowedHostnames
	numNodeOutcomes
)

func (o nodeOutcome) String() string {
	return [...]string{"probed", "over_limit", "invalid", "not_allowed"}[o]
}

var discoveryNodesDesc = prometheus.NewDesc("redis_prober_discovery_nodes",
	"Nodes the last Cluster or Sentinel discovery of a target named, by what the prober did with them: "+
		"probed, or refused as over_limit (beyond the max nodes), invalid (not a valid host:port) or not_allowed (outside the allow-list).",
	[]string{"target", "outcome"}, nil)

// discoveryStats holds the outcome counts of a target's last discovery, for
// the engine's collector. They appear once the target has been found to be
// a Cluster or Sentinel target, every outcome from 0.
type discoveryStats struct {
	mu     sync.Mutex
	seen   bool
	counts [numNodeOutcomes]int
}

func (s *discoveryStats) set(counts [numNodeOutcomes]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen, s.counts = true, counts
}

func (s *discoveryStats) collect(ch chan<- prometheus.Metric, target string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen {
		return
	}
	for o := nodeOutcome(0); o < numNodeOutcomes; o++ {
		ch <- prometheus.MustNewConstMetric(discoveryNodesDesc, prometheus.GaugeValue, float64(s.counts[o]), target, o.String())
	}
}

// candidate is one node a server named, before the guard decides on it.
type candidate struct {
	addr    string
	replica bool
	ref     int // the discoverer's own index
}

// nodeGuard applies a target's DiscoveryOptions to every list of nodes its
// discovery returns, counts what it refused and logs each kind of refusal
// once per spell.
type nodeGuard struct {
	opts  DiscoveryOptions
	stats *discoveryStats
	log   *spellLog
}

func newNodeGuard(opts DiscoveryOptions, stats *discoveryStats, log *spellLog) *nodeGuard {
	if stats == nil {
		stats = &discoveryStats{}
	}
	return &nodeGuard{opts: opts, stats: stats, log: log}
}

// admit keeps the candidates that may be probed, primaries first and each
// kind in address order, at most MaxNodes of them.
func (g *nodeGuard) admit(cands []candidate) []candidate {
	var counts [numNodeOutcomes]int
	var first [numNodeOutcomes]string
	var why string
	refuse := func(o nodeOutcome, addr string) {
		if counts[o] == 0 {
			first[o] = addr
		}
		counts[o]++
	}
	seen := make(map[string]bool, len(cands))
	ok := make([]candidate, 0, min(len(cands), g.opts.maxNodes()))
	for _, c := range cands {
		host, ip, err := checkNodeAddr(c.addr)
		switch {
		case err != nil:
			if counts[nodeInvalid] == 0 {
				why = err.Error()
			}
			refuse(nodeInvalid, c.addr)
		case seen[c.addr]:
			if counts[nodeInvalid] == 0 {
				why = "named twice"
			}
			refuse(nodeInvalid, c.addr)
		case !g.opts.allows(host, ip):
			refuse(nodeNotAllowed, c.addr)
		default:
			seen[c.addr] = true
			ok = append(ok, c)
		}
	}
	slices.SortStableFunc(ok, func(a, b candidate) int {
		if a.replica != b.replica {
			if a.replica {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.addr, b.addr)
	})
	if limit := g.opts.maxNodes(); len(ok) > limit {
		counts[nodeOverLimit] = len(ok) - limit
		ok = ok[:limit]
	}
	counts[nodeProbed] = len(ok)
	g.stats.set(counts)

	named := len(cands)
	if counts[nodeInvalid] > 0 {
		g.log.warn("invalid", "discovery refused node addresses that are not a valid host:port; they are not probed",
			"refused", counts[nodeInvalid], "named", named, "example", clip(first[nodeInvalid]), "reason", why)
	}
	if counts[nodeNotAllowed] > 0 {
		g.log.warn("not_allowed", "discovery refused nodes outside the allowed networks and host names; they are not probed (and get no credentials)",
			"refused", counts[nodeNotAllowed], "named", named, "example", first[nodeNotAllowed])
	}
	if counts[nodeOverLimit] > 0 {
		g.log.warn("over_limit", "the server names more nodes than the most probed per target; the rest are not probed",
			"max_nodes", g.opts.maxNodes(), "over_limit", counts[nodeOverLimit], "named", named)
	}
	return ok
}

// clip bounds a string from a server before it goes into a log line or an
// error; the logger escapes what is not printable.
func clip(s string) string {
	const most = 80
	if len(s) <= most {
		return s
	}
	return s[:most] + "..."
}

// spellLog logs each distinct problem of a target once per spell: a problem
// seen again is silent until it has gone unseen for quiet, so a topology
// that keeps failing, or fails every other refresh, logs once and not per
// refresh. At most maxProblems distinct problems are remembered at a time;
// more in the same spell are counted, not logged.
type spellLog struct {
	log   *slog.Logger
	quiet time.Duration
	now   func() time.Time
	seen  map[string]time.Time
}

const (
	spellQuiet  = 10 * time.Minute
	maxProblems = 16
)

func newSpellLog(log *slog.Logger) *spellLog {
	return &spellLog{log: log, quiet: spellQuiet, now: time.Now, seen: map[string]time.Time{}}
}

// warn logs msg at warning level unless problem is in a spell already; it
// reports whether it logged.
func (s *spellLog) warn(problem, msg string, args ...any) bool {
	now := s.now()
	for k, last := range s.seen {
		if now.Sub(last) >= s.quiet {
			delete(s.seen, k)
		}
	}
	if _, ok := s.seen[problem]; ok {
		s.seen[problem] = now
		return false
	}
	if len(s.seen) >= maxProblems {
		return false
	}
	s.seen[problem] = now
	s.log.Warn(msg, args...)
	return true
}
