package exposition

// What this package relies on in client_golang (prometheus, promhttp)
// and client_model (dto), as of client_golang v1.25.0
// and client_model v0.6.3. Each hand-written part gives what
// the library gives, so each depends on the library doing exactly this;
// after an upgrade, `go test ./internal/exposition/... ./collector
// ./prober` says which of these changed (the test named after each).
//
// Gathering (Registry, Builder, Order, collector's gathering):
//
//  1. prometheus.Registry.Gather sorts families by name and a family's
//     metrics as CompareMetrics does: by label count, then label values
//     in the order of the pairs (sorted by name), then timestamp, none
//     last. TestBuilderGathersAsTheRegistry, TestOrderFollowsTheSeries,
//     collector's TestTargetsGatherAsTheRegistry and
//     TestRegistryGathersAsTheRegistry, prober's
//     TestMetricsGatherAsTheRegistry.
//  2. It leaves out a family without series, drops a series collected
//     twice with the error "... was collected before with the same name
//     and label values" (duplicateMessage), and returns what it gathered
//     beside a prometheus.MultiError. TestBuilderRefusesADuplicate,
//     TestBuilderLeavesOutAnEmptyFamily, TestRegistryConflicts.
//  3. Metric.Write fills a dto.Metric whose label pairs are sorted by
//     name and whose one type field (Gauge, Counter, Histogram, Summary,
//     Untyped) tells its family's type (metricType). The tests of 1.
//  4. Counters, histograms and summaries write when they started as their
//     CreatedTimestamp (const ones too, from
//     NewConstMetricWithCreatedTimestamp); collector's gathering writes
//     the same field for its counters. TestClientGolang/created, and
//     the tests of 1.
//  5. A vector hands out the same child, the same prometheus.Metric, at
//     every Collect while the child lives: Order ranks series by that
//     identity. Were it not so, every Gather would sort afresh (the same
//     output, slower). TestClientGolang/vector_children.
//  6. Registration is by descriptors: a stand-in with a collector's
//     descriptors (describeOnly) registers and unregisters as that
//     collector would, refusing the same conflicts. TestRegistryRegister.
//  7. Each Gather returns families of its own, which Registry may append
//     to when it merges a family shared with a family collector.
//     TestClientGolang/fresh_families.
//
// Serving (promhttp, chosen over a hand-written handler and encoder: see
// docs/performance.md, "The exposition package, part by part"):
//
//  8. promhttp streams its response family by family unless
//     HandlerOpts.Timeout is set; with it, http.TimeoutHandler holds the
//     whole body (5-7 MB at 1,000 targets, grown by doubling) and writes
//     it once. cmd/redis-prober sets no Timeout, as node_exporter does: a
//     gathering never calls Redis, and the server's write timeout bounds
//     the sending. TestClientGolang/streaming.

// duplicateMessage is the registry's error for a series collected twice,
// after the family name and the series.
const duplicateMessage = "was collected before with the same name and label values"
