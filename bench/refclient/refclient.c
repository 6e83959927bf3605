/*
 * refclient: the least latency any client can measure for a paced PING, and
 * what the kernel saw of the same requests.
 *
 * One blocking TCP socket with TCP_NODELAY, raw RESP ("PING" as an inline
 * array), absolute-time pacing with clock_nanosleep(TIMER_ABSTIME) on
 * CLOCK_MONOTONIC, and a latency clock that starts just before write(2) and
 * stops when the full "+PONG\r\n" has been read. Four system calls per probe
 * (clock_nanosleep, write, recvmsg, recvmsg of the error queue); the clocks
 * are vDSO reads. make bench compares the prober against it.
 *
 * It charges latency by the prober's rule (prober/schedule.go chargeFrom):
 * from the moment it sends when it slept until the slot was due, so its own
 * timer lateness is excluded; from the slot's due time when the previous reply
 * came in after that (the slot was overdue), so a slow reply weighs on every
 * slot it delayed.
 *
 * Wire time: the socket asks the kernel for software timestamps
 * (SO_TIMESTAMPING, set after connect: the kernel refuses OPT_ID on a TCP
 * socket that is not connected). The reply's arrival is the RX stamp in the
 * SCM_TIMESTAMPING control message of the recvmsg that completes "+PONG\r\n";
 * the request's departure is the TX stamp on the error queue whose OPT_ID key
 * (ee_data: 0-based offset of the request's last byte, counted from when the
 * option was set) is this request's. The stamps are CLOCK_REALTIME: each is
 * moved onto CLOCK_MONOTONIC by the offset between the two clocks read right
 * after the reply. The wire time of a slot is RX - TX, or RX - due when the
 * slot was overdue. A sample with no stamp, a stamp for another request, or
 * stamps outside [write, read] (a clock step) falls back to the user-space
 * figure and is counted in wire_fallbacks.
 *
 * With REFCLIENT_WIRE_OUT set, the wire times (ns, one a line) are written
 * to that file too: make bench-burst runs one refclient a connection and
 * takes the quantiles of them all.
 *
 * usage: refclient HOST PORT SAMPLES RATE [WARMUP]
 * prints one line: samples=N mean_us=.. p50_us=.. p99_us=.. p999_us=.. max_us=..
 *   late_us=.. overdue=.. wire_mean_us=.. wire_p50_us=.. wire_p99_us=..
 *   wire_p999_us=.. wire_max_us=.. wire_fallbacks=..
 * (late_us: mean lateness of the timer wake-up on slots that were not overdue;
 * overdue: slots charged from their due time.)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char ping[] = "*1\r\n$4\r\nPING\r\n";
static const char pong[] = "+PONG\r\n";

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts_ns(&ts);
}

static int64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void sleep_until(int64_t t)
{
	struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
	int fd = -1, one = 1, rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, "refclient: %s:%s: %s\n", host, port, gai_strerror(rc));
		exit(1);
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		perror("refclient: connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* stamping is on; sent counts the bytes written since it was set */
static int stamping;
static uint32_t sent;

static void stamp_on(int fd)
{
	int v = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
		SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &v, sizeof v) == 0)
		stamping = 1;
	else
		fprintf(stderr, "refclient: SO_TIMESTAMPING: %s (every wire sample falls back)\n", strerror(errno));
}

/* the software stamp of a SCM_TIMESTAMPING message in m, or 0 */
static int64_t cmsg_stamp(struct msghdr *m, uint32_t *key, int *haskey)
{
	int64_t t = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING) {
			struct scm_timestamping tss;
			memcpy(&tss, CMSG_DATA(c), sizeof tss);
			t = ts_ns(&tss.ts[0]);
		} else if (key && ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
				   (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR))) {
			struct sock_extended_err ee;
			memcpy(&ee, CMSG_DATA(c), sizeof ee);
			if (ee.ee_errno == ENOMSG && ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING &&
			    ee.ee_info == SCM_TSTAMP_SND) {
				*key = ee.ee_data;
				*haskey = 1;
			}
		}
	}
	return t;
}

/* the TX stamp (realtime ns) with OPT_ID key want, or 0; drains the error
 * queue, so a stamp of an earlier request is never taken for a later one */
static int64_t tx_stamp(int fd, uint32_t want)
{
	int64_t found = 0;
	for (;;) {
		char ctl[256];
		struct msghdr m = {.msg_control = ctl, .msg_controllen = sizeof ctl};
		if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			if (errno == EINTR)
				continue;
			return found; /* EAGAIN: the queue is empty */
		}
		uint32_t key = 0;
		int haskey = 0;
		int64_t t = cmsg_stamp(&m, &key, &haskey);
		if (haskey && key == want && t)
			found = t;
	}
}

/* one PING round trip: returns when the reply is in (monotonic ns); *rx is
 * the kernel RX stamp of the recvmsg that completed it (realtime ns, 0 if
 * none) */
static int64_t probe(int fd, int64_t *rx)
{
	char buf[64], ctl[256];
	size_t got = 0;
	if (write(fd, ping, sizeof ping - 1) != (ssize_t)(sizeof ping - 1)) {
		perror("refclient: write");
		exit(1);
	}
	sent += sizeof ping - 1;
	*rx = 0;
	while (got < sizeof pong - 1) {
		struct iovec iov = {.iov_base = buf + got, .iov_len = sizeof buf - got};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
		ssize_t n = recvmsg(fd, &m, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "refclient: read: %s\n", n == 0 ? "connection closed" : strerror(errno));
			exit(1);
		}
		got += (size_t)n;
		*rx = stamping ? cmsg_stamp(&m, NULL, NULL) : 0;
	}
	int64_t done = now_ns();
	if (got != sizeof pong - 1 || memcmp(buf, pong, sizeof pong - 1) != 0) {
		fprintf(stderr, "refclient: unexpected reply %.*s\n", (int)got, buf);
		exit(1);
	}
	return done;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* nearest-rank quantile of sorted v */
static double q_us(const int64_t *v, long n, double q)
{
	long i = (long)(q * (double)n + 0.999999999) - 1;
	if (i < 0)
		i = 0;
	if (i >= n)
		i = n - 1;
	return (double)v[i] / 1e3;
}

struct stats {
	double mean, p50, p99, p999, max;
};

static struct stats summarise(int64_t *v, long n)
{
	double sum = 0;
	for (long i = 0; i < n; i++)
		sum += (double)v[i];
	qsort(v, (size_t)n, sizeof *v, cmp64);
	return (struct stats){sum / (double)n / 1e3, q_us(v, n, .5), q_us(v, n, .99), q_us(v, n, .999),
			      (double)v[n - 1] / 1e3};
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s HOST PORT SAMPLES RATE [WARMUP]\n", argv[0]);
		return 2;
	}
	long n = atol(argv[3]), warm = argc > 5 ? atol(argv[5]) : 20;
	double rate = atof(argv[4]);
	if (n <= 0 || rate <= 0 || warm < 0) {
		fprintf(stderr, "refclient: SAMPLES and RATE must be above 0\n");
		return 2;
	}
	int fd = dial(argv[1], argv[2]);
	stamp_on(fd);
	int64_t *lat = malloc(sizeof *lat * (size_t)n), *wire = malloc(sizeof *wire * (size_t)n);
	if (!lat || !wire)
		return 1;
	int64_t interval = (int64_t)(1e9 / rate), due = now_ns() + interval, done = 0;
	double late = 0;
	long overdue = 0, fallbacks = 0;
	for (long k = -warm; k < n; k++, due += interval) {
		int64_t start, rx;
		int late_slot = done > due;
		if (late_slot) {
			start = due; /* the previous reply held this slot up */
			if (k >= 0)
				overdue++;
		} else {
			sleep_until(due);
			start = now_ns();
			if (k >= 0)
				late += (double)(start - due);
		}
		done = probe(fd, &rx);
		/* after the measurement: the stamps, and the realtime - monotonic
		 * offset read between two monotonic reads */
		int64_t tx = stamping ? tx_stamp(fd, sent - 1) : 0;
		if (k < 0)
			continue;
		lat[k] = done - start;
		wire[k] = lat[k];
		if (tx && rx) {
			int64_t a = now_ns(), r = clock_ns(CLOCK_REALTIME), b = now_ns();
			int64_t off = r - a / 2 - b / 2;
			int64_t txm = tx - off, rxm = rx - off, slack = 2000;
			/* the kernel stamps lie between our write and our read
			 * unless the realtime clock stepped */
			if (txm >= (late_slot ? due : start) - slack && rxm >= txm && rxm <= done + slack)
				wire[k] = rxm - (late_slot ? due : txm);
			else
				fallbacks++;
		} else {
			fallbacks++;
		}
	}
	close(fd);
	const char *out = getenv("REFCLIENT_WIRE_OUT");
	if (out && *out) {
		FILE *f = fopen(out, "w");
		if (!f) {
			perror("refclient: REFCLIENT_WIRE_OUT");
			return 1;
		}
		for (long i = 0; i < n; i++)
			fprintf(f, "%lld\n", (long long)wire[i]);
		if (fclose(f) != 0) {
			perror("refclient: REFCLIENT_WIRE_OUT");
			return 1;
		}
	}
	struct stats u = summarise(lat, n), w = summarise(wire, n);
	printf("samples=%ld mean_us=%.1f p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f late_us=%.1f overdue=%ld "
	       "wire_mean_us=%.1f wire_p50_us=%.1f wire_p99_us=%.1f wire_p999_us=%.1f wire_max_us=%.1f wire_fallbacks=%ld\n",
	       n, u.mean, u.p50, u.p99, u.p999, u.max, n > overdue ? late / (double)(n - overdue) / 1e3 : 0, overdue,
	       w.mean, w.p50, w.p99, w.p999, w.max, fallbacks);
	free(lat);
	free(wire);
	return 0;
}
