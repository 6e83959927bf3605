package collector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis-prober/redis-prober/internal/redisinfo"
)

// targetPart is one Redis-side collector of the list (All): what it reads
// in a refresh and the series it emits from the snapshot. A refresh runs
// the parts in the list's order, so a part reads what earlier ones put in
// the snapshot (every part works from the INFO the info part read).
type targetPart interface {
	// refresh fills the part's fields of s. ran is false when the part
	// did not run this time: it has no success series then.
	refresh(ctx context.Context, t *Target, s *Snapshot, r *refreshState) (ran bool, err error)
	// emit sends the part's series of snap; the set's lock is held.
	emit(set *Targets, out *sink, t *Target, snap *Snapshot)
}

// refreshState is what one refresh's parts hand each other besides the
// snapshot.
type refreshState struct {
	infoErr error // why INFO could not be read; every part depends on it
	start   time.Time
}

type infoPart struct{}

var infoDropReason = fmt.Sprintf("INFO lines over the parse bounds (%d fields, %d bytes a line, %d bytes in all)",
	redisinfo.MaxFields, redisinfo.MaxLineLen, redisinfo.MaxBytes)

func (infoPart) refresh(ctx context.Context, t *Target, s *Snapshot, r *refreshState) (bool, error) {
	var skipped int
	s.Info, skipped, r.infoErr = fetchInfo(ctx, t.client, "")
	if r.infoErr != nil {
		return true, r.infoErr
	}
	t.drop("info", skipped, infoDropReason)
	t.dropAbsurd(s.Info)
	s.Since = t.since.info(s.Info, s.Time)
	if n := t.forks.next(s.Info); n > 0 {
		if usec, ok := s.Info.Float("latest_fork_usec"); ok {
			for range n {
				t.observeFork(usec / 1e6)
			}
		}
	}
	return true, nil
}

func (infoPart) emit(set *Targets, out *sink, t *Target, snap *Snapshot) {
	set.info.emit(out, &t.sl, snap.Info, snap.Since.stats)
	out.metric(set.forkDesc, t.fork)
}

type latencyPart struct{}

func (latencyPart) refresh(ctx context.Context, t *Target, s *Snapshot, r *refreshState) (bool, error) {
	if r.infoErr != nil {
		return true, r.infoErr
	}
	var err error
	s.Events, s.Histograms, err = t.fetchLatency(ctx, s.Info)
	if err == nil {
		s.Since = t.since.events(s.Events)
	}
	return true, err
}

func (latencyPart) emit(set *Targets, out *sink, t *Target, snap *Snapshot) {
	set.lat.emit(out, &t.sl, snap.Events, snap.Histograms, t.cfg.ServerClassicBuckets, snap.Since)
}

type commandlogPart struct{}

func (commandlogPart) refresh(ctx context.Context, t *Target, s *Snapshot, r *refreshState) (bool, error) {
	lens, ran, err := t.refreshCommandlog(ctx, s.Info, r.infoErr, r.start)
	if ran {
		s.Commandlog = lens
	}
	return ran, err
}

func (commandlogPart) emit(set *Targets, out *sink, t *Target, snap *Snapshot) {
	set.cl.emit(out, &t.sl, snap.Commandlog)
	t.collectSlow(out)
}

type processPart struct{}

func (processPart) refresh(_ context.Context, t *Target, s *Snapshot, r *refreshState) (bool, error) {
	if r.infoErr != nil {
		return true, r.infoErr
	}
	var err error
	s.Process, err = t.cfg.Processes.Read(t.cfg.Paths, redisinfo.IdentityFromInfo(s.Info), r.start)
	return true, err
}

func (processPart) emit(set *Targets, out *sink, t *Target, snap *Snapshot) {
	set.proc.emit(out, &t.sl, snap.Process)
}

type checksPart struct{}

func (checksPart) refresh(ctx context.Context, t *Target, s *Snapshot, r *refreshState) (bool, error) {
	err := r.infoErr
	if err == nil {
		s.Config, err = fetchConfig(ctx, t.client, s.Info)
	}
	var hostErr error
	s.Host, hostErr = t.cfg.HostFacts.Read(t.cfg.Paths, r.start)
	t.cfg.HostChecks.Refresh(r.start)
	f := Facts{Host: s.Host, Info: s.Info, Config: s.Config, Process: s.Process}
	s.Checks = Evaluate(&f, ScopeRedis)
	return true, errors.Join(err, hostErr)
}

func (checksPart) emit(set *Targets, out *sink, t *Target, snap *Snapshot) {
	set.checks.emit(out, &t.sl, snap.Checks)
}
