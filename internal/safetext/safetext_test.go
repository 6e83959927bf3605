package safetext

import "testing"

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"redis 7.2.4", "redis 7.2.4"},
		{"", ""},
		{"µs, 名前, ü", "µs, 名前, ü"},
		{"\x1b]0;pwned\x07\x1b[2J", `\x1b]0;pwned\a\x1b[2J`},
		{"role:master\r\nfake", `role:master\r\nfake`},
		{"tab\there", `tab\there`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"\u009b31m", `\u009b31m`},                 // C1 CSI
		{"evil\u202egnp.exe", `evil\u202egnp.exe`}, // bidi override
		{"\ufffd kept", "\ufffd kept"},
	} {
		if got := Printable(tc.in); got != tc.want {
			t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzPrintable(f *testing.F) {
	f.Add("\x1b[31mred\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if !clean(out) {
			t.Fatalf("Printable(%q) = %q still has unprintable runes", s, out)
		}
		if Printable(out) != out {
			t.Fatalf("not idempotent on %q", s)
		}
	})
}
