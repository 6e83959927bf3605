package engine

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, primaryID string
	primary, failed     bool
	slots               [][2]int
}

// parseClusterNodes reads CLUSTER NODES output. Nodes without an address
// (handshake, noaddr) are left out; importing/migrating slot markers are not
// ownership and are skipped.
func parseClusterNodes(text string) ([]clusterNode, error) {
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			if len(f) == 0 {
				continue
			}
			return nil, fmt.Errorf("cluster nodes: short line %q", clip(line))
		}
		flags := "," + f[2] + ","
		if strings.Contains(flags, ",handshake,") || strings.Contains(flags, ",noaddr,") {
			continue
		}
		addr := f[1]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		// Redis writes an IPv6 node without brackets (2001:db8::1:7000):
		// the port is after the last colon. A canonical host:port is kept;
		// anything else is kept as it came, for the guard to refuse and
		// count.
		if i := strings.LastIndexByte(addr, ':'); i >= 0 {
			host, port := strings.TrimSuffix(strings.TrimPrefix(addr[:i], "["), "]"), addr[i+1:]
			if host == "" || port == "0" {
				continue // no address yet
			}
			addr = net.JoinHostPort(host, port)
		}
		n := clusterNode{
			id:        f[0],
			addr:      addr,
			primaryID: f[3],
			primary:   strings.Contains(flags, ",master,"),
			failed:    strings.Contains(flags, ",fail,") || strings.Contains(flags, ",fail?,"),
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			lo, hi, ok := strings.Cut(s, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if ok {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || a < 0 || b >= slotCount || a > b {
				return nil, fmt.Errorf("cluster nodes: bad slot range %q", clip(s))
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out, nil
}

const slotCount = 16384

// crc16 is the CRC16-CCITT (XModem) Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func slotOf(tag string) int { return int(crc16(tag)) % slotCount }

// tagForSlots finds a hash tag, derived from base, whose slot the given
// ranges own, so a node's probe keys live on that node.
func tagForSlots(base string, ranges [][2]int) (string, bool) {
	if len(ranges) == 0 {
		return "", false
	}
	for i := range 1 << 20 {
		tag := base + "-" + strconv.Itoa(i)
		slot := slotOf(tag)
		for _, r := range ranges {
			if slot >= r[0] && slot <= r[1] {
				return tag, true
			}
		}
	}
	return "", false
}

// clusterEnabled asks INFO cluster whether the server runs in Cluster mode.
func clusterEnabled(ctx context.Context, c *redis.Client) (bool, error) {
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		return false, err
	}
	return strings.Contains(info, "cluster_enabled:1"), nil
}
