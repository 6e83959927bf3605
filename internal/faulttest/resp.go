package faulttest

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
)

// Handler answers one command (its arguments, the name upper-cased) with the
// raw bytes to send back. A nil reply closes the connection; a Reply with
// Stream set writes Stream's output until it returns an error or the client
// hangs up (for replies too large to hold: a 100 MB line, a million nested
// headers).
type Handler func(args []string) Reply

// Reply is what a Handler sends for one command.
type Reply struct {
	Bytes  []byte
	Stream func(w io.Writer) error
	Close  bool // hang up after sending
}

// Bytes is a Reply of fixed bytes.
func Bytes(s string) Reply { return Reply{Bytes: []byte(s)} }

// RESP is a scripted Redis: it reads RESP2 commands (arrays of bulk strings,
// or inline commands) and lets h answer each with any bytes at all, valid or
// hostile. Bad input from the client closes that connection.
func RESP(t testing.TB, h Handler) *Listener {
	t.Helper()
	return listen(t, func(c net.Conn) {
		r := bufio.NewReaderSize(c, 64<<10)
		w := bufio.NewWriter(c)
		for {
			args, err := readCommand(r)
			if err != nil || len(args) == 0 {
				return
			}
			args[0] = strings.ToUpper(args[0])
			rep := h(args)
			if rep.Bytes == nil && rep.Stream == nil {
				return
			}
			if _, err := w.Write(rep.Bytes); err != nil {
				return
			}
			if rep.Stream != nil {
				if err := rep.Stream(w); err != nil {
					return
				}
			}
			if err := w.Flush(); err != nil || rep.Close {
				return
			}
		}
	})
}

// Handshake answers what a client sends on connect (HELLO, AUTH, CLIENT,
// SELECT, READONLY, PING) like a Redis 7 with no password, and passes every
// other command to h. Most hostile cases only want to lie about one reply.
func Handshake(h Handler) Handler {
	return func(args []string) Reply {
		switch args[0] {
		case "HELLO":
			return Bytes("-ERR unknown command 'HELLO'\r\n")
		case "AUTH", "SELECT", "READONLY", "CLIENT":
			return Bytes("+OK\r\n")
		}
		return h(args)
	}
}

// readCommand reads one client command; the sizes it accepts are small, as a
// prober's commands are.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > 1024 {
		return nil, io.ErrUnexpectedEOF
	}
	args := make([]string, 0, n)
	for range n {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimRight(hdr, "\r\n")[1:])
		if err != nil || size < 0 || size > 1<<20 {
			return nil, io.ErrUnexpectedEOF
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args = append(args, string(buf[:size]))
	}
	return args, nil
}

// Refusing is a server that writes line to every connection as it accepts
// it and hangs up without reading, as a real Redis does to a client it
// refuses (protected mode's -DENIED, -ERR max number of clients reached):
// the client's first write may fail before it reads why.
func Refusing(t testing.TB, line string) *Listener {
	t.Helper()
	return listen(t, func(c net.Conn) { _, _ = io.WriteString(c, line) })
}
