package prober

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Endpoint says how to reach one Redis server. Password is a secret: it is
// only ever handed to go-redis, never formatted into an error or a log line.
type Endpoint struct {
	Network  string // "tcp" or "unix"
	Addr     string // host:port or socket path
	TLS      *tls.Config
	Username string
	Password string
	DB       int
	// ReadOnly sends READONLY on every new connection: a Cluster replica
	// then serves reads of its primary's slots instead of redirecting.
	ReadOnly bool
}

// String names the endpoint without credentials.
func (e Endpoint) String() string {
	if e.Network == "unix" {
		return "unix://" + e.Addr
	}
	if e.TLS != nil {
		return "rediss://" + e.Addr
	}
	return "redis://" + e.Addr
}

// ClientOptions returns go-redis options for this endpoint with the prober's
// conventions: no retries (a probe reports what happened, it does not hide a
// failure behind a retry), no client-name chatter, no maintenance push
// notifications, every reply bounded (resp.Control), and the given timeout for
// dial, read and write, or the caller's context deadline when it is sooner.
func (e Endpoint) ClientOptions(timeout time.Duration, poolSize int) *redis.Options {
	opts := &redis.Options{
		Network:       e.Network,
		Addr:          e.Addr,
		Username:      e.Username,
		Password:      e.Password,
		DB:            e.DB,
		TLSConfig:     e.TLS,
		Protocol:      2,
		DialTimeout:   timeout,
		ReadTimeout:   timeout,
		WriteTimeout:  timeout,
		PoolSize:      poolSize,
		PoolTimeout:   timeout,
		MaxRetries:    -1,
		DialerRetries: 1, // a probe times one dial, not five with back-off
		// A caller's deadline shorter than the timeout bounds the call:
		// go-redis otherwise keeps only ReadTimeout, so a burst's 200 ms
		// INFO check on a paused server held an aborted burst until the
		// server answered.
		ContextTimeoutEnabled: true,
		// Probe and control replies are small, and a longer one still
		// streams through (a bulk is read straight into its own slice);
		// go-redis's default 32 KiB per direction per connection would be
		// most of the prober's memory at a thousand targets.
		ReadBufferSize:  1024,
		WriteBufferSize: 1024,
		// Seeding, clean-up and INFO pipelines run on the main pool, not
		// on a second pool with 128 KiB buffers per connection.
		PipelinePoolSize:         -1,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		// Every reply is checked beneath go-redis (see guardedConn); the
		// probe's own connections replace this with stricter limits.
		Dialer: e.GuardedDialer(timeout),
	}
	if e.ReadOnly {
		opts.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
			return cn.ReadOnly(ctx).Err()
		}
	}
	return opts
}

// NewClient returns an ordinary go-redis client (netpoller sockets) for
// control traffic: seeding and deleting probe keys, INFO, bursts.
func (e Endpoint) NewClient(timeout time.Duration, poolSize int) *redis.Client {
	return redis.NewClient(e.ClientOptions(timeout, poolSize))
}
