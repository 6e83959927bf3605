//go:build !linux

package burst

import "time"

// preciseSpan: off Linux a wait is all on Go's timers.
const preciseSpan = 0

func pinPacing() (unpin func()) { return func() {} }

func sleepPrecise(deadline time.Time) { time.Sleep(time.Until(deadline)) }
