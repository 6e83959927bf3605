package config

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/redis-prober/redis-prober/internal/bytesize"
)

// ByteSize is a byte count written as people write it: "16MiB", "512B"
// or a plain number of bytes.
type ByteSize int64

// UnmarshalYAML parses a size with bytesize.Parse.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a size such as 16MiB", n.Line)
	}
	v, err := bytesize.Parse(s)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*b = ByteSize(v)
	return nil
}

// MarshalYAML writes the size in the largest exact IEC unit.
func (b ByteSize) MarshalYAML() (any, error) { return bytesize.Format(int64(b)), nil }

// String is the size as MarshalYAML writes it.
func (b ByteSize) String() string { return bytesize.Format(int64(b)) }

// String writes the duration as people write it: "2m", "1h30m", "500ms"
// (time.Duration's "2m0s" reads as a typo).
func (d Duration) String() string { return model.Duration(d).String() }

// BurstPlan is one entry of burst_plans: a named shape of load for run's
// periodic bursts (--burst.plan) and the one-shot `burst --plan`. Fields
// left out of the file keep the built-in default plan's values, so a plan
// names only what it changes. The values are checked against what a burst
// accepts where the plan is used (cmd/redis-prober), since run's bounds
// are tighter than the one-shot command's.
type BurstPlan struct {
	Clients       int         `yaml:"clients"`
	Pipeline      int         `yaml:"pipeline"`
	Ratio         string      `yaml:"ratio"`
	Commands      string      `yaml:"commands"`
	DataSize      ByteSize    `yaml:"data_size"`
	DataSizeRange string      `yaml:"data_size_range"`
	Keys          BurstKeys   `yaml:"keys"`
	TestTime      Duration    `yaml:"test_time"`
	Requests      int64       `yaml:"requests"`
	Rate          float64     `yaml:"rate"`
	Warmup        Duration    `yaml:"warmup"`
	Timeout       Duration    `yaml:"timeout"`
	Step          bool        `yaml:"step"`
	StepSearch    StepSearch  `yaml:"step_search"`
	Bounds        BurstBounds `yaml:"bounds"`
}

// BurstKeys are the key numbers a burst draws and how.
type BurstKeys struct {
	Minimum int64   `yaml:"minimum"`
	Maximum int64   `yaml:"maximum"`
	Pattern string  `yaml:"pattern"`
	Stddev  float64 `yaml:"stddev"`
	Median  float64 `yaml:"median"`
	ZipfExp float64 `yaml:"zipf_exp"`
}

// StepSearch shapes a step-load capacity search (a plan with step: true).
type StepSearch struct {
	Start     float64  `yaml:"start"`
	Factor    float64  `yaml:"factor"`
	Precision float64  `yaml:"precision"`
	MaxRate   float64  `yaml:"max_rate"`
	Duration  Duration `yaml:"duration"`
	MaxTime   Duration `yaml:"max_time"`
	MaxSteps  int      `yaml:"max_steps"`
	Objective Duration `yaml:"objective"`
	MaxErrors float64  `yaml:"max_errors"`
}

// BurstBounds are what keeps a burst safe on a production server: the
// governor's abort and skip thresholds and the most it may write.
type BurstBounds struct {
	MaxBytes       ByteSize `yaml:"max_bytes"`
	AbortP99       Duration `yaml:"abort_p99"`
	MaxErrors      float64  `yaml:"max_errors"`
	MemoryHeadroom float64  `yaml:"memory_headroom"`
	MaxServerOps   float64  `yaml:"max_server_ops"`
	AllowReplica   bool     `yaml:"allow_replica"`
	MaxConcurrent  int      `yaml:"max_concurrent"`
}

// DefaultBurstPlanName names the built-in plan.
const DefaultBurstPlanName = "default"

// DefaultBurstPlan is the built-in plan "default": modest enough to run
// every 15 minutes beside production traffic. Its values are the defaults
// of every plan's fields, and of run's --burst.* flags.
func DefaultBurstPlan() BurstPlan {
	return BurstPlan{
		Clients: 4, Pipeline: 1, Ratio: "1:10", DataSize: 32,
		Keys:     BurstKeys{Maximum: 9999, Pattern: "R:R", ZipfExp: 1},
		TestTime: Duration(10 * time.Second), Rate: 2000, Warmup: Duration(time.Second), Timeout: Duration(time.Second),
		StepSearch: StepSearch{Start: 1000, Factor: 2, Precision: 0.05, Duration: Duration(2 * time.Second),
			MaxTime: Duration(2 * time.Minute), MaxSteps: 20, Objective: Duration(5 * time.Millisecond), MaxErrors: 0.001},
		Bounds: BurstBounds{MaxBytes: 16 << 20, AbortP99: Duration(20 * time.Millisecond), MaxErrors: 0.01,
			MemoryHeadroom: 0.2, MaxServerOps: 50000, MaxConcurrent: 4},
	}
}

// UnmarshalYAML fills the fields the file leaves out from the default
// plan. It takes the decoder's own unmarshal function (yaml.v3's older
// interface), which keeps the decoder's KnownFields: a misspelt field is
// refused as anywhere else in the file.
func (p *BurstPlan) UnmarshalYAML(unmarshal func(any) error) error {
	type plain BurstPlan
	*p = DefaultBurstPlan()
	return unmarshal((*plain)(p))
}

// BurstPlans are the plans of a file by name, with the built-in default
// unless the file gives its own.
type BurstPlans map[string]BurstPlan

// Names lists the plans, sorted.
func (ps BurstPlans) Names() []string {
	var out []string
	for n := range ps {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// BuiltinBurstPlans are the plans without a file: the default alone.
func BuiltinBurstPlans() BurstPlans {
	return BurstPlans{DefaultBurstPlanName: DefaultBurstPlan()}
}

// Plans are the file's burst_plans with the built-in default.
func (f *File) Plans() BurstPlans {
	out := BuiltinBurstPlans()
	for name, p := range f.BurstPlans {
		out[name] = p
	}
	return out
}

// planName is what a plan may be called: it is the plan label of the
// burst series.
var planName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// ValidBurstPlanName says why name cannot name a plan, or nil.
func ValidBurstPlanName(name string) error {
	if !planName.MatchString(name) {
		return fmt.Errorf("%q is not a plan name (letters, digits, '_', '.', '-'; at most 63)", name)
	}
	return nil
}

// validatePlans checks what decoding cannot: the names, and that no plan
// is empty (a bare "name:" decodes to zeros, not to the default plan).
func (f *File) validatePlans(fail func(msg string, path ...any) error) error {
	for _, name := range BurstPlans(f.BurstPlans).Names() {
		if err := ValidBurstPlanName(name); err != nil {
			return fail(err.Error(), "burst_plans", name)
		}
		if f.BurstPlans[name] == (BurstPlan{}) {
			return fail("is empty; give the fields that differ from the default plan", "burst_plans", name)
		}
	}
	return nil
}

// LoadBurstPlans reads the burst plans of a config file, for the one-shot
// `burst --plan`: the whole file is decoded as strictly as Load does, but
// only its plans are checked, so a file of plans alone will do.
func LoadBurstPlans(path string) (BurstPlans, error) {
	b, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	f, root, err := decode(b)
	if err != nil {
		return nil, err
	}
	if err := f.validatePlans(failAt(root)); err != nil {
		return nil, err
	}
	return f.Plans(), nil
}
