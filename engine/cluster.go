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

// tagCache remembers the tag of each slot set between refreshes, so a
// stable Cluster costs no tag search after the first, and finds the tags of
// many new slot sets in one pass: a search per node costs up to 16384 hashes
// for a node with one slot, seconds of CPU for a thousand such nodes.
type tagCache struct {
	base string
	tags map[string]string // slot ranges → tag
}

// manyTags is the number of uncached slot sets beyond which one pass over
// the tags (about 170,000 hashes, tens of milliseconds) is cheaper.
const manyTags = 16

// lookup returns the tag of every slot set, as tagForSlots would find it
// ("" for none), and keeps only these sets in the cache.
func (c *tagCache) lookup(sets [][][2]int) []string {
	out := make([]string, len(sets))
	keys := make([]string, len(sets))
	var missing []int
	for i, r := range sets {
		keys[i] = fmt.Sprint(r)
		if tag, ok := c.tags[keys[i]]; ok {
			out[i] = tag
		} else {
			missing = append(missing, i)
		}
	}
	var first []int32 // first[slot]: the lowest tag index hashing to slot
	if len(missing) > manyTags {
		first = firstTags(c.base)
	}
	for _, i := range missing {
		if first == nil {
			out[i], _ = tagForSlots(c.base, sets[i])
			continue
		}
		best := int32(-1)
		for _, r := range sets[i] {
			for s := r[0]; s <= r[1]; s++ {
				if v := first[s]; v >= 0 && (best < 0 || v < best) {
					best = v
				}
			}
		}
		if best >= 0 {
			out[i] = c.base + "-" + strconv.Itoa(int(best))
		}
	}
	next := make(map[string]string, len(sets))
	for i, k := range keys {
		next[k] = out[i]
	}
	c.tags = next
	return out
}

// firstTags maps every slot to the lowest i whose tag base-i hashes to it
// (-1 if none within tagForSlots's bound).
func firstTags(base string) []int32 {
	first := make([]int32, slotCount)
	for i := range first {
		first[i] = -1
	}
	left := slotCount
	for i := 0; i < 1<<20 && left > 0; i++ {
		if s := slotOf(base + "-" + strconv.Itoa(i)); first[s] < 0 {
			first[s] = int32(i)
			left--
		}
	}
	return first
}

// clusterEnabled asks INFO cluster whether the server runs in Cluster mode.
func clusterEnabled(ctx context.Context, c *redis.Client) (bool, error) {
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		return false, err
	}
	return strings.Contains(info, "cluster_enabled:1"), nil
}
