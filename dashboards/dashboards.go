// Package dashboards holds the Grafana dashboards of redis-prober as Go code
// (grafana-foundation-sdk). The generated JSON is committed beside it;
// `make dashboards` (go run ./dashboards/cmd/generate) rewrites it and a test
// fails when the committed files are stale.
//
// Latency quantiles read the native histogram and fall back to the classic
// _bucket series with `or`, so the same dashboard works on a Prometheus that
// stores only one of them. Native-histogram panels need Grafana 11.1 or later.
package dashboards

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Spec is one dashboard and the file name its JSON is committed under.
type Spec struct {
	File  string
	Build func() (dashboard.Dashboard, error)
}

// All lists every dashboard, in a fixed order.
func All() []Spec {
	return []Spec{
		{File: "redis-latency.json", Build: Latency},
		{File: "redis-tail-latency-causes.json", Build: Causes},
	}
}

// Render builds the dashboard of s and returns its JSON the way it is
// committed: indented, with a final newline.
func Render(s Spec) ([]byte, error) {
	d, err := s.Build()
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", s.File, err)
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", s.File, err)
	}
	return append(b, '\n'), nil
}
