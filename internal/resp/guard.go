// Package resp bounds what the prober reads from a Redis server. A Guard
// watches the byte stream of one connection as it arrives, beneath the
// client library, and refuses it the moment a reply claims more than the
// connection's Limits allow: a bulk or aggregate length over the limit, a
// nesting deeper than any real Redis reply, a line that never ends. The
// client library (go-redis, the burst codec) then never sees, and never
// allocates for, a hostile header; the connection fails with an error that
// names the limit.
//
// The Guard validates structure, not meaning: a well-formed reply within the
// limits passes whatever it says.
package resp

import (
	"fmt"
	"strconv"
)

// HardMaxBulk is Redis's own ceiling for one bulk string (proto-max-bulk-len's
// default): no server we talk to can legitimately send more, whatever a
// connection's limits say.
const HardMaxBulk = 512 << 20

// maxLengthDigits bounds a length header: 512 MiB needs 9 digits, and a
// longer number would overflow before we could compare it.
const maxLengthDigits = 18

// Limits are the most one reply on a connection may claim.
type Limits struct {
	// Name says which connection the limits are for ("probe", "control",
	// "burst"); it appears in the error.
	Name string
	// MaxBulk bounds one bulk string, verbatim string or blob error.
	MaxBulk int64
	// MaxElems bounds the elements claimed by all aggregate headers of one
	// top-level reply together (a map of n pairs claims 2n), so nesting
	// cannot multiply what one header may claim.
	MaxElems int64
	// MaxDepth bounds aggregate nesting (a top-level array is depth 1).
	MaxDepth int
	// MaxLine bounds a line without CRLF: simple strings, errors, numbers.
	MaxLine int
	// MaxReply bounds the bytes of one top-level reply.
	MaxReply int64
}

// Per-use limits, from what Redis sends for what we ask.
var (
	// Probe replies are one value of at most the probe's data size (1 MiB
	// at most) or a few of them (MGET, LRANGE, HGETALL of the probe's
	// own small keys), never nested beyond an array of arrays.
	Probe = Limits{Name: "probe", MaxBulk: 1<<20 + 64, MaxElems: 1024, MaxDepth: 4, MaxLine: 64 << 10, MaxReply: 8 << 20}
	// Control replies: INFO (tens of KiB), CONFIG GET * (a few hundred
	// pairs), CLUSTER NODES / SLOTS of the largest clusters (about
	// 1,000 nodes and 16,384 slot ranges: a few MiB and some 300,000
	// elements at most), LATENCY, SCAN pages, SENTINEL replies.
	Control = Limits{Name: "control", MaxBulk: 8 << 20, MaxElems: 1 << 20, MaxDepth: 8, MaxLine: 64 << 10, MaxReply: 32 << 20}
)

// Error is a reply refused by a Guard. It is permanent for the connection:
// its stream can no longer be trusted to be in step.
type Error struct {
	Limits string // which connection's limits
	What   string // what was over the limit or malformed
}

func (e *Error) Error() string {
	return "reply refused by the " + e.Limits + " connection's RESP guard: " + e.What
}

type state uint8

const (
	stType  state = iota // at the start of a reply: the type byte
	stLine               // in a line that carries nothing we count (+ - : , ( # _)
	stLen                // in a length header's digits
	stLenLF              // after a length header's CR
	stBody               // in a bulk payload and its CRLF
)

// Guard validates one connection's incoming byte stream. It holds no
// buffer: Feed looks at each byte once, and skips bulk payloads whole.
type Guard struct {
	lim Limits

	st      state
	kind    byte  // type byte of the header being read
	neg     bool  // the header's number is negative
	num     int64 // the header's number so far
	digits  int
	lineLen int
	body    int64 // bulk bytes (with CRLF) still to skip

	// pending[i] is how many elements the aggregate at depth i+1 still
	// expects; len(pending) is the current depth.
	pending []int64
	elems   int64 // elements claimed in the current top-level reply
	size    int64 // bytes of the current top-level reply
	replies uint64
	err     *Error
}

// New returns a Guard enforcing lim; zero fields take the Control value,
// and MaxBulk is never above HardMaxBulk.
func New(lim Limits) *Guard {
	if lim.Name == "" {
		lim.Name = "redis"
	}
	if lim.MaxBulk <= 0 {
		lim.MaxBulk = Control.MaxBulk
	}
	lim.MaxBulk = min(lim.MaxBulk, HardMaxBulk)
	if lim.MaxElems <= 0 {
		lim.MaxElems = Control.MaxElems
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = Control.MaxDepth
	}
	if lim.MaxLine <= 0 {
		lim.MaxLine = Control.MaxLine
	}
	if lim.MaxReply <= 0 {
		lim.MaxReply = Control.MaxReply
	}
	return &Guard{lim: lim, pending: make([]int64, 0, lim.MaxDepth)}
}

func (g *Guard) fail(format string, args ...any) error {
	g.err = &Error{Limits: g.lim.Name, What: fmt.Sprintf(format, args...)}
	return g.err
}

// Feed checks the next bytes of the stream. Once it has returned an error it
// returns the same error for ever.
func (g *Guard) Feed(p []byte) error {
	if g.err != nil {
		return g.err
	}
	for i := 0; i < len(p); {
		if g.st == stBody {
			// Skip the payload in one step: its bytes are data.
			n := min(int64(len(p)-i), g.body)
			g.body -= n
			g.size += n
			i += int(n)
			if g.size > g.lim.MaxReply {
				return g.fail("reply longer than %s", bytesText(g.lim.MaxReply))
			}
			if g.body == 0 {
				if err := g.done(); err != nil {
					return err
				}
			}
			continue
		}
		c := p[i]
		i++
		g.size++
		if g.size > g.lim.MaxReply {
			return g.fail("reply longer than %s", bytesText(g.lim.MaxReply))
		}
		switch g.st {
		case stType:
			g.kind, g.lineLen = c, 1
			g.neg, g.num, g.digits = false, 0, 0
			switch c {
			case '+', '-', ':', ',', '(', '#', '_':
				g.st = stLine
			case '$', '!', '=', '*', '~', '>', '%', '|':
				g.st = stLen
			default:
				return g.fail("unknown reply type byte %s", strconv.QuoteRune(rune(c)))
			}
		case stLine:
			g.lineLen++
			if g.lineLen > g.lim.MaxLine {
				return g.fail("line longer than %s without CRLF", bytesText(int64(g.lim.MaxLine)))
			}
			if c == '\n' {
				if err := g.done(); err != nil {
					return err
				}
			}
		case stLen:
			switch {
			case c >= '0' && c <= '9':
				g.digits++
				if g.digits > maxLengthDigits {
					return g.fail("%c header with more than %d digits", g.kind, maxLengthDigits)
				}
				g.num = g.num*10 + int64(c-'0')
			case c == '-' && g.digits == 0 && !g.neg:
				g.neg = true
			case c == '\r' && g.digits > 0:
				g.st = stLenLF
			default:
				return g.fail("malformed %c header", g.kind)
			}
		case stLenLF:
			if c != '\n' {
				return g.fail("malformed %c header", g.kind)
			}
			if err := g.header(); err != nil {
				return err
			}
		}
	}
	return nil
}

// header acts on a complete length header.
func (g *Guard) header() error {
	n := g.num
	if g.neg {
		// Only the RESP2 null bulk and null array are negative, and only -1.
		if n != 1 || (g.kind != '$' && g.kind != '*') {
			return g.fail("negative length -%d in %c header", n, g.kind)
		}
		return g.done()
	}
	switch g.kind {
	case '$', '!', '=':
		if n > g.lim.MaxBulk {
			return g.fail("bulk length %d over the limit of %s", n, bytesText(g.lim.MaxBulk))
		}
		g.st, g.body = stBody, n+2
		return nil
	}
	// Aggregates: a map or attribute claims two elements a pair, and an
	// attribute is followed by the value it annotates.
	claim := n
	switch g.kind {
	case '%':
		claim = 2 * n
	case '|':
		claim = 2*n + 1
	}
	g.elems += claim
	if claim > g.lim.MaxElems || g.elems > g.lim.MaxElems {
		return g.fail("aggregate of %d elements: over the limit of %d elements a reply", n, g.lim.MaxElems)
	}
	if claim == 0 {
		return g.done()
	}
	if len(g.pending) >= g.lim.MaxDepth {
		return g.fail("nesting deeper than %d", g.lim.MaxDepth)
	}
	g.pending = append(g.pending, claim)
	g.st = stType
	return nil
}

// done closes one element: it counts against its aggregate, and a finished
// aggregate counts against the one that holds it.
func (g *Guard) done() error {
	g.st = stType
	for len(g.pending) > 0 {
		top := len(g.pending) - 1
		g.pending[top]--
		if g.pending[top] > 0 {
			return nil
		}
		g.pending = g.pending[:top]
	}
	// A top-level reply is complete.
	g.elems, g.size = 0, 0
	g.replies++
	return nil
}

// Replies counts the top-level replies the stream has completed: a reader
// that owns the socket (the probe's poller) learns from it that a reply is
// all there, without parsing as the bytes come.
func (g *Guard) Replies() uint64 { return g.replies }

// Between reports whether the stream stands between two replies, with no
// part of the next one read.
func (g *Guard) Between() bool { return g.st == stType && len(g.pending) == 0 && g.size == 0 }

func bytesText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
