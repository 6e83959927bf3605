package engine

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"
)

// SourceWatcher reads target sources (a config file's file_sd files and
// http_sd URLs), each on its own interval, and keeps the last good read of
// each. A read that fails (a missing or malformed file, an unreachable URL,
// a target the checks refuse) keeps what the source held before; the
// problem is logged once, when it starts or changes, and shows in Healthy
// until a good read. T is what one source holds (its target groups).
//
// Files are polled, not watched with inotify: a re-read of a few files
// every interval is cheap, and it sees what inotify misses (ConfigMap
// symlink swaps, network file systems, editors that replace the file).
type SourceWatcher[T any] struct {
	log     *slog.Logger
	sources []*watchedSource[T]
	mu      sync.Mutex
}

// Source is one target source.
type Source[T any] struct {
	// Name is for the log (file_sd_configs[0]); the error of Read names
	// the file or URL.
	Name     string
	Interval time.Duration
	// Read reads and checks the source; on error the last good read stays.
	Read func(ctx context.Context) (T, error)
}

type watchedSource[T any] struct {
	Source[T]
	last T     // the last good read
	err  error // the last read's error
}

// NewSourceWatcher prepares the sources; nothing is read until Poll.
func NewSourceWatcher[T any](log *slog.Logger, sources ...Source[T]) *SourceWatcher[T] {
	w := &SourceWatcher[T]{log: log}
	for _, s := range sources {
		w.sources = append(w.sources, &watchedSource[T]{Source: s})
	}
	return w
}

// Poll reads every source once, in turn; it returns whether any source's
// content or health changed.
func (w *SourceWatcher[T]) Poll(ctx context.Context) bool {
	changed := false
	for _, s := range w.sources {
		changed = w.pollOne(ctx, s) || changed
	}
	return changed
}

// Run reads each source every interval until ctx is done, and calls
// changed after a read that changed the source's content or health.
// Calls of changed may come from several goroutines at once.
func (w *SourceWatcher[T]) Run(ctx context.Context, changed func()) {
	var wg sync.WaitGroup
	for _, s := range w.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(s.Interval)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if w.pollOne(ctx, s) && ctx.Err() == nil {
					changed()
				}
			}
		}()
	}
	wg.Wait()
}

func (w *SourceWatcher[T]) pollOne(ctx context.Context, s *watchedSource[T]) bool {
	got, err := s.Read(ctx)
	if ctx.Err() != nil {
		return false // a read cut short by a stop or reload says nothing
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	was := s.err
	s.err = err
	if err != nil {
		if was == nil || was.Error() != err.Error() {
			w.log.Error("target source failed; its last good targets stay", "source", s.Name, "err", err)
		}
		return was == nil
	}
	if was != nil {
		w.log.Info("target source read again", "source", s.Name)
	}
	if was == nil && reflect.DeepEqual(got, s.last) {
		return false
	}
	s.last = got
	return true
}

// Snapshot is the last good read of every source, in the order given.
func (w *SourceWatcher[T]) Snapshot() []T {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]T, 0, len(w.sources))
	for _, s := range w.sources {
		out = append(out, s.last)
	}
	return out
}

// Healthy reports whether the last read of every source was good.
func (w *SourceWatcher[T]) Healthy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.sources {
		if s.err != nil {
			return false
		}
	}
	return true
}
