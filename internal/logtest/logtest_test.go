package logtest

import (
	"log/slog"
	"sync"
	"testing"
)

// TestBufferCountsLinesWhileWritten: lines written from several goroutines
// are all there and counted by what they contain (run with -race).
func TestBufferCountsLinesWhileWritten(t *testing.T) {
	t.Parallel()
	log, buf := Logger(slog.LevelInfo)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 25 {
				log.Info("tick", "from", i)
				_ = buf.Lines("tick")
			}
		})
	}
	log.Debug("tick below the level")
	wg.Wait()
	if got := buf.Lines("msg=tick"); got != 100 {
		t.Errorf("Lines(msg=tick) = %d, want 100", got)
	}
	if got := buf.Lines("below"); got != 0 {
		t.Errorf("a debug line was kept at info: %d", got)
	}
}
