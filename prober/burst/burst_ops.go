package burst

import (
	"strconv"

	"github.com/redis-prober/redis-prober/internal/resp"
	"github.com/redis-prober/redis-prober/prober"
)

// Key spaces of a burst: each command family has its own, so a GET never
// meets a hash (WRONGTYPE) and a reader reads what its writer wrote.
const (
	kindString  byte = 's'
	kindCounter byte = 'c'
	kindHash    byte = 'h'
	kindList    byte = 'l'
	kindZset    byte = 'z'
)

// Bounds of the burst's collections, so their size never depends on the
// length of the burst (lists are bounded by the bytes written instead).
const (
	hashFields  = 16 // HSET picks one of f0..f15
	zsetMembers = 64 // ZADD picks one of m0..m63
	rangeLen    = 10 // LRANGE and ZREVRANGE read at most this many
	mgetKeys    = 4  // MGET reads this many string keys
)

// Pre-encoded arguments, so encoding a request copies bytes and formats
// at most a key number.
var (
	hashFieldArgs  = bulkNames("f", hashFields)
	zsetMemberArgs = bulkNames("m", zsetMembers)
	zsetScoreArgs  = bulkNames("", zsetMembers)
	argPX          = resp.BulkString("PX")
	argZero        = resp.BulkString("0")
	argRangeEnd    = resp.BulkString(strconv.Itoa(rangeLen - 1))
	argWithScores  = resp.BulkString("WITHSCORES")
	argOne         = resp.BulkString("1")
	argScript      = resp.BulkString(prober.EvalScript)
)

func bulkNames(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = resp.BulkString(prefix + strconv.Itoa(i))
	}
	return out
}

// commandHead pre-encodes the array header and the command name.
func commandHead(name string, argc int) []byte {
	return resp.AppendBulk(resp.AppendHeader(nil, '*', argc), []byte(name))
}

// reqArgs are the variable parts of one request.
type reqArgs struct {
	keys  [mgetKeys][]byte
	value []byte
	ttl   []byte // the TTL in milliseconds, pre-encoded as a bulk
	elem  int    // picks the hash field or sorted-set member
}

// How a reply tells a hit from a miss.
const (
	hitsNone  = iota
	hitsBulk  // a nil bulk is a miss
	hitsArray // an empty array is a miss
	hitsMulti // each nil element is a miss
)

// burstOp is one command a burst can send.
type burstOp struct {
	name  string
	write bool
	kind  byte
	keys  int // keys one request touches
	// maxElems and elemSize bound the memory of one key (elemSize 0: the
	// value size), for the memory guard's estimate.
	maxElems, elemSize int64
	// ttlInline: the write sets its own TTL (SET PX); other writes are
	// followed by PEXPIRE the first time they touch a key.
	ttlInline bool
	hits      int
	encode    func(b []byte, a *reqArgs) []byte
}

func encoder(name string, argc int, rest func(b []byte, a *reqArgs) []byte) func([]byte, *reqArgs) []byte {
	head := commandHead(name, argc)
	return func(b []byte, a *reqArgs) []byte { return rest(append(b, head...), a) }
}

var burstOps = []burstOp{
	{name: "get", kind: kindString, keys: 1, hits: hitsBulk,
		encode: encoder("GET", 2, func(b []byte, a *reqArgs) []byte { return resp.AppendBulk(b, a.keys[0]) })},
	{name: "set", write: true, kind: kindString, keys: 1, maxElems: 1, ttlInline: true,
		encode: encoder("SET", 5, func(b []byte, a *reqArgs) []byte {
			b = resp.AppendBulk(resp.AppendBulk(b, a.keys[0]), a.value)
			return append(append(b, argPX...), a.ttl...)
		})},
	{name: "incr", write: true, kind: kindCounter, keys: 1, maxElems: 1, elemSize: 8,
		encode: encoder("INCR", 2, func(b []byte, a *reqArgs) []byte { return resp.AppendBulk(b, a.keys[0]) })},
	{name: "hset", write: true, kind: kindHash, keys: 1, maxElems: hashFields,
		encode: encoder("HSET", 4, func(b []byte, a *reqArgs) []byte {
			b = append(resp.AppendBulk(b, a.keys[0]), hashFieldArgs[a.elem%hashFields]...)
			return resp.AppendBulk(b, a.value)
		})},
	{name: "hgetall", kind: kindHash, keys: 1, hits: hitsArray,
		encode: encoder("HGETALL", 2, func(b []byte, a *reqArgs) []byte { return resp.AppendBulk(b, a.keys[0]) })},
	{name: "lpush", write: true, kind: kindList, keys: 1, maxElems: 1,
		encode: encoder("LPUSH", 3, func(b []byte, a *reqArgs) []byte {
			return resp.AppendBulk(resp.AppendBulk(b, a.keys[0]), a.value)
		})},
	{name: "lrange", kind: kindList, keys: 1, hits: hitsArray,
		encode: encoder("LRANGE", 4, func(b []byte, a *reqArgs) []byte {
			return append(append(resp.AppendBulk(b, a.keys[0]), argZero...), argRangeEnd...)
		})},
	{name: "zadd", write: true, kind: kindZset, keys: 1, maxElems: zsetMembers, elemSize: 24,
		encode: encoder("ZADD", 4, func(b []byte, a *reqArgs) []byte {
			b = append(resp.AppendBulk(b, a.keys[0]), zsetScoreArgs[a.elem%zsetMembers]...)
			return append(b, zsetMemberArgs[(a.elem/zsetMembers)%zsetMembers]...)
		})},
	{name: "zrevrange", kind: kindZset, keys: 1, hits: hitsArray,
		encode: encoder("ZREVRANGE", 5, func(b []byte, a *reqArgs) []byte {
			b = append(append(resp.AppendBulk(b, a.keys[0]), argZero...), argRangeEnd...)
			return append(b, argWithScores...)
		})},
	{name: "mget", kind: kindString, keys: mgetKeys, hits: hitsMulti,
		encode: encoder("MGET", 1+mgetKeys, func(b []byte, a *reqArgs) []byte {
			for _, k := range a.keys {
				b = resp.AppendBulk(b, k)
			}
			return b
		})},
	{name: "eval", kind: kindString, keys: 1, hits: hitsBulk,
		encode: encoder("EVAL", 4, func(b []byte, a *reqArgs) []byte {
			return resp.AppendBulk(append(append(b, argScript...), argOne...), a.keys[0])
		})},
}

// encodeExpire appends the PEXPIRE that gives a new key its TTL.
var encodeExpire = encoder("PEXPIRE", 3, func(b []byte, a *reqArgs) []byte {
	return append(resp.AppendBulk(b, a.keys[0]), a.ttl...)
})

// hitsOf counts hits and misses from a reply's figures.
func (op *burstOp) hitsOf(n, nils int64, err error) (hit, miss int) {
	if err != nil {
		return 0, 0
	}
	switch op.hits {
	case hitsBulk:
		if n < 0 {
			return 0, 1
		}
		return 1, 0
	case hitsArray:
		if n > 0 {
			return 1, 0
		}
		return 0, 1
	case hitsMulti:
		// A nil array (or any reply a broken server sends) holds no
		// hits: counts never go negative.
		if n <= 0 {
			return 0, 0
		}
		nils = min(max(nils, 0), n)
		return int(n - nils), int(nils)
	}
	return 0, 0
}

// CommandNames lists the commands a burst mix accepts.
func CommandNames() []string {
	out := make([]string, len(burstOps))
	for i, op := range burstOps {
		out[i] = op.name
	}
	return out
}

// CountsHits tells whether a burst command counts hits and misses (a GET
// whose reply is nil is a miss); false for one a burst does not send.
func CountsHits(name string) bool {
	i := burstOpIndex(name)
	return i >= 0 && burstOps[i].hits != hitsNone
}

func burstOpIndex(name string) int {
	for i, op := range burstOps {
		if op.name == name {
			return i
		}
	}
	return -1
}

// burstKeyPrefix is where every key of one key space of a burst starts.
func burstKeyPrefix(ns prober.Namespace, kind byte) string {
	return ns.Key("burst:" + string(kind) + ":")
}

// KeyPattern matches every burst key of a namespace (and no probe key),
// for the SCAN safety net.
func KeyPattern(ns prober.Namespace) string {
	return ns.PatternFor("burst:")
}

// valueBytes is the shared source of every value a burst writes: a fixed
// printable pattern, as long as the largest value.
func valueBytes(size int) []byte { return []byte(prober.ProbeValue(size)) }
