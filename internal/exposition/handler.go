package exposition

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Handler is the /metrics endpoint: it serves the families of g as
// promhttp.HandlerFor(g, opts) does, with two differences inside. The protobuf format Prometheus asks
// for is encoded by ProtoEncoder, the same bytes as expfmt's
// encoder for less CPU (docs/performance.md, "The hand-written parts"). And every format is
// streamed, family by family, as it is encoded: promhttp's timeout
// (http.TimeoutHandler) holds a whole response in a buffer grown by
// doubling, twice over in garbage while it grows, which at 1,000 targets
// was the prober's highest memory peak. The
// timeout bounds the gathering, which is what can hang; the server's
// write timeout bounds the sending. Any request or option this path does
// not handle exactly as promhttp does goes to promhttp. The limit of
// requests in flight is shared by both paths.
func Handler(g prometheus.Gatherer, opts promhttp.HandlerOpts) http.Handler {
	p := &streamHandler{g: g, log: opts.ErrorLog, limit: opts.MaxRequestsInFlight, timeout: opts.Timeout,
		created:  opts.EnableOpenMetricsTextCreatedSamples,
		accepted: expfmt.DefaultAcceptedFormats(),
		// As promhttp: identity and gzip are offered when compression is
		// not disabled and no other set is chosen.
		takeOver: opts.ErrorHandling == promhttp.ContinueOnError && !opts.DisableCompression &&
			len(opts.OfferedCompressions) == 0 && len(opts.AcceptedFormats) == 0 &&
			opts.ProcessStartTime.IsZero() && !opts.CoalesceGather && opts.Registry == nil,
		gzip: sync.Pool{New: func() any { return gzip.NewWriter(nil) }},
		// An encoder keeps the buffer of the largest family (a MB or two
		// at 1,000 targets) from one scrape to the next.
		encoders: sync.Pool{New: func() any { return NewProtoEncoder(nil, model.UnderscoreEscaping) }},
	}
	if opts.EnableOpenMetrics {
		p.accepted = expfmt.DefaultOpenMetricsAcceptedFormats()
	}
	if p.limit > 0 {
		p.inFlight = make(chan struct{}, p.limit)
	}
	opts.MaxRequestsInFlight, opts.Timeout = 0, 0
	// As in promhttp, the limit is taken inside the timeout.
	p.other = limited{p, promhttp.HandlerFor(g, opts)}
	if p.timeout > 0 {
		p.other = http.TimeoutHandler(p.other, p.timeout, p.timeoutMessage())
	}
	return p
}

type streamHandler struct {
	g        prometheus.Gatherer
	other    http.Handler // promhttp's, for the requests and options not taken over
	log      promhttp.Logger
	limit    int
	inFlight chan struct{}
	timeout  time.Duration
	created  bool // OpenMetrics _created lines, as promhttp's option
	accepted []expfmt.Format
	takeOver bool
	gzip     sync.Pool
	encoders sync.Pool
}

func (p *streamHandler) timeoutMessage() string {
	return fmt.Sprintf(timeoutMessageFormat, p.timeout)
}

// acquire takes a place among the requests in flight, or answers 503.
func (p *streamHandler) acquire(rsp http.ResponseWriter) bool {
	if p.inFlight == nil {
		return true
	}
	select {
	case p.inFlight <- struct{}{}:
		return true
	default:
		http.Error(rsp, fmt.Sprintf(limitMessageFormat, p.limit),
			http.StatusServiceUnavailable)
		return false
	}
}

func (p *streamHandler) release() {
	if p.inFlight != nil {
		<-p.inFlight
	}
}

// limited is promhttp's handler behind the shared limit.
type limited struct {
	p *streamHandler
	h http.Handler
}

func (l limited) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	if !l.p.acquire(rsp) {
		return
	}
	defer l.p.release()
	l.h.ServeHTTP(rsp, req)
}

// gather gathers within the timeout. On a timeout it answers 503 as
// http.TimeoutHandler does and returns ok false; the place in flight is
// given back when the gathering ends, as promhttp's is.
func (p *streamHandler) gather(rsp http.ResponseWriter) (mfs []*dto.MetricFamily, ok bool, err error) {
	if p.timeout <= 0 {
		mfs, err = p.g.Gather()
		return mfs, true, err
	}
	type gathered struct {
		mfs []*dto.MetricFamily
		err error
	}
	done := make(chan gathered, 1)
	go func() {
		mfs, err := p.g.Gather()
		done <- gathered{mfs, err}
	}()
	t := time.NewTimer(p.timeout)
	defer t.Stop()
	select {
	case g := <-done:
		return g.mfs, true, g.err
	case <-t.C:
		go func() {
			<-done
			p.release()
		}()
		rsp.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(rsp, p.timeoutMessage())
		return nil, false, nil
	}
}

func (p *streamHandler) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	format := expfmt.NegotiateAccept(req.Header, p.accepted...)
	encoding, ok := negotiateEncoding(req.Header.Values("Accept-Encoding"))
	if !p.takeOver || !ok {
		p.other.ServeHTTP(rsp, req)
		return
	}
	if !p.acquire(rsp) {
		return
	}
	mfs, ok, err := p.gather(rsp)
	if !ok {
		return
	}
	defer p.release()
	if err != nil {
		p.logf(gatherErrorLog, err)
		if len(mfs) == 0 {
			rsp.Header().Del("Content-Encoding")
			http.Error(rsp, gatherErrorBody+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	rsp.Header().Add("Vary", "Accept")
	rsp.Header().Add("Vary", "Accept-Encoding")
	rsp.Header().Set("Content-Type", string(format))
	var w io.Writer = rsp
	if encoding == "gzip" {
		gz := p.gzip.Get().(*gzip.Writer)
		gz.Reset(rsp)
		defer func() { _ = gz.Close(); p.gzip.Put(gz) }()
		rsp.Header().Set("Content-Encoding", "gzip")
		w = gz
	}
	var only map[string]bool
	if req.URL != nil {
		if names := req.URL.Query()["name[]"]; len(names) > 0 {
			only = map[string]bool{}
			for _, n := range names {
				only[n] = true
			}
		}
	}
	enc, done := p.encoder(w, format)
	defer done()
	for _, mf := range mfs {
		if only != nil && !only[mf.GetName()] {
			continue
		}
		if err := enc.Encode(mf); err != nil {
			// As promhttp's ContinueOnError: logged, and on.
			p.logf(encodeErrorLog, err)
		}
	}
	if closer, ok := enc.(expfmt.Closer); ok {
		// OpenMetrics' final "# EOF".
		if err := closer.Close(); err != nil {
			p.logf(encodeErrorLog, err)
		}
	}
}

// encoder is the encoder of format onto w, and what to call when it is
// done with: the protobuf one is the prober's own (pooled, with its
// buffer), the text ones expfmt's, as promhttp makes them.
func (p *streamHandler) encoder(w io.Writer, format expfmt.Format) (expfmt.Encoder, func()) {
	if format.FormatType() != expfmt.TypeProtoDelim {
		var opts []expfmt.EncoderOption
		if p.created {
			opts = append(opts, expfmt.WithCreatedLines())
		}
		return expfmt.NewEncoder(w, format, opts...), func() {}
	}
	enc := p.encoders.Get().(*ProtoEncoder)
	enc.Reset(w, format.ToEscapingScheme())
	return enc, func() { enc.Reset(nil, model.UnderscoreEscaping); p.encoders.Put(enc) }
}

func (p *streamHandler) logf(msg string, err error) {
	if p.log != nil {
		p.log.Println(msg, err)
	}
}

// negotiateEncoding picks identity or gzip from Accept-Encoding values as
// promhttp does (the offer with the highest q, identity first on a tie,
// identity when nothing matches, none when the best q is 0); ok is false
// when a value is not a plain list of codings with optional q, or nothing
// is acceptable, and promhttp should decide.
func negotiateEncoding(values []string) (encoding string, ok bool) {
	type spec struct {
		coding string
		q      float64
	}
	var specs []spec
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.TrimSpace(coding)
			if !plainToken(coding) {
				return "", false
			}
			q := 1.0
			if params = strings.TrimSpace(params); params != "" {
				val, found := strings.CutPrefix(params, "q=")
				f, err := strconv.ParseFloat(val, 64)
				if !found || !plainQuality(val) || err != nil || f > 1 {
					return "", false
				}
				q = f
			}
			specs = append(specs, spec{coding, q})
		}
	}
	best, bestQ := "identity", -1.0
	for _, offer := range []string{"identity", "gzip"} {
		for _, s := range specs {
			if s.q > bestQ && (s.coding == "*" || s.coding == offer) {
				best, bestQ = offer, s.q
			}
		}
	}
	if bestQ == 0 {
		return "", false
	}
	return best, true
}

// plainQuality: 0 or 1, a dot and digits optional; promhttp's parser
// reads other forms differently.
func plainQuality(s string) bool {
	if s == "" || (s[0] != '0' && s[0] != '1') {
		return false
	}
	rest, dot := strings.CutPrefix(s[1:], ".")
	if !dot && rest != "" {
		return false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// plainToken: a lower-case coding or *; promhttp compares codings as
// they are written, so anything else goes to it.
func plainToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '*' {
			return false
		}
	}
	return true
}
