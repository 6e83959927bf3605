package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redis-prober/redis-prober/prober"
)

// sentinelDiscoverer follows the primary that the Sentinels name, and its
// replicas when asked to. A change of primary is a failover: it is counted
// in redis_prober_changes_total{kind="failover"} and logged.
type sentinelDiscoverer struct {
	t         Target
	clients   []*redis.SentinelClient
	metrics   *prober.Metrics
	log       *slog.Logger
	guard     *nodeGuard
	primary   string
	lastAsked int
}

func newSentinelDiscoverer(t Target, m *prober.Metrics, log *slog.Logger, guard *nodeGuard) *sentinelDiscoverer {
	d := &sentinelDiscoverer{t: t, metrics: m, log: log, guard: guard}
	if m != nil {
		m.InitChanges(t.Name, "failover")
	}
	for _, ep := range t.Sentinel.Sentinels {
		opts := ep.ClientOptions(t.Probe.Timeout, 1)
		d.clients = append(d.clients, redis.NewSentinelClient(&redis.Options{
			Network: opts.Network, Addr: opts.Addr, Username: opts.Username, Password: opts.Password,
			TLSConfig: opts.TLSConfig, Protocol: 2, DialTimeout: opts.DialTimeout,
			ReadTimeout: opts.ReadTimeout, WriteTimeout: opts.WriteTimeout, PoolSize: 1,
			MaxRetries: -1, DisableIdentity: true, ContextTimeoutEnabled: opts.ContextTimeoutEnabled,
			Dialer: ep.GuardedDialer(t.Probe.Timeout),
		}))
	}
	return d
}

func (d *sentinelDiscoverer) close() {
	for _, c := range d.clients {
		_ = c.Close()
	}
}

// discover asks the Sentinels in turn, starting with the one that answered
// last, and takes the first answer.
func (d *sentinelDiscoverer) discover(ctx context.Context) ([]nodeSpec, error) {
	var errs []error
	for i := range d.clients {
		idx := (d.lastAsked + i) % len(d.clients)
		c := d.clients[idx]
		addr, err := c.GetMasterAddrByName(ctx, d.t.Sentinel.MasterName).Result()
		if err != nil || len(addr) != 2 {
			errs = append(errs, fmt.Errorf("sentinel %s: %w", d.t.Sentinel.Sentinels[idx].Addr, orNoAnswer(err)))
			continue
		}
		d.lastAsked = idx
		primary := net.JoinHostPort(addr[0], addr[1])
		cands := []candidate{{addr: primary}}
		if d.t.Sentinel.ProbeReplicas {
			replicas, err := c.Replicas(ctx, d.t.Sentinel.MasterName).Result()
			var refused redis.Error
			if err != nil && !errors.As(err, &refused) {
				// The answer did not come (a timeout, a dropped
				// connection): this round knows nothing of the
				// replicas, and taking none would stop their probes
				// until the next round. A Sentinel that refuses the
				// command has none to give, and the primary stands.
				errs = append(errs, fmt.Errorf("sentinel %s: replicas: %w", d.t.Sentinel.Sentinels[idx].Addr, err))
				continue
			}
			for _, r := range replicas {
				if r["flags"] == "slave" && r["ip"] != "" && r["port"] != "" {
					cands = append(cands, candidate{addr: net.JoinHostPort(r["ip"], r["port"]), replica: true})
				}
			}
		}
		// The guard refuses what may not be probed (a primary too): no
		// label, connection or credentials for those.
		var specs []nodeSpec
		for _, c := range d.guard.admit(cands) {
			if !c.replica {
				d.follow(c.addr)
			}
			specs = append(specs, d.spec(c.addr, c.replica))
		}
		return specs, nil
	}
	return nil, errors.Join(errs...)
}

// follow notes the primary the Sentinels name; a new one is a failover.
func (d *sentinelDiscoverer) follow(primary string) {
	if d.primary != "" && primary != d.primary {
		d.metrics.Change(d.t.Name, "failover", time.Now())
		d.log.Warn("failover: Sentinel names a new primary", "old", d.primary, "new", primary)
	}
	d.primary = primary
}

func (d *sentinelDiscoverer) spec(addr string, readOnly bool) nodeSpec {
	ep := d.t.Endpoint
	ep.Network, ep.Addr = "tcp", addr
	return nodeSpec{node: addr, ep: ep, tag: d.t.Probe.Namespace.Tag, readOnly: readOnly}
}

func orNoAnswer(err error) error {
	if err == nil {
		return errors.New("no address in the answer")
	}
	return err
}
