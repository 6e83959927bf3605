package collector

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// outcome is one enabled collector's result in a refresh.
type outcome struct {
	name string
	err  error
}

// logRefresh logs what a refresh found, once it is over. When Redis did
// not answer (INFO could not be read, or a command met a refused, broken
// or timed-out connection), every collector of the node fails at once and
// for one reason: that is one spell of the node (cfg.Spell, shared with
// its probe, or reach where there is none), not a line per collector, and
// its failures stay out of the collectors' own logs. Else each
// collector's failure is its own (t.faults). A refresh cut by its
// caller (the node stopping) says nothing of Redis and logs nothing.
// t.refreshMu is held.
func (t *Target) logRefresh(ctx context.Context, infoErr error, outs []outcome) {
	if errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	var first *outcome
	var failed []string
	for i, o := range outs {
		if o.err != nil && notAnswered(o.err, infoErr) {
			if first == nil {
				first = &outs[i]
			}
			failed = append(failed, o.name)
		}
	}
	log := t.faults.Logger()
	if first != nil {
		for _, o := range outs {
			if o.err != nil {
				failed = appendNew(failed, o.name)
			}
		}
		if t.cfg.Spell != nil {
			t.cfg.Spell.Fail("collector:"+first.name, first.err, time.Now())
		} else {
			t.reach.fail(log, first.name, first.err, failed)
		}
		for _, o := range outs {
			if o.err == nil {
				t.faults.Observe(o.name, nil, true)
			}
		}
		return
	}
	if len(outs) > 0 {
		if t.cfg.Spell != nil {
			t.cfg.Spell.Answered(time.Now())
		} else {
			t.reach.ok(log)
		}
	}
	for _, o := range outs {
		t.faults.Observe(o.name, o.err, true)
	}
}

func appendNew(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}

// notAnswered tells a collector's failure that says Redis did not answer
// this refresh: it could not run for want of INFO (unless INFO is merely
// refused here, ErrNoData), or a command of its own met a refused, broken
// or timed-out connection. An error reply, a reply out of bounds or a
// file of this host that cannot be read is the collector's own failure.
func notAnswered(err, infoErr error) bool {
	if infoErr != nil && !errors.Is(infoErr, ErrNoData) && errors.Is(err, infoErr) {
		return true
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return false
	}
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded)
}

// reachLog is the log of a node's Redis not answering its collectors: one
// warning when a refresh first finds it so (however many collectors read
// the node's INFO, and however the error reads on the way: a broken
// pooled connection, then refused dials), and one line when a refresh
// reads the node again. t.refreshMu guards it.
type reachLog struct {
	failures int    // refreshes of the spell under way
	last     string // its last error
}

func (r *reachLog) fail(log *slog.Logger, collector string, err error, failed []string) {
	if r.failures == 0 {
		log.Warn("collector failed", "collector", collector, "err", err.Error(),
			"without_data", strings.Join(failed, ","))
	}
	r.failures++
	r.last = err.Error()
}

func (r *reachLog) ok(log *slog.Logger) {
	if r.failures == 0 {
		return
	}
	log.Info("collector recovered", "after_failures", r.failures, "last_error", r.last)
	r.failures, r.last = 0, ""
}
