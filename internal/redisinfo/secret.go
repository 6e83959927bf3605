package redisinfo

import "strings"

// secretParamWords mark the CONFIG parameters whose values are secrets:
// a name holding one of them (requirepass, masterauth, tls-key-file-pass,
// tls-client-key-file-pass, a module's ...-password) has its value never
// read into a metric, a log, a page or a comparison. Matching parts of the
// name, not a list of names, keeps a parameter a later Redis, Valkey or
// module adds hidden too.
var secretParamWords = []string{"pass", "auth"}

// SecretParam tells a CONFIG parameter whose value is a secret. The
// change watcher keeps such values as a hash and says only that they
// changed; a comparison of reports leaves them out.
func SecretParam(name string) bool {
	for _, w := range secretParamWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}
