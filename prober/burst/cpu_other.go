//go:build !unix

package burst

import "time"

// processCPU is not read off Unix: a burst's client CPU shows as 0.
func processCPU() time.Duration { return 0 }
