//go:build !linux

package burst

import "context"

// loadLoop is the event loop of a load over TCP on Linux; elsewhere every
// connection keeps a goroutine of its own.
type loadLoop struct{}

func (*loadLoop) run() {}

func (l *burstLoad) eventLoop(context.Context, []*burstConn, []int) *loadLoop { return nil }
