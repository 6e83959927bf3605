package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The YAML decoder refuses an unknown field (KnownFields) with
// "line 3: field adr not found in type config.Target": the Go type, not
// where the user wrote it. unknownField says it again in the user's terms:
// the YAML path of the mapping that holds the field (from the node tree),
// and the known field nearest to the typo (from the yaml tags of the Go
// type at that path, by reflection, so a new field needs no list here).
// The decoder stays the judge of what is unknown; this only rewords it.

// yamlUnknownField is yaml.v3's message for an unknown field.
var yamlUnknownField = regexp.MustCompile(`(?s)^line (\d+): field (.*) not found in type \S+$`)

// passwordSpellings are other names a user may give the password; in a
// mapping that has password_file they point there.
var passwordSpellings = []string{"password", "pass", "passwd", "pwd", "requirepass"}

// unknownField rewords one of the decoder's errors (an entry of
// yaml.TypeError.Errors) about document root, decoded into a value of type
// t. where renders the path of the mapping holding the field ("" for the
// top level). ok is false when msg is not about an unknown field.
func unknownField(root *yaml.Node, t reflect.Type, msg string, where func(path []any) string) (string, bool) {
	m := yamlUnknownField.FindStringSubmatch(strings.TrimSpace(msg))
	if m == nil {
		return "", false
	}
	line, err := strconv.Atoi(m[1])
	if err != nil {
		return "", false
	}
	key := m[2]
	at, found := findUnknown(root, t, nil, line, key)
	if !found {
		// The tree and the decoder disagree (it should not happen): the
		// line and the field, still without the Go type.
		return fmt.Sprintf("line %d: unknown field %q", line, key), true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "line %d: ", line)
	if p := where(at.path); p != "" {
		b.WriteString(p + ": ")
	}
	if file := fileFieldFor(key, at.known); file != "" {
		fmt.Fprintf(&b, "%s is not read from the config file; put it in a file and name it with %s", strings.ToLower(key), file)
		return b.String(), true
	}
	fmt.Fprintf(&b, "unknown field %q", key)
	if s := nearest(key, at.known); s != "" {
		fmt.Fprintf(&b, " (did you mean %s?)", s)
	}
	return b.String(), true
}

// unknownAt is where an unknown field was written: the path of the mapping
// that holds it, and the fields that mapping knows.
type unknownAt struct {
	path  []any
	known []string
}

// findUnknown walks the node tree beside the Go type it decodes into, in
// document order, to the first key named key on line line that the type
// at that place does not know. Aliases are not followed: the path is where
// the user wrote the key.
func findUnknown(n *yaml.Node, t reflect.Type, path []any, line int, key string) (unknownAt, bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if at, ok := findUnknown(c, t, path, line, key); ok {
				return at, true
			}
		}
	case yaml.SequenceNode:
		if t == nil || (t.Kind() != reflect.Slice && t.Kind() != reflect.Array) {
			return unknownAt{}, false
		}
		for i, c := range n.Content {
			if at, ok := findUnknown(c, t.Elem(), append(path[:len(path):len(path)], i), line, key); ok {
				return at, true
			}
		}
	case yaml.MappingNode:
		if t == nil {
			return unknownAt{}, false
		}
		var fields structFields
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			fields = structFields{rest: t.Elem()}
		default:
			return unknownAt{}, false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				continue
			}
			ft, known := fields.byName[k.Value]
			if !known {
				ft = fields.rest
			}
			if ft == nil {
				if k.Line == line && k.Value == key {
					return unknownAt{path: path, known: fields.names}, true
				}
				continue
			}
			if at, ok := findUnknown(v, ft, append(path[:len(path):len(path)], k.Value), line, key); ok {
				return at, true
			}
		}
	}
	return unknownAt{}, false
}

// structFields are the keys a struct decodes, as yaml.v3 reads its tags.
type structFields struct {
	names  []string                // in declaration order
	byName map[string]reflect.Type // the type each decodes into
	rest   reflect.Type            // element type of an ",inline" map, which takes any other key
}

// fieldsOf lists the keys of struct t as yaml.v3's getStructInfo does:
// exported fields (and embedded ones), named by their yaml tag or else
// their lower-cased Go name, "-" left out, ",inline" structs flattened and
// an ",inline" map taking the keys no field has.
func fieldsOf(t reflect.Type) structFields {
	sf := structFields{byName: map[string]reflect.Type{}}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.PkgPath != "" && !f.Anonymous {
				continue
			}
			tag := f.Tag.Get("yaml")
			if tag == "" && !strings.Contains(string(f.Tag), ":") {
				tag = string(f.Tag)
			}
			if tag == "-" {
				continue
			}
			name, flags, _ := strings.Cut(tag, ",")
			if strings.Contains(","+flags+",", ",inline,") {
				ft := f.Type
				for ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				switch ft.Kind() {
				case reflect.Map:
					sf.rest = ft.Elem()
				case reflect.Struct:
					walk(ft)
				}
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			if _, dup := sf.byName[name]; !dup {
				sf.names = append(sf.names, name)
			}
			sf.byName[name] = f.Type
		}
	}
	walk(t)
	return sf
}

// fileFieldFor is the field to use instead of key when key is a secret that
// the schema takes only from a file: password for password_file, key for
// key_file, and so on ("" when there is none).
func fileFieldFor(key string, known []string) string {
	k := strings.ToLower(key)
	for _, name := range known {
		if name == k+"_file" {
			return name
		}
	}
	for _, p := range passwordSpellings {
		if k == p {
			for _, name := range known {
				if name == "password_file" {
					return name
				}
			}
		}
	}
	return ""
}

// nearest is the known field closest to key by edit distance (letter case
// ignored, a swap of two neighbours one edit), when it is close enough to
// be the same word mistyped: at most one edit in three letters of the
// field, and always one. "" when none is.
func nearest(key string, known []string) string {
	k := strings.ToLower(key)
	best, bestDist := "", 0
	for _, name := range known {
		limit := max(1, len(name)/3)
		if d := editDistance(k, name, limit); d <= limit && (best == "" || d < bestDist) {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b
// (insert, delete, replace, swap of neighbours), in bytes; past limit it
// returns limit+1 without computing, so a long key costs nothing.
func editDistance(a, b string, limit int) int {
	if abs(len(a)-len(b)) > limit {
		return limit + 1
	}
	// Three rows: two back (for swaps), one back, current.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
