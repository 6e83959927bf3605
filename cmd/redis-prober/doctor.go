package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/redis-prober/redis-prober/internal/doctor"
	"golang.org/x/term"
)

// addDoctorCommand declares `redis-prober doctor`: a one-shot host and Redis
// tuning report with the fix for each failed check, and a short live
// measurement. Exit 0: nothing critical failed; 1: something critical
// failed (or a Redis could not be reached); 2: bad usage.
func addDoctorCommand(cmd *kingpin.CmdClause) command {
	redisF := addRedisFlags(cmd)
	paths := addPathFlags(cmd)
	duration := durationFlag(cmd, "measure.duration", "How long to measure PING latency, connect latency and the host's intrinsic latency (0 skips it).", "3s")
	output := typedFlag(cmd, "output", "Report format: text or json.", "text", func(s string) (string, error) {
		if s != "text" && s != "json" {
			return "", fmt.Errorf("%q is not text or json", s)
		}
		return s, nil
	})

	return func(ctx context.Context, env *cliEnv) error {
		log := promslog.New(env.logConfig)
		if *duration > 5*time.Minute {
			return usagef("--measure.duration: %v is more than 5m", *duration)
		}
		names, eps, err := redisF.endpoints(log)
		if err != nil {
			return err
		}
		rep := doctor.Run(ctx, doctor.Config{
			Names: names, Endpoints: eps, Paths: paths.paths(), Duration: *duration, Log: log,
		})
		if *output == "json" {
			enc := json.NewEncoder(env.stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return fmt.Errorf("write report: %w", err)
			}
		} else {
			rep.WriteText(env.stdout, useColour(env.stdout))
		}
		if len(rep.Critical) > 0 {
			return fmt.Errorf("critical: %s", strings.Join(rep.Critical, ", "))
		}
		return nil
	}
}

// useColour is true only for a terminal, and never with NO_COLOR set.
func useColour(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}
