package burst

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis-prober/redis-prober/prober"
)

// Plan is one bounded load. Every burst is bounded by all of: duration
// (Warmup + TestTime), requests (when Requests > 0), rate (when Rate > 0),
// connections (Clients) and bytes written (MaxBytes).
type Plan struct {
	Name     string
	Clients  int
	Pipeline int
	Mix      []MixEntry
	Keys     KeySpec
	DataSize int           // bytes of each value written
	DataMax  int           // > DataSize: sizes drawn uniformly from DataSize..DataMax
	Rate     float64       // total ops/s over all clients; 0 means as fast as the server answers
	TestTime time.Duration // measured length
	Requests int64         // total measured requests over all clients; 0 means bounded by time only
	Warmup   time.Duration // sent but not counted, before TestTime
	MaxBytes int64         // bytes of keys and values the burst may write
	Timeout  time.Duration // per request
	KeyTTL   time.Duration // TTL of every key written
	// Namespace holds the prefix every burst key starts with.
	Namespace prober.Namespace
}

// MixEntry is one command of a burst and its weight.
type MixEntry struct {
	Op     string `json:"command"`
	Weight int    `json:"weight"`
}

// Limits are the hard ceilings a plan is validated against; the run
// mode's are modest, the one-shot CLI's are a benchmark's.
type Limits struct {
	MaxClients  int
	MaxPipeline int
	MaxRate     float64 // 0: an unlimited rate is allowed
	MaxTestTime time.Duration
	MaxBytes    int64
	MaxDataSize int
}

// CLILimits bound the one-shot `burst` command.
var CLILimits = Limits{MaxClients: 1000, MaxPipeline: 1000, MaxTestTime: time.Hour, MaxBytes: 8 << 30, MaxDataSize: 64 << 20}

// RunLimits bound periodic bursts in run mode, which must never need
// babysitting on a production server.
var RunLimits = Limits{MaxClients: 64, MaxPipeline: 64, MaxRate: 100000, MaxTestTime: 10 * time.Minute, MaxBytes: 1 << 30, MaxDataSize: 1 << 20}

// ParseRatio reads memtier's SET:GET ratio ("1:10") into a mix.
func ParseRatio(s string) ([]MixEntry, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return nil, fmt.Errorf("%q is not SET:GET (for example 1:10)", s)
	}
	set, err1 := strconv.Atoi(strings.TrimSpace(a))
	get, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || set < 0 || get < 0 || set+get == 0 {
		return nil, fmt.Errorf("%q: SET and GET must be whole numbers, not both 0", s)
	}
	var mix []MixEntry
	if set > 0 {
		mix = append(mix, MixEntry{Op: "set", Weight: set})
	}
	if get > 0 {
		mix = append(mix, MixEntry{Op: "get", Weight: get})
	}
	return mix, nil
}

// ParseMix reads a weighted command list: "get:10,set:1,hgetall" (weight 1
// when left out).
func ParseMix(s string) ([]MixEntry, error) {
	var mix []MixEntry
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, hasW := strings.Cut(part, ":")
		name = strings.ToLower(strings.TrimSpace(name))
		weight := 1
		if hasW {
			n, err := strconv.Atoi(strings.TrimSpace(w))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%q: weight must be a whole number of at least 1", part)
			}
			weight = n
		}
		if burstOpIndex(name) < 0 {
			return nil, fmt.Errorf("unknown command %q (known: %s)", name, strings.Join(CommandNames(), ", "))
		}
		if slices.ContainsFunc(mix, func(m MixEntry) bool { return m.Op == name }) {
			return nil, fmt.Errorf("command %q listed twice", name)
		}
		mix = append(mix, MixEntry{Op: name, Weight: weight})
	}
	if len(mix) == 0 {
		return nil, fmt.Errorf("no command given")
	}
	return mix, nil
}

// CommandNames lists the mix's commands in order, as command labels.
func (p Plan) CommandNames() []string {
	names := make([]string, len(p.Mix))
	for i, m := range p.Mix {
		names[i] = m.Op
	}
	return names
}

// Writes reports whether the plan writes at all.
func (p Plan) Writes() bool {
	return slices.ContainsFunc(p.Mix, func(m MixEntry) bool { return burstOps[burstOpIndex(m.Op)].write })
}

// Duration is the longest the load may last: warm-up plus test time.
func (p Plan) Duration() time.Duration { return p.Warmup + p.TestTime }

// FieldError names the option (in memtier's terms: clients, pipeline,
// test-time, ...) a validation error is about, so a command line can name
// its flag.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Validate checks the plan against limits and the namespace prefix.
func (p Plan) Validate(l Limits) error {
	switch {
	case p.Clients < 1 || p.Clients > l.MaxClients:
		return fieldErr("clients", "%d must be from 1 to %d", p.Clients, l.MaxClients)
	case p.Pipeline < 1 || p.Pipeline > l.MaxPipeline:
		return fieldErr("pipeline", "%d must be from 1 to %d", p.Pipeline, l.MaxPipeline)
	case p.Rate < 0 || math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0):
		return fieldErr("rate", "%v must be a number not below 0", p.Rate)
	case l.MaxRate > 0 && (p.Rate == 0 || p.Rate > l.MaxRate):
		return fieldErr("rate", "%v must be above 0 and at most %v", p.Rate, l.MaxRate)
	case p.TestTime <= 0 || p.Duration() > l.MaxTestTime:
		return fieldErr("test-time", "%v (with warm-up %v) must be above 0 and at most %v", p.TestTime, p.Warmup, l.MaxTestTime)
	case p.Requests < 0:
		return fieldErr("requests", "%d must not be negative", p.Requests)
	case p.MaxBytes < 1 || p.MaxBytes > l.MaxBytes:
		return fieldErr("max-bytes", "%d must be from 1 to %d", p.MaxBytes, l.MaxBytes)
	case p.DataSize < 1 || p.DataSize > l.MaxDataSize:
		return fieldErr("data-size", "%d must be from 1 to %d", p.DataSize, l.MaxDataSize)
	case p.DataMax != 0 && (p.DataMax < p.DataSize || p.DataMax > l.MaxDataSize):
		return fieldErr("data-size-range", "%d-%d must rise and stay at most %d", p.DataSize, p.DataMax, l.MaxDataSize)
	case p.Timeout <= 0:
		return fieldErr("timeout", "must be above 0")
	case p.KeyTTL < p.Duration():
		return fieldErr("key-ttl", "%v must outlast the burst (%v)", p.KeyTTL, p.Duration())
	case len(p.Mix) == 0:
		return fieldErr("commands", "no command in the mix")
	}
	total := 0
	for _, m := range p.Mix {
		// Each weight is bounded before the sum, which could otherwise wrap
		// negative and pass as a tiny (empty) cycle.
		if burstOpIndex(m.Op) < 0 || m.Weight < 1 || m.Weight > maxMixCycle {
			return fieldErr("commands", "%s:%d is not a known command with a weight from 1 to %d", m.Op, m.Weight, maxMixCycle)
		}
		total += m.Weight
	}
	if total > maxMixCycle {
		return fieldErr("commands", "the weights add up to %d, more than %d", total, maxMixCycle)
	}
	if err := prober.ValidatePrefix(p.Namespace.Prefix); err != nil {
		return &FieldError{Field: "key-prefix", Err: err}
	}
	if strings.ContainsAny(p.Namespace.Tag, "{}*?[]\\ ") {
		return fieldErr("key-prefix", "namespace tag %q holds braces, glob characters or spaces", p.Namespace.Tag)
	}
	return p.Keys.Validate()
}

// maxMixCycle bounds the sum of the weights (one cycle of the mix).
const maxMixCycle = 10000

// perKeyOverhead approximates what Redis spends on a key beyond its name
// and value (dict entry, object headers, expire entry, allocator rounding).
const perKeyOverhead = 96

// PlannedBytes is the most memory the burst can add to the server: every
// write it may send (capped by MaxBytes and by the rate) each creating a
// key, no more than its distinct keys can hold where their size is bounded.
func (p Plan) PlannedBytes() int64 {
	if !p.Writes() {
		return 0
	}
	keyLen := int64(len(p.Namespace.Prefix)+len(p.Namespace.Tag)) + 32
	minValue, maxValue := int64(p.DataSize), int64(max(p.DataSize, p.DataMax))
	writes := p.MaxBytes/(keyLen+minValue) + 1
	if p.Rate > 0 {
		writes = min(writes, int64(p.Rate*p.Duration().Seconds())+1)
	}
	mem := writes * (keyLen + maxValue + perKeyOverhead)
	// Distinct keys cap it for every kind but lists, which grow per write.
	var distinct int64
	for _, m := range p.Mix {
		op := burstOps[burstOpIndex(m.Op)]
		if !op.write {
			continue
		}
		if op.kind == kindList {
			return mem
		}
		elem := maxValue
		if op.elemSize > 0 {
			elem = op.elemSize
		}
		distinct += p.Keys.Size() * (keyLen + op.maxElems*(elem+16) + perKeyOverhead)
	}
	return min(mem, distinct)
}
