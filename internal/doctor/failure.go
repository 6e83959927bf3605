package doctor

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/internal/resp"
)

// Why a target gave no INFO, as the report names it (TargetReport.Failure
// and the critical id target/<failure>): each needs another fix.
const (
	// FailureUnreachable: no connection, or it closed or timed out.
	FailureUnreachable = "unreachable"
	// FailureCredentials: Redis answered and refused our credentials
	// (WRONGPASS, NOAUTH): the address is right, the password is not.
	FailureCredentials = "credentials_refused"
	// FailureNotRedis: something answered that does not speak RESP at
	// all (an HTTP server's "HTTP/1.1 400"): the address is wrong.
	FailureNotRedis = "not_redis"
	// FailureRefused: Redis answered INFO with another error (a user
	// without the right to run it, a server still loading).
	FailureRefused = "error_reply"
)

// failureOf says why err kept a target from answering INFO.
func failureOf(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range []string{"WRONGPASS", "NOAUTH", "ERR invalid password", "ERR AUTH"} {
			if strings.HasPrefix(msg, p) {
				return FailureCredentials
			}
		}
		return FailureRefused
	}
	var ge *resp.Error
	// The guard refuses the first byte of a reply that is no RESP type:
	// whatever sent it is not Redis. Other refusals (a length over the
	// limit) come from a server that speaks RESP, if oddly.
	if errors.As(err, &ge) && strings.HasPrefix(ge.What, "unknown reply type byte") {
		return FailureNotRedis
	}
	return FailureUnreachable
}

// failureHeading is the text report's heading for a target that failed.
func failureHeading(failure string) string {
	switch failure {
	case FailureCredentials:
		return "REFUSED OUR CREDENTIALS (WRONGPASS/NOAUTH): reachable, but the password or user is wrong"
	case FailureNotRedis:
		return "NOT A REDIS SERVER: something answered that does not speak RESP (a wrong port?)"
	case FailureRefused:
		return "ANSWERED WITH AN ERROR"
	}
	return "NOT REACHABLE (no connection, or it closed or timed out)"
}
