//go:build !linux

package prober

import "net"

// stampConn has no kernel timestamps off Linux: probes there read the
// prober's own clock (ClockUser).
type stampConn struct {
	net.Conn
	load bool
	ex   exchange
}

func enableStamps(net.Conn) (*stampConn, error) { return nil, errNoStamps }

func (s *stampConn) last() exchange { return exchange{} }
