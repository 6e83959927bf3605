/*
 * refclient: the least latency any client can measure for a paced PING.
 *
 * One blocking TCP socket with TCP_NODELAY, raw RESP ("PING" as an inline
 * array), absolute-time pacing with clock_nanosleep(TIMER_ABSTIME) on
 * CLOCK_MONOTONIC, and a latency clock that starts just before write(2) and
 * stops when the full "+PONG\r\n" has been read. Three system calls per probe
 * (clock_nanosleep, write, read), the same as redis-cli. make bench compares
 * the prober against it.
 *
 * It charges latency by the prober's rule (prober/schedule.go chargeFrom):
 * from the moment it sends when it slept until the slot was due, so its own
 * timer lateness is excluded; from the slot's due time when the previous reply
 * came in after that (the slot was overdue), so a slow reply weighs on every
 * slot it delayed.
 *
 * usage: refclient HOST PORT SAMPLES RATE [WARMUP]
 * prints: samples=N mean_us=.. p50_us=.. p99_us=.. p999_us=.. max_us=.. late_us=.. overdue=..
 * (late_us: mean lateness of the timer wake-up on slots that were not overdue;
 * overdue: slots charged from their due time.)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
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

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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

/* one PING round trip; returns when the reply is in (ns) */
static int64_t probe(int fd)
{
	char buf[64];
	size_t got = 0;
	if (write(fd, ping, sizeof ping - 1) != (ssize_t)(sizeof ping - 1)) {
		perror("refclient: write");
		exit(1);
	}
	while (got < sizeof pong - 1) {
		ssize_t n = read(fd, buf + got, sizeof buf - got);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			fprintf(stderr, "refclient: read: %s\n", n == 0 ? "connection closed" : strerror(errno));
			exit(1);
		}
		got += (size_t)n;
	}
	if (memcmp(buf, pong, sizeof pong - 1) != 0) {
		fprintf(stderr, "refclient: unexpected reply %.*s\n", (int)got, buf);
		exit(1);
	}
	return now_ns();
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
	int64_t *lat = malloc(sizeof *lat * (size_t)n);
	if (!lat)
		return 1;
	int64_t interval = (int64_t)(1e9 / rate), due = now_ns() + interval, done = 0;
	double sum = 0, late = 0;
	long overdue = 0;
	for (long k = -warm; k < n; k++, due += interval) {
		int64_t start;
		if (done > due) {
			start = due; /* the previous reply held this slot up */
			if (k >= 0)
				overdue++;
		} else {
			sleep_until(due);
			start = now_ns();
			if (k >= 0)
				late += (double)(start - due);
		}
		done = probe(fd);
		if (k < 0)
			continue;
		lat[k] = done - start;
		sum += (double)lat[k];
	}
	close(fd);
	qsort(lat, (size_t)n, sizeof *lat, cmp64);
	printf("samples=%ld mean_us=%.1f p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f late_us=%.1f overdue=%ld\n",
	       n, sum / (double)n / 1e3, q_us(lat, n, .5), q_us(lat, n, .99), q_us(lat, n, .999),
	       (double)lat[n - 1] / 1e3, n > overdue ? late / (double)(n - overdue) / 1e3 : 0, overdue);
	free(lat);
	return 0;
}
