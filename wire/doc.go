// Package wire is the layer beneath every connection the prober opens to
// Redis for probes and load: the kernel's timestamps of each write and
// read (SO_TIMESTAMPING) and their matching, the clocks a request can be
// timed by, and the parts of an epoll(7) event loop (a raw wait with
// nanosecond timeouts, a timer heap, raw non-blocking writes) that the
// probe's loop (prober.Poller) and the burst's loop
// (prober/burst) are both built from.
//
// Why an event loop at all: Go's netpoller sleeps at least a millisecond
// for any timer under a millisecond, and every request on a goroutine is
// two trips through the scheduler. A loop on a locked thread, waiting in
// epoll_pwait2 with a nanosecond timeout, sends on time and reads the
// reply as a C client does; the kernel's stamps then take what is left of
// the client's own scheduling out of the figure.
package wire
