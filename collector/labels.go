package collector

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redis-prober/redis-prober/internal/safetext"
)

// MaxLabelValueLen bounds, in bytes, every label value that comes from a
// Redis reply (LATENCY LATEST event names, LATENCY HISTOGRAM command names,
// the version and role of INFO). Real values are short: the longest event
// class is "module-acquire-GIL" (18 bytes), the longest command with its
// subcommand about 40, and a version string a dozen; 128 leaves room for
// module commands and forks while keeping a hostile 1 MB name out of every
// scrape and every TSDB index.
const MaxLabelValueLen = 128

// LabelValue makes a value from Redis safe to use as a label value: bytes
// that are not valid UTF-8, control characters and other non-printable
// runes each become U+FFFD, and the result is cut to MaxLabelValueLen bytes
// on a rune boundary. client_golang refuses (MustNewConstMetric: panics on)
// invalid UTF-8, and control characters in a label break dashboards and
// terminals. A value that is already clean comes back unchanged without an
// allocation. This is the one sanitiser every collector (and the engine's
// server_info) uses.
func LabelValue(s string) string { return safetext.Label(s, MaxLabelValueLen) }

// constMetric sends a const metric, or nothing when client_golang refuses
// it (a label value that is not valid UTF-8, a wrong label count). The
// labels from Redis went through LabelValue already; this is the guard
// behind it, because MustNewConstMetric's panic costs the whole target's
// scrape and a stack trace at error level on every scrape.
func constMetric(ch chan<- prometheus.Metric, desc *prometheus.Desc, vt prometheus.ValueType, v float64, labels ...string) bool {
	m, err := prometheus.NewConstMetric(desc, vt, v, labels...)
	if err != nil {
		return false
	}
	ch <- m
	return true
}
