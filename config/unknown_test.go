package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// An unknown field is named by its YAML path, with the nearest known field
// when one is close, and a secret written in the file points to its _file
// field. The fixtures are in testdata/unknown.
func TestUnknownFieldErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"top-level.yml", `config: line 2: unknown field "targts" (did you mean targets?)`},
		{"target-index.yml", `config: line 6: targets[1]: unknown field "adr" (did you mean addr?)`},
		{"sentinel.yml", `config: line 7: targets[1].sentinel: unknown field "master_nme" (did you mean master_name?)`},
		{"global-probe.yml", `config: line 5: global.probe: unknown field "timout" (did you mean timeout?)`},
		{"flow-probe.yml", `config: line 2: targets[0].probe: unknown field "addr"`},
		{"file-sd-tls.yml", `config: line 6: file_sd_configs[0].target.tls: unknown field "ca_fil" (did you mean ca_file?)`},
		{"http-sd-basic-auth.yml", `config: line 6: http_sd_configs[0].basic_auth: unknown field "pasword_file" (did you mean password_file?)`},
		{"http-sd-header.yml", `config: line 6: http_sd_configs[0].http_headers.X-Team: unknown field "value" (did you mean values?)`},
		{"relabel.yml", `config: line 5: relabel_configs[0]: unknown field "sourcelabels" (did you mean source_labels?)`},
		{"not-close.yml", `config: line 6: targets[0]: unknown field "team"`},
		{"newline-key.yml", `config: line 4: targets[0]: unknown field "ad\nr" (did you mean addr?)`},
		{"global-labels.yml", `config: line 3: global: unknown field "labels"`},
		{"password.yml", `config: line 5: targets[0]: password is not read from the config file; put it in a file and name it with password_file`},
		{"sentinel-password.yml", `config: line 7: targets[0].sentinel: password is not read from the config file; put it in a file and name it with password_file`},
		{"file-sd-requirepass.yml", `config: line 5: file_sd_configs[0].target: requirepass is not read from the config file; put it in a file and name it with password_file`},
		{"tls-key.yml", `config: line 6: targets[0].tls: key is not read from the config file; put it in a file and name it with key_file`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "unknown", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(b)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant    %s", err, tc.want)
			}
		})
	}
}

func TestNearestField(t *testing.T) {
	known := []string{"clients", "pipeline", "rate", "test_time", "addr", "addrs"}
	for _, tc := range []struct{ key, want string }{
		{"clinets", "clients"}, // two neighbours swapped: one edit
		{"Clients", "clients"},
		{"pipelin", "pipeline"},
		{"test-time", "test_time"},
		{"testtime", "test_time"},
		{"adr", "addr"},
		{"addrss", "addrs"}, // the closest, not the first close one
		{"rat", "rate"},
		{"rates", "rate"},
		{"duration", ""},
		{"ra", ""}, // two edits from rate: too far for a word of four letters
		{"colour", ""},
		{strings.Repeat("x", 1<<20), ""},
	} {
		if got := nearest(tc.key, known); got != tc.want {
			t.Errorf("nearest(%.20q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

// The known fields come from the yaml tags as yaml.v3 reads them, so a new
// field of the schema is known (and suggested) with no list to keep.
func TestFieldsOf(t *testing.T) {
	type inner struct {
		Deep string `yaml:"deep_field"`
	}
	type s struct {
		Tagged   int               `yaml:"tagged,omitempty"`
		Untagged string            // yaml.v3: the lower-cased name
		Skipped  bool              `yaml:"-"`
		_        int               // unexported
		Inner    inner             `yaml:",inline"`
		Rest     map[string]string `yaml:",inline"`
	}
	f := fieldsOf(reflect.TypeFor[s]())
	if got := strings.Join(f.names, ","); got != "tagged,untagged,deep_field" {
		t.Errorf("names = %s", got)
	}
	if f.rest != reflect.TypeFor[string]() {
		t.Errorf("inline map element = %v", f.rest)
	}
}
