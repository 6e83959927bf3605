package exposition

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Registry is a client_golang registry that gathers a collector able to
// build its own families (a Targets and its Health, prober.Metrics: a
// prometheus.Collector that is also a
// prometheus.Gatherer, most often with a Builder) from that collector's
// Gather, and every other collector as the registry does. At 1,000
// targets the registry's checks and sort for each series were the longest
// part of a scrape (docs/performance.md, "The hand-written parts").
//
// Such a collector still registers its descriptors with the registry, so
// registration refuses the same conflicts as before; a family it shares
// with other collectors (redis_prober_collector_success with the host
// collectors) is merged into one, sorted as the registry sorts.
type Registry struct {
	reg *prometheus.Registry

	mu        sync.RWMutex
	gatherers map[prometheus.Collector]prometheus.Gatherer
}

var (
	_ prometheus.Registerer = (*Registry)(nil)
	_ prometheus.Gatherer   = (*Registry)(nil)
)

// familyCollector is a collector that gathers its own families.
type familyCollector interface {
	prometheus.Collector
	prometheus.Gatherer
}

// NewRegistry returns an empty registry over prometheus.NewRegistry.
func NewRegistry() *Registry {
	return &Registry{reg: prometheus.NewRegistry(), gatherers: map[prometheus.Collector]prometheus.Gatherer{}}
}

// hashable tells whether c can key the map of family collectors; one
// that cannot (a slice type) is gathered by the registry.
func hashable(c prometheus.Collector) bool { return reflect.TypeOf(c).Comparable() }

// describeOnly stands for a familyCollector in the registry: the same
// descriptors (so the same registration checks and identity), no series.
type describeOnly struct{ c prometheus.Collector }

func (d describeOnly) Describe(ch chan<- *prometheus.Desc) { d.c.Describe(ch) }
func (describeOnly) Collect(chan<- prometheus.Metric)      {}

// Register implements prometheus.Registerer.
func (r *Registry) Register(c prometheus.Collector) error {
	fc, ok := c.(familyCollector)
	if !ok || !hashable(c) {
		return r.reg.Register(c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.gatherers[c]; dup {
		return prometheus.AlreadyRegisteredError{ExistingCollector: c, NewCollector: c}
	}
	if err := r.reg.Register(describeOnly{c}); err != nil {
		return err
	}
	r.gatherers[c] = fc
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister implements prometheus.Registerer.
func (r *Registry) Unregister(c prometheus.Collector) bool {
	if _, ok := c.(familyCollector); !ok || !hashable(c) {
		return r.reg.Unregister(c)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.gatherers[c]; !ok {
		return false
	}
	delete(r.gatherers, c)
	// A collector without descriptors (Health) is unchecked: the registry
	// keeps its stand-in, which has no series.
	r.reg.Unregister(describeOnly{c})
	return true
}

// Gather implements prometheus.Gatherer: the registry's families and those
// of the family collectors, merged by name and sorted. As the registry's,
// it returns what it could gather beside an error.
func (r *Registry) Gather() ([]*dto.MetricFamily, error) {
	r.mu.RLock()
	gatherers := make([]prometheus.Gatherer, 0, len(r.gatherers))
	for _, g := range r.gatherers {
		gatherers = append(gatherers, g)
	}
	r.mu.RUnlock()
	// The family collectors gather beside the registry, which handles
	// its series on one goroutine: a scrape takes the longer of the two,
	// not their sum, when a core is free.
	type gathered struct {
		mfs []*dto.MetricFamily
		err error
	}
	results := make([]gathered, len(gatherers))
	var wg sync.WaitGroup
	for i, g := range gatherers {
		wg.Go(func() { results[i].mfs, results[i].err = g.Gather() })
	}
	var errs prometheus.MultiError
	mfs, err := r.reg.Gather()
	errs.Append(err)
	wg.Wait()
	if len(gatherers) == 0 {
		return mfs, errs.MaybeUnwrap()
	}
	byName := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	var merged []*dto.MetricFamily
	for _, res := range results {
		errs.Append(res.err)
		for _, mf := range res.mfs {
			have := byName[mf.GetName()]
			if have == nil {
				byName[mf.GetName()] = mf
				mfs = append(mfs, mf)
				continue
			}
			if have.GetType() != mf.GetType() || have.GetHelp() != mf.GetHelp() {
				errs.Append(fmt.Errorf("gathered family %s is a %s with help %q, and also a %s with help %q",
					mf.GetName(), have.GetType(), have.GetHelp(), mf.GetType(), mf.GetHelp()))
				continue
			}
			// Both slices are this Gather's own: no one else holds them.
			have.Metric = append(have.Metric, mf.Metric...)
			merged = append(merged, have)
		}
	}
	SortFamilies(mfs)
	for _, mf := range merged {
		Normalize(mf, &errs)
	}
	return mfs, errs.MaybeUnwrap()
}
