package collector

// The commands the Redis-side collectors send (INFO, LATENCY, CONFIG GET)
// and the reading of their replies; Target.Refresh calls them.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// fetchInfo runs INFO [section] and parses it; skipped counts the lines
// over the parse bounds.
func fetchInfo(ctx context.Context, c Doer, section string) (info redisinfo.Info, skipped int, err error) {
	args := []any{"info"}
	if section != "" {
		args = append(args, section)
	}
	s, err := c.Do(ctx, args...).Text()
	if err != nil {
		return nil, 0, redisinfo.CommandErr("INFO", err)
	}
	return redisinfo.ParseBounded(s, nil)
}

// fetchLatency reads LATENCY LATEST and, on Redis 7+, the server-side
// histogram of the probed commands with their exact sums from INFO
// commandstats.
func (t *Target) fetchLatency(ctx context.Context, info redisinfo.Info) ([]LatencyEvent, []CommandHistogram, error) {
	reply, err := t.client.Do(ctx, "latency", "latest").Result()
	if err != nil {
		return nil, nil, redisinfo.CommandErr("LATENCY LATEST", err)
	}
	events, dropped, err := parseLatencyLatest(reply)
	if err != nil {
		return nil, nil, err
	}
	t.drop("latency", dropped, fmt.Sprintf("LATENCY LATEST events repeated, negative or over the cap of %d", maxLatencyEvents))
	major, _, ok := info.Version()
	if !ok || major < 7 || len(t.cfg.Commands) == 0 {
		return events, nil, nil
	}
	args := []any{"latency", "histogram"}
	for _, c := range t.cfg.Commands {
		args = append(args, c)
	}
	reply, err = t.client.Do(ctx, args...).Result()
	if err != nil {
		return events, nil, redisinfo.CommandErr("LATENCY HISTOGRAM", err)
	}
	hists, dropped, err := parseLatencyHistogram(reply)
	if err != nil {
		return events, nil, err
	}
	t.drop("latency", dropped, fmt.Sprintf("LATENCY HISTOGRAM commands repeated or over the cap of %d", maxHistogramCommands))
	stats, _, err := fetchInfo(ctx, t.client, "commandstats")
	if err == nil {
		cs := parseCommandStats(stats)
		for i := range hists {
			if st, ok := cs[strings.ToLower(hists[i].Command)]; ok {
				hists[i].SumSeconds, hists[i].SumExact = float64(st.usec)/1e6, true
			}
		}
	}
	return events, hists, nil
}

// configParams are the settings the checks read with CONFIG GET.
func configParams() []string {
	return []string{
		"maxmemory", "maxclients", "tcp-backlog", "latency-monitor-threshold",
		"appendonly", "appendfsync", "no-appendfsync-on-rewrite",
	}
}

// fetchConfig reads configParams: one CONFIG GET on Redis 7+, which takes
// several names, one per name before.
func fetchConfig(ctx context.Context, c Doer, info redisinfo.Info) (map[string]string, error) {
	out := map[string]string{}
	params := configParams()
	batches := [][]string{params}
	if major, _, ok := info.Version(); !ok || major < 7 {
		batches = batches[:0]
		for _, p := range params {
			batches = append(batches, []string{p})
		}
	}
	for _, b := range batches {
		args := []any{"config", "get"}
		for _, p := range b {
			args = append(args, p)
		}
		reply, err := c.Do(ctx, args...).Result()
		if err != nil {
			return nil, redisinfo.CommandErr("CONFIG GET", err)
		}
		if err := parseConfigReply(reply, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseConfigReply adds the name/value pairs of a CONFIG GET reply (a flat
// array in RESP2, a map in RESP3) to out.
func parseConfigReply(reply any, out map[string]string) error {
	switch r := reply.(type) {
	case []any:
		if len(r)%2 != 0 {
			return errors.New("config get: odd reply")
		}
		for i := 0; i < len(r); i += 2 {
			k, ok1 := r[i].(string)
			v, ok2 := r[i+1].(string)
			if !ok1 || !ok2 {
				return fmt.Errorf("config get: %T/%T in reply", r[i], r[i+1])
			}
			out[k] = v
		}
	case map[any]any:
		for k, v := range r {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	default:
		return fmt.Errorf("config get: reply is %T", reply)
	}
	return nil
}
