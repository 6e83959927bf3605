//go:build linux

package prober

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

// stampConn is a TCP connection on Go's ordinary netpoller whose reads and
// writes collect the kernel's timestamps: reads are recvmsg(2) calls whose
// control message carries the arrival stamp of the last segment read, and
// after each write the socket's error queue is drained for the departure
// stamp of the write's last byte. It is meant for one request at a time
// (the probe's), and sits beneath TLS when there is TLS, so the stamps are
// those of the TLS records.
type stampConn struct {
	*net.TCPConn
	rc syscall.RawConn

	sent uint32 // bytes written since stamping began (the OPT_ID key space)
	ex   exchange
	want uint32 // key of the last write's last byte

	msgBuf
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
	// load: a burst connection, whose reads never wait in the probes'
	// blocking ppoll slot (fastSlots): it reads, and parks on the
	// netpoller when nothing is there yet, like any Go socket.
	load bool
}

// enableStamps turns kernel timestamping on for a connected TCP socket. The
// kernel refuses OPT_ID before the connection is established, so this runs
// after the dial and before anything is written.
func enableStamps(c net.Conn) (*stampConn, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, errNoStamps
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
	s := &stampConn{TCPConn: tc, rc: rc,
		oob: make([]byte, unix.CmsgSpace(3*16)), errOOB: make([]byte, 2*unix.CmsgSpace(64))}
	s.readFn = s.recv
	s.drainFn = s.drain
	s.pollFn = s.poll
	return s, nil
}

func (s *stampConn) SetReadDeadline(t time.Time) error {
	s.setReadDead(t)
	return s.TCPConn.SetReadDeadline(t)
}

func (s *stampConn) SetDeadline(t time.Time) error {
	s.setReadDead(t)
	return s.TCPConn.SetDeadline(t)
}

func (s *stampConn) setReadDead(t time.Time) {
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

// fastSlots bounds the reads waiting in ppoll(2) at once, process-wide:
// each holds an OS thread and, until sysmon retakes it, a P. The others
// (and a wait past fastWait) park on the netpoller as usual.
var fastSlots = make(chan struct{}, 1)

// poll waits for the reply in a blocking ppoll(2) of at most fastWait, and
// reads it when it comes.
func (s *stampConn) poll(fd uintptr) {
	end := time.Now().Add(fastWait)
	if d := s.readDead.Load(); d != 0 && d < end.UnixNano() {
		end = time.Unix(0, d)
	}
	// The reply cannot be there yet: wait first, read when it comes.
	for first := true; ; first = false {
		if !first {
			n, oobn, err := s.recvmsg(fd, s.buf, s.oob, unix.MSG_DONTWAIT)
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

func (s *stampConn) Read(b []byte) (int, error) {
	s.buf, s.n, s.oobn, s.err, s.got = b, 0, 0, nil, false
	if !s.load {
		select {
		case fastSlots <- struct{}{}:
			_ = s.rc.Control(s.pollFn)
			<-fastSlots
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
	s.ex.readAt = time.Now()
	if ts, ok := rxStamp(s.oob[:s.oobn]); ok {
		s.ex.rxWall, s.ex.rx = ts, true
	} else {
		s.ex.rx = false
	}
	return s.n, nil
}

// recv is one non-blocking recvmsg; false asks the netpoller to wait for
// the socket to be readable.
func (s *stampConn) recv(fd uintptr) bool {
	for {
		n, oobn, err := s.recvmsg(fd, s.buf, s.oob, unix.MSG_DONTWAIT)
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

// msgBuf is the msghdr and iovec of recvmsg(2) calls, reused by every call:
// the hot path allocates nothing (x/sys's Recvmsg would allocate both each
// time).
type msgBuf struct {
	msg unix.Msghdr
	iov unix.Iovec
}

// recvmsg is recvmsg(2) on m's msghdr, always with MSG_DONTWAIT (callers
// say so too): the call never blocks, so it is made raw and the runtime
// need not hand its P over for it.
func (m *msgBuf) recvmsg(fd uintptr, b, oob []byte, flags int) (n, oobn int, err error) {
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

// drainTX reads every stamp on fd's error queue and returns the one keyed
// want (the last write's last byte); earlier ones (a write split over
// segments, an earlier request whose stamp came late) are dropped by their
// key. oob takes the control messages.
func (m *msgBuf) drainTX(fd uintptr, oob []byte, want uint32) (time.Time, bool) {
	for range 64 {
		_, oobn, err := m.recvmsg(fd, nil, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
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

func (s *stampConn) Write(b []byte) (int, error) {
	s.ex.writeAt = time.Now()
	n, err := s.TCPConn.Write(b)
	if n > 0 {
		s.sent += uint32(n)
		s.want = s.sent - 1
		s.ex.tx = false
		// The software TX stamp is taken as the segment goes to the
		// device, within the write on an idle socket; taking it now also
		// clears the error queue before the reply is awaited.
		_ = s.rc.Control(s.drainFn)
	}
	return n, err
}

// drain takes the last write's TX stamp from the error queue (drainTX).
func (s *stampConn) drain(fd uintptr) {
	if ts, ok := s.drainTX(fd, s.errOOB, s.want); ok {
		s.ex.txWall, s.ex.tx = ts, true
	}
}

// last returns the exchange of the last write and read. A TX stamp that
// had not come by the end of the write is looked for once more.
func (s *stampConn) last() exchange {
	if !s.ex.tx {
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

func rxStamp(oob []byte) (ts time.Time, ok bool) {
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
