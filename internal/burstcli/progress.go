package burstcli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/redis-prober/redis-prober/prober/burst"
)

// progressBar redraws one line on a terminal: elapsed time against the
// plan, ops/s and p99 over the governor's window. Nothing of it when stdout
// is not a terminal (a file, a pipe, CI).
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	drawn bool
}

// newProgressBar returns nil unless w is a terminal.
func newProgressBar(w io.Writer) *progressBar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progressBar{w: w}
}

const barWidth = 30

func (b *progressBar) update(p burst.Progress) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	frac := 0.0
	if p.Planned > 0 {
		frac = min(1, float64(p.Elapsed)/float64(p.Planned))
	}
	filled := int(frac * barWidth)
	rate := ""
	if p.Rate > 0 {
		rate = fmt.Sprintf(" of %.0f", p.Rate)
	}
	fmt.Fprintf(b.w, "\r[%s%s] %3.0f%% %5.1fs  %9.0f ops/sec%s  p99 %8.3f ms  %d ops\x1b[K",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), 100*frac, p.Elapsed.Seconds(),
		p.OpsPerSec, rate, float64(p.P99)/1e6, p.Ops)
	b.drawn = true
}

// finish ends the progress line so what follows starts on its own.
func (b *progressBar) finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}
