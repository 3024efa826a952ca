package cuptiwrap

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSearchPlaces(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	if p, explicit := searchPlaces("/opt/x/libcupti.so", getenv); !explicit || len(p) != 1 || p[0].path != "/opt/x/libcupti.so" {
		t.Errorf("explicit library: %v %v", p, explicit)
	}
	env[EnvLibrary] = "/env/libcupti.so.12"
	if p, explicit := searchPlaces("", getenv); !explicit || len(p) != 1 || p[0].path != "/env/libcupti.so.12" {
		t.Errorf("env library: %v %v", p, explicit)
	}
	delete(env, EnvLibrary)

	home := t.TempDir()
	env["CUDA_HOME"] = home
	dir := filepath.Join(home, "targets/x86_64-linux/lib")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"libcupti.so", "libcupti.so.12", "libcupti.so.12.8.90", "libcupti.so.2025.1.1", "libnvperf_host.so"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	places, explicit := searchPlaces("", getenv)
	if explicit {
		t.Error("search is not explicit")
	}
	var paths []string
	for _, p := range places {
		paths = append(paths, p.path)
	}
	if !slices.Equal(paths[:len(sonames)], sonames) || sonames[0] != "libcupti.so.13" || sonames[len(sonames)-1] != "libcupti.so" ||
		!slices.Contains(sonames, "libcupti.so.11.8") {
		t.Errorf("sonames first, newest first: %v", paths)
	}
	rest := strings.Join(paths[len(sonames):], "\n")
	wantOrder := []string{
		filepath.Join(home, "extras/CUPTI/lib64") + "/",
		filepath.Join(dir, "libcupti.so.2025.1.1"),
		filepath.Join(dir, "libcupti.so.12.8.90"),
		filepath.Join(dir, "libcupti.so.12"),
		filepath.Join(dir, "libcupti.so") + "\n",
		"/usr/local/cuda/extras/CUPTI/lib64",
	}
	last := -1
	for _, w := range wantOrder {
		i := strings.Index(rest+"\n", w)
		if i < 0 || i < last {
			t.Errorf("%q missing or out of order in\n%s", w, rest)
		}
		last = i
	}
	if strings.Contains(rest, "nvperf") {
		t.Errorf("non-CUPTI library listed:\n%s", rest)
	}
	for _, p := range places {
		if p.path == filepath.Join(home, "extras/CUPTI/lib64")+"/" && p.reason != "no such directory" {
			t.Errorf("missing directory's reason = %q", p.reason)
		}
	}
}

func TestLayoutFor(t *testing.T) {
	for _, tc := range []struct {
		version          uint32
		soname, resolved string
		want             string
	}{
		{18, "libcupti.so.11.8", "/usr/lib/x86_64-linux-gnu/libcupti.so.2022.3.0", "11.8"},
		{18, "libcupti.so.12", "/usr/local/cuda/lib64/libcupti.so.2022.4.0", "12"},
		{18, "", "/x/libcupti.so.2023.1.1", "12"},
		{18, "", "/x/libcupti-fake.so", "11.8"},
		{17, "libcupti.so.11.7", "", "11"},
		{20, "libcupti.so.12", "", "12"},
		{28, "", "", "12"},
		{130000, "libcupti.so.13", "", "13"},
		{130100, "", "", "13"},
	} {
		if got := layoutFor(tc.version, tc.soname, tc.resolved); got != tc.want {
			t.Errorf("layoutFor(%d, %q, %q) = %q, want %q", tc.version, tc.soname, tc.resolved, got, tc.want)
		}
	}
	if !layoutAtLeast("13", "11.8") || layoutAtLeast("11", "11.8") || !layoutAtLeast("12", "12") || layoutAtLeast("12", "13") {
		t.Error("layoutAtLeast")
	}
}
