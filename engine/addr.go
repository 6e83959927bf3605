package engine

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis-prober/redis-prober/prober"
)

const defaultPort = "6379"

// ParseAddr turns a --redis.addr value into an endpoint and the target name
// used as the `target` label. It accepts redis://, rediss:// and unix:// URLs
// and bare host:port. A password inside the address is refused: it would sit
// in argv and in process listings.
func ParseAddr(raw string) (string, prober.Endpoint, error) {
	var ep prober.Endpoint
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", ep, fmt.Errorf("empty address")
	}
	if !strings.Contains(s, "://") {
		host, port, err := splitHostPort(s)
		if err != nil {
			return "", ep, err
		}
		ep.Network, ep.Addr = "tcp", net.JoinHostPort(host, port)
		return ep.Addr, ep, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error repeats the input, which may hold a password.
		return "", ep, fmt.Errorf("not a valid URL")
	}
	if _, has := u.User.Password(); has {
		return "", ep, fmt.Errorf("the address holds a password; pass it with --redis.password-file or the REDIS_PASSWORD environment variable instead")
	}
	if u.User != nil {
		ep.Username = u.User.Username()
	}
	if v := u.Query().Get("db"); v != "" {
		db, err := strconv.Atoi(v)
		if err != nil || db < 0 {
			return "", ep, fmt.Errorf("db %q is not a database number", v)
		}
		ep.DB = db
	}
	switch u.Scheme {
	case "unix":
		p := u.Path
		if p == "" {
			p = u.Opaque
		}
		if p == "" {
			return "", ep, fmt.Errorf("unix:// address without a socket path")
		}
		ep.Network, ep.Addr = "unix", p
		return "unix://" + p, ep, nil
	case "redis", "rediss":
		if u.Host == "" {
			return "", ep, fmt.Errorf("%s:// address without a host", u.Scheme)
		}
		host, port, err := splitHostPort(u.Host)
		if err != nil {
			return "", ep, err
		}
		if path := strings.Trim(u.Path, "/"); path != "" {
			db, err := strconv.Atoi(path)
			if err != nil || db < 0 {
				return "", ep, fmt.Errorf("path %q is not a database number", u.Path)
			}
			ep.DB = db
		}
		ep.Network, ep.Addr = "tcp", net.JoinHostPort(host, port)
		if u.Scheme == "rediss" {
			ep.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		name := ep.Addr
		if ep.DB != 0 {
			name += "/" + strconv.Itoa(ep.DB)
		}
		return name, ep, nil
	default:
		return "", ep, fmt.Errorf("unsupported scheme %q (want redis://, rediss:// or unix://)", u.Scheme)
	}
}

func splitHostPort(s string) (string, string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		// No port given: the default one.
		if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
			return "", "", fmt.Errorf("IPv6 address %q needs brackets, as in [::1]:6379", s)
		}
		host, port = strings.Trim(s, "[]"), defaultPort
	}
	if host == "" {
		return "", "", fmt.Errorf("address %q has no host", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return host, port, nil
}
