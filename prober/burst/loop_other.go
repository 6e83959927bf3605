//go:build !linux

package burst

import "context"

// pacedLoop is the event loop of a paced load on Linux; elsewhere every
// connection keeps a goroutine of its own.
type pacedLoop struct{}

func (*pacedLoop) run() {}

func (l *burstLoad) eventLoop(context.Context, []*burstConn, []int) *pacedLoop { return nil }
