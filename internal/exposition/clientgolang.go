package exposition

// What this package relies on in client_golang (prometheus, promhttp),
// client_model (dto) and common/expfmt, as of client_golang v1.25.0,
// client_model v0.6.3, common v0.74.0. Each hand-written part gives what
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
// Encoding (ProtoEncoder):
//
//  8. expfmt's protobuf encoder (TypeProtoDelim) writes a family as
//     protodelim.MarshalTo does (its length as a varint, then the
//     message, fields in field-number order, repeated scalars unpacked as
//     proto2 has them, proto3 zeros of a Timestamp left out), after
//     model.EscapeMetricFamily with the negotiated escaping scheme
//     (names and label names, the __name__ value; exemplars as they are).
//     TestProtoEncoderAsExpfmt, byte for byte under every scheme.
//  9. client_model's messages have exactly the fields the encoder writes:
//     native histogram spans, deltas and float counts, exemplars (one on
//     a counter or bucket, many on a histogram), created timestamps,
//     a family's unit. A field added by an upgrade would be left out
//     silently. TestClientGolang/client_model_fields.
//
// Serving (Handler):
//
//  10. promhttp.HandlerFor negotiates the format with
//     expfmt.NegotiateAccept over DefaultAcceptedFormats (or
//     DefaultOpenMetricsAcceptedFormats with EnableOpenMetrics), answers
//     with that Content-Type, Vary: Accept and Accept-Encoding, and
//     honours name[] in the query. TestMetricsHandlerAsPromhttp.
//  11. What Prometheus 2 and 3 send picks the delimited protobuf format,
//     escaped with underscores for Prometheus 2 and not at all for
//     Prometheus 3's escaping=allow-utf-8. TestClientGolang/negotiation.
//  12. promhttp offers identity and gzip, not zstd (offered only when
//     promhttp/zstd is linked in, which the prober does not import), and
//     picks among them as negotiateEncoding does.
//     TestClientGolang/compressions, TestMetricsHandlerAsPromhttp.
//  13. promhttp streams its response family by family unless
//     HandlerOpts.Timeout is set; with it, http.TimeoutHandler holds the
//     whole body and writes it once. TestClientGolang/streaming,
//     TestMetricsHandlerStreams.
//  14. promhttp's answers to a timeout, to the limit of requests in flight
//     and to a gathering that failed, and its log lines, are the texts
//     below. TestMetricsHandlerTimeout, TestMetricsHandlerLimit.
//  15. HandlerOpts has the fields Handler knows; a new one may change
//     what promhttp serves in a way the streaming path does not follow.
//     TestClientGolang/handler_options.
const (
	// timeoutMessageFormat is promhttp's http.TimeoutHandler message.
	timeoutMessageFormat = "Exceeded configured timeout of %v.\n"
	// limitMessageFormat answers a request over MaxRequestsInFlight.
	limitMessageFormat = "Limit of concurrent requests reached (%d), try again later."
	// gatherErrorBody starts the 500 of a gathering that failed with
	// nothing gathered.
	gatherErrorBody = "An error has occurred while serving metrics:\n\n"
	// The log lines of ContinueOnError.
	gatherErrorLog = "error gathering metrics:"
	encodeErrorLog = "error encoding and sending metric family:"
	// duplicateMessage is the registry's error for a series collected
	// twice, after the family name and the series.
	duplicateMessage = "was collected before with the same name and label values"
)
