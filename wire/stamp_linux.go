//go:build linux

package wire

import (
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stampFlags asks for software stamps of every segment sent and received,
// reported (SOFTWARE) as timestamps only (TSONLY: no copy of the packet on
// the error queue), each TX stamp keyed by the byte offset of its write's
// last byte (OPT_ID), so a stale stamp cannot be taken for a newer write.
const stampFlags = unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_RX_SOFTWARE |
	unix.SOF_TIMESTAMPING_SOFTWARE | unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY

// StampedConn is a TCP connection on Go's ordinary netpoller whose reads and
// writes collect the kernel's timestamps: reads are recvmsg(2) calls whose
// control message carries the arrival stamp of the last segment read, and
// after each write the socket's error queue is drained for the departure
// stamp of the write's last byte. It is meant for one request at a time
// (the probe's), and sits beneath TLS when there is TLS, so the stamps are
// those of the TLS records.
type StampedConn struct {
	*net.TCPConn
	rc syscall.RawConn

	sent uint32 // bytes written since stamping began (the OPT_ID key space)
	ex   Exchange
	want uint32 // key of the last write's last byte

	MsgBuf
	buf         []byte
	n, oobn     int
	err         error
	oob, errOOB []byte
	readFn      func(fd uintptr) bool
	drainFn     func(fd uintptr)
	pollFn      func(fd uintptr)
	pfd         [1]unix.PollFd
	ts          unix.Timespec
	got         bool
	// readDead is the read deadline in force (Unix nanoseconds, 0 for
	// none), for the fast wait; a stop sets it from another goroutine.
	readDead atomic.Int64
	// fast is the blocking-wait slot its reads may take (Stamping's); nil
	// for a burst connection, whose reads park on the netpoller when
	// nothing is there yet, like any Go socket.
	fast chan struct{}
}

// Stamping is what the stamped probe connections of one event loop share:
// the slot of the blocking wait their reads take (fastWait). It bounds the
// reads waiting in ppoll(2) at once, each of which holds an OS thread and,
// until sysmon retakes it, a P; the others (and a wait past fastWait) park
// on the netpoller as usual.
type Stamping struct{ fast chan struct{} }

// NewStamping returns the shared state of one loop's probe connections.
func NewStamping() *Stamping { return &Stamping{fast: make(chan struct{}, 1)} }

// Stamp turns kernel timestamping on for a connected TCP socket that
// carries one request at a time (a probe's). The kernel refuses OPT_ID
// before the connection is established, so this runs after the dial and
// before anything is written. It fails where the kernel gives no stamps
// (unix sockets, a kernel that refuses the option): the caller then times
// by its own clock.
func (st *Stamping) Stamp(c net.Conn) (*StampedConn, error) {
	s, err := stamp(c)
	if err != nil {
		return nil, err
	}
	s.fast = st.fast
	return s, nil
}

func stamp(c net.Conn) (*StampedConn, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, ErrNoStamps
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, stampFlags)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	s := &StampedConn{TCPConn: tc, rc: rc, oob: OOB(), errOOB: ErrOOB()}
	s.readFn = s.recv
	s.drainFn = s.drain
	s.pollFn = s.poll
	return s, nil
}

// StampLoad is Stamp for a connection that carries load (many requests in
// flight): its reads never take the probes' blocking-wait slot.
func StampLoad(c net.Conn) (*StampedConn, error) { return stamp(c) }

// OOB is a buffer for the control messages of a read (its RX stamp).
func OOB() []byte { return make([]byte, unix.CmsgSpace(3*16)) }

// ErrOOB is a buffer for the control messages of the error queue (a TX
// stamp and the extended error that keys it).
func ErrOOB() []byte { return make([]byte, 2*unix.CmsgSpace(64)) }

// RawConn is the socket beneath, for a loop that takes it over.
func (s *StampedConn) RawConn() syscall.RawConn { return s.rc }

// Sent is how many bytes were written since stamping began: the key space
// of the TX stamps (OPT_ID) a loop that takes the socket over goes on with.
func (s *StampedConn) Sent() uint32 { return s.sent }

// Exchange is the last write and read as they stand.
func (s *StampedConn) Exchange() Exchange { return s.ex }

func (s *StampedConn) SetReadDeadline(t time.Time) error {
	s.setReadDead(t)
	return s.TCPConn.SetReadDeadline(t)
}

func (s *StampedConn) SetDeadline(t time.Time) error {
	s.setReadDead(t)
	return s.TCPConn.SetDeadline(t)
}

func (s *StampedConn) setReadDead(t time.Time) {
	if t.IsZero() {
		s.readDead.Store(0)
	} else {
		s.readDead.Store(t.UnixNano())
	}
}

// fastWait is how long a read waits for its reply in a blocking ppoll(2),
// as a C client waits in read(2), before it hands the wait to the
// netpoller. Parking on the netpoller costs the prober a trip through Go's
// scheduler right after the request leaves, on the CPU the kernel is
// about to wake Redis on: with Redis and the prober on one CPU (a sidecar)
// that pushed the wire time of the prober's own requests a third above a
// C client's; blocked in ppoll it is level (see docs/architecture.md).
const fastWait = time.Millisecond

// poll waits for the reply in a blocking ppoll(2) of at most fastWait, and
// reads it when it comes.
func (s *StampedConn) poll(fd uintptr) {
	end := time.Now().Add(fastWait)
	if d := s.readDead.Load(); d != 0 && d < end.UnixNano() {
		end = time.Unix(0, d)
	}
	// The reply cannot be there yet: wait first, read when it comes.
	for first := true; ; first = false {
		if !first {
			n, oobn, err := s.Recvmsg(fd, s.buf, s.oob, unix.MSG_DONTWAIT)
			if err == unix.EINTR {
				continue
			}
			if err != unix.EAGAIN {
				s.n, s.oobn, s.err, s.got = n, oobn, err, true
				return
			}
		}
		left := time.Until(end)
		if left <= 0 {
			return
		}
		s.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		s.ts = unix.NsecToTimespec(left.Nanoseconds())
		k, perr := unix.Ppoll(s.pfd[:], &s.ts, nil)
		if perr != nil && perr != unix.EINTR {
			return
		}
		if k > 0 && s.pfd[0].Revents&unix.POLLERR != 0 {
			s.drain(fd) // a TX stamp that came after the write
		}
	}
}

func (s *StampedConn) Read(b []byte) (int, error) {
	s.buf, s.n, s.oobn, s.err, s.got = b, 0, 0, nil, false
	if s.fast != nil {
		select {
		case s.fast <- struct{}{}:
			_ = s.rc.Control(s.pollFn)
			<-s.fast
		default:
		}
	}
	if !s.got {
		if err := s.rc.Read(s.readFn); err != nil {
			return 0, err
		}
	}
	s.buf = nil
	if s.err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: s.RemoteAddr(), Err: s.err}
	}
	if s.n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	s.ex.ReadAt = time.Now()
	if ts, ok := RXStamp(s.oob[:s.oobn]); ok {
		s.ex.RXWall, s.ex.RX = ts, true
	} else {
		s.ex.RX = false
	}
	return s.n, nil
}

// recv is one non-blocking recvmsg; false asks the netpoller to wait for
// the socket to be readable.
func (s *StampedConn) recv(fd uintptr) bool {
	for {
		n, oobn, err := s.Recvmsg(fd, s.buf, s.oob, unix.MSG_DONTWAIT)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		s.n, s.oobn, s.err = n, oobn, err
		return true
	}
}

// MsgBuf is the msghdr and iovec of recvmsg(2) calls, reused by every call:
// the hot path allocates nothing (x/sys's Recvmsg would allocate both each
// time).
type MsgBuf struct {
	msg unix.Msghdr
	iov unix.Iovec
}

// recvmsg is recvmsg(2) on m's msghdr, always with MSG_DONTWAIT (callers
// say so too): the call never blocks, so it is made raw and the runtime
// need not hand its P over for it.
func (m *MsgBuf) Recvmsg(fd uintptr, b, oob []byte, flags int) (n, oobn int, err error) {
	m.iov = unix.Iovec{}
	if len(b) > 0 {
		m.iov.Base = &b[0]
		m.iov.SetLen(len(b))
	}
	m.msg = unix.Msghdr{Iov: &m.iov, Iovlen: 1, Control: &oob[0]}
	m.msg.SetControllen(len(oob))
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&m.msg)), uintptr(flags|unix.MSG_DONTWAIT))
	if e != 0 {
		return 0, 0, e
	}
	return int(r), int(m.msg.Controllen), nil
}

// ReadNow reads what has come on a stream socket, with its control
// messages, without waiting: n bytes into b and oobn into oob, ok false
// when nothing has (EAGAIN). A failed read is net's *OpError naming
// remote, a closed stream io.EOF. The probe's and the burst's event loops
// read their sockets so.
func (m *MsgBuf) ReadNow(fd uintptr, b, oob []byte, remote net.Addr) (n, oobn int, ok bool, err error) {
	for {
		n, oobn, err := m.Recvmsg(fd, b, oob, unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, 0, false, nil
		case err != nil:
			return 0, 0, false, &net.OpError{Op: "read", Net: "tcp", Addr: remote, Err: err}
		case n == 0:
			return 0, 0, false, io.EOF
		}
		return n, oobn, true, nil
	}
}

// DrainTX reads every stamp on fd's error queue and returns the one keyed
// want (the last write's last byte); earlier ones (a write split over
// segments, an earlier request whose stamp came late) are dropped by their
// key. oob takes the control messages.
func (m *MsgBuf) DrainTX(fd uintptr, oob []byte, want uint32) (time.Time, bool) {
	for range 64 {
		_, oobn, err := m.Recvmsg(fd, nil, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return time.Time{}, false
		}
		if ts, key, ok := txStamp(oob[:oobn]); ok && key == want {
			return ts, true // the last write's own stamp: nothing later is queued
		}
	}
	return time.Time{}, false
}

func (s *StampedConn) Write(b []byte) (int, error) {
	s.ex.WriteAt = time.Now()
	n, err := s.TCPConn.Write(b)
	if n > 0 {
		s.sent += uint32(n)
		s.want = s.sent - 1
		s.ex.TX = false
		// The software TX stamp is taken as the segment goes to the
		// device, within the write on an idle socket; taking it now also
		// clears the error queue before the reply is awaited.
		_ = s.rc.Control(s.drainFn)
	}
	return n, err
}

// drain takes the last write's TX stamp from the error queue (DrainTX).
func (s *StampedConn) drain(fd uintptr) {
	if ts, ok := s.DrainTX(fd, s.errOOB, s.want); ok {
		s.ex.TXWall, s.ex.TX = ts, true
	}
}

// Last returns the exchange of the last write and read. A TX stamp that
// had not come by the end of the write is looked for once more.
func (s *StampedConn) Last() Exchange {
	if !s.ex.TX {
		_ = s.rc.Control(s.drainFn)
	}
	return s.ex
}

// Control messages are parsed in place: unix.ParseSocketControlMessage
// allocates for each.

// cmsgs calls f with the level, type and data of each control message.
func cmsgs(oob []byte, f func(level, typ int32, data []byte)) {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return
		}
		f(h.Level, h.Type, oob[unix.CmsgLen(0):l])
		next := unix.CmsgSpace(l - unix.CmsgLen(0))
		if next > len(oob) {
			return
		}
		oob = oob[next:]
	}
}

// stampOf reads ts[0] (the software stamp) of a struct scm_timestamping.
func stampOf(data []byte) (time.Time, bool) {
	if len(data) < 16 {
		return time.Time{}, false
	}
	sec := int64(binary.NativeEndian.Uint64(data[0:8]))
	nsec := int64(binary.NativeEndian.Uint64(data[8:16]))
	if sec == 0 && nsec == 0 {
		return time.Time{}, false
	}
	return time.Unix(sec, nsec), true
}

func RXStamp(oob []byte) (ts time.Time, ok bool) {
	cmsgs(oob, func(level, typ int32, data []byte) {
		if level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPING {
			ts, ok = stampOf(data)
		}
	})
	return ts, ok
}

// txStamp reads one error-queue message: the stamp, and from the
// sock_extended_err beside it that it is a send stamp and its key.
func txStamp(oob []byte) (ts time.Time, key uint32, ok bool) {
	var haveTS, haveKey bool
	cmsgs(oob, func(level, typ int32, data []byte) {
		switch {
		case level == unix.SOL_SOCKET && typ == unix.SCM_TIMESTAMPING:
			ts, haveTS = stampOf(data)
		case (level == unix.SOL_IP && typ == unix.IP_RECVERR) || (level == unix.SOL_IPV6 && typ == unix.IPV6_RECVERR):
			if len(data) < int(unsafe.Sizeof(unix.SockExtendedErr{})) {
				return
			}
			ee := (*unix.SockExtendedErr)(unsafe.Pointer(&data[0]))
			if ee.Errno == uint32(unix.ENOMSG) && ee.Origin == unix.SO_EE_ORIGIN_TIMESTAMPING && ee.Info == unix.SCM_TSTAMP_SND {
				key, haveKey = ee.Data, true
			}
		}
	})
	return ts, key, haveTS && haveKey
}
