package mode

import (
	"strings"
	"testing"
)

func TestParseIsCaseInsensitive(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Mode
	}{
		{"auto", Auto}, {"on", On}, {"off", Off},
		{"AUTO", Auto}, {"On", On}, {" oFF\n", Off},
	} {
		got, err := Parse(c.in, "X.Mode")
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseRejectsOtherNames(t *testing.T) {
	for _, in := range []string{"", "always", "1", "true", "o n"} {
		_, err := Parse(in, "GoRuntime.Mode (advanced key go_runtime)")
		if err == nil {
			t.Errorf("Parse(%q) succeeded", in)
			continue
		}
		if want := `GoRuntime.Mode (advanced key go_runtime) "` + in + `": want auto, on or off`; err.Error() != want {
			t.Errorf("Parse(%q): %q, want %q", in, err, want)
		}
	}
}

func TestStringRoundTrips(t *testing.T) {
	for _, m := range []Mode{Auto, On, Off} {
		if !m.Valid() {
			t.Errorf("%v not valid", m)
		}
		if got, err := Parse(m.String(), "m"); err != nil || got != m {
			t.Errorf("Parse(%v.String()) = %v, %v", m, got, err)
		}
	}
	if m := Mode(7); m.Valid() || !strings.Contains(m.String(), "7") {
		t.Errorf("Mode(7): valid %v, %q", m.Valid(), m.String())
	}
}
