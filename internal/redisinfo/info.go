// Package redisinfo is the parsed INFO reply of a Redis or Valkey server
// and the reading of its fields, for every package that reads INFO: the
// collectors, the change watch, the burst governor and report, explain and
// the doctor. It parses with bounds, so a hostile reply costs a bounded
// map whatever it holds. It also says which CONFIG parameters hold
// secrets, for every reader of CONFIG.
package redisinfo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Info is one INFO reply: field name to raw value. Section headers are
// dropped; no field name repeats across the sections we read.
type Info map[string]string

// Bounds of one parsed INFO reply. The connection beneath bounds the
// bytes read; these bound what a reply may keep in every target's cache,
// whatever it holds. Lines over a bound are skipped and counted, and the
// parse stays one linear pass.
const (
	// MaxFields: INFO everything of a Redis 7 with commandstats,
	// latencystats and errorstats has about 1,000 fields (a few hundred
	// commands and subcommands, listed twice); the default sections 150.
	MaxFields = 4096
	// MaxLineLen: the longest real lines are paths (executable,
	// config_file), bounded by PATH_MAX (4096).
	MaxLineLen = 8 << 10
	// MaxBytes bounds the text of the fields kept, about ten times
	// the largest real INFO everything.
	MaxBytes = 1 << 20
)

// Parse parses the text of an INFO reply ("# Section" headers and
// "field:value" lines, CRLF or LF). Fields are kept as text; servers that
// lack a field simply lack it. Lines beyond the bounds above are skipped.
func Parse(s string) (Info, error) {
	info, _, err := ParseBounded(s, nil)
	return info, err
}

// ParseKeys is Parse keeping only the fields keep takes: a reader
// of a few fields (explain, the change watch) then builds a map of those,
// not of the few hundred in the reply (at 1,000 targets whole maps were
// much of what the prober allocated: docs/performance.md, "Measured
// reasons"). The bounds count every field of the reply, so the fields
// kept are those Parse would keep.
func ParseKeys(s string, keep func(field string) bool) (Info, error) {
	info, _, err := ParseBounded(s, keep)
	return info, err
}

// ParseBounded is ParseKeys (Parse when keep is nil) that also says how
// many field lines it skipped for the bounds (too long, too many, too much
// text in all), for the collectors to report.
func ParseBounded(s string, keep func(string) bool) (Info, int, error) {
	// Sized once for every line: growing a map of a few hundred fields
	// step by step was half of what the collectors allocated. A filtered
	// parse keeps a few.
	size := 0
	if keep == nil {
		size = min(strings.Count(s, "\n")+1, MaxFields)
	}
	info := make(Info, size)
	fields, kept, skipped := 0, 0, 0
	// A reply far larger than what is kept should not stay alive through
	// substrings of it in the cache.
	clone := len(s) > MaxBytes
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if len(line) > MaxLineLen || fields >= MaxFields || kept+len(line) > MaxBytes {
			skipped++
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" {
			return nil, skipped, fmt.Errorf("info: malformed line %q", Truncate(line, 80))
		}
		// A repeated field counts once and keeps its last value (a
		// repeat of a field keep refuses is counted again: a bound
		// reached a little sooner on a reply no server sends).
		if old, dup := info[k]; dup {
			kept -= len(k) + 1 + len(old)
		} else {
			fields++
		}
		kept += len(line)
		if keep != nil && !keep(k) {
			continue
		}
		if clone {
			k, v = strings.Clone(k), strings.Clone(v)
		}
		info[k] = v
	}
	if fields == 0 {
		return nil, skipped, errors.New("info: no fields")
	}
	return info, skipped, nil
}

// Truncate cuts s to n bytes and marks the cut, for a field quoted in an
// error or a log line.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Int returns an integer field.
func (i Info) Int(key string) (int64, bool) {
	v, err := strconv.ParseInt(i[key], 10, 64)
	return v, err == nil
}

// Float returns a numeric field.
func (i Info) Float(key string) (float64, bool) {
	v, err := strconv.ParseFloat(i[key], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// Version returns the major and minor Redis protocol version
// (redis_version; Valkey reports the Redis version it is compatible with).
func (i Info) Version() (major, minor int, ok bool) {
	parts := strings.SplitN(i["redis_version"], ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	return ma, mi, err1 == nil && err2 == nil
}

// Server names the implementation and its own version, for reports.
func (i Info) Server() string {
	if v := i["valkey_version"]; v != "" {
		return "valkey " + v
	}
	if v := i["redis_version"]; v != "" {
		return "redis " + v
	}
	return "unknown"
}

// Retain returns the fields of keys only, as copies: a parsed INFO keeps
// the whole reply alive through its substrings, and its map was a large
// part of the live heap at a thousand targets, for some twenty values a
// target (docs/performance.md, "Measured reasons").
func (i Info) Retain(keys []string) Info {
	if i == nil {
		return nil
	}
	out := make(Info, len(keys))
	for _, k := range keys {
		if v, ok := i[k]; ok {
			out[k] = strings.Clone(v)
		}
	}
	return out
}

// CommandlogSupported says whether the server of info has COMMANDLOG:
// Valkey 8.1 or newer (valkey_version; Valkey reports redis_version 7.2.4).
func CommandlogSupported(info Info) bool {
	parts := strings.SplitN(info["valkey_version"], ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (ma > 8 || ma == 8 && mi >= 1)
}

// Identity is what INFO says about the process, to tell it from another
// process with the same PID in another namespace.
type Identity struct {
	PID     int
	TCPPort int
	// Started is the Unix time the server started (server_time_usec -
	// uptime_in_seconds); 0 when unknown.
	Started float64
}

// IdentityFromInfo reads the process identity from INFO.
func IdentityFromInfo(info Info) Identity {
	pid, _ := info.Int("process_id")
	port, _ := info.Int("tcp_port")
	id := Identity{PID: int(pid), TCPPort: int(port)}
	now, ok1 := info.Float("server_time_usec")
	up, ok2 := info.Float("uptime_in_seconds")
	if ok1 && ok2 && now > 0 {
		id.Started = now/1e6 - up
	}
	return id
}
