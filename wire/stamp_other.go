//go:build !linux

package wire

import "net"

// StampedConn has no kernel timestamps off Linux: probes and bursts there
// read the prober's own clock (ClockUser).
type StampedConn struct{ net.Conn }

// Stamping holds nothing off Linux.
type Stamping struct{}

// NewStamping returns a Stamping.
func NewStamping() *Stamping { return &Stamping{} }

// Stamp fails off Linux: there are no kernel timestamps.
func (*Stamping) Stamp(net.Conn) (*StampedConn, error) { return nil, ErrNoStamps }

// StampLoad fails off Linux: there are no kernel timestamps.
func StampLoad(net.Conn) (*StampedConn, error) { return nil, ErrNoStamps }

// Last is an exchange with no stamps.
func (s *StampedConn) Last() Exchange { return Exchange{} }

// Exchange is an exchange with no stamps.
func (s *StampedConn) Exchange() Exchange { return Exchange{} }
