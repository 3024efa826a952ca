package cuptiwrap

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// EnvLibrary names the environment variable that overrides the libcupti
// search when Options.Library is empty.
const EnvLibrary = "DEVPROF_CUPTI_LIB"

// sonames are tried newest first: a machine with several toolkits most
// likely runs its newest driver, and CUPTI must not be older than the CUDA
// runtime the program uses. Every 11.x minor is listed because CUDA 11
// toolkits pinned the minor into the soname (jax-ml/jax#9272).
var sonames = []string{
	"libcupti.so.13",
	"libcupti.so.12",
	"libcupti.so.11.8", "libcupti.so.11.7", "libcupti.so.11.6", "libcupti.so.11.5",
	"libcupti.so.11.4", "libcupti.so.11.3", "libcupti.so.11.2", "libcupti.so.11.1", "libcupti.so.11.0",
	"libcupti.so",
}

// place is one entry of the search: a path/soname to dlopen, or a
// directory that was looked at and had nothing (reason set).
type place struct {
	path   string
	reason string
}

// searchPlaces returns where to look for libcupti, in order. explicit is
// true when the caller named the library (then it is the only place: a
// wrong explicit path should fail, not quietly load some other CUPTI).
func searchPlaces(library string, getenv func(string) string) (places []place, explicit bool) {
	if library != "" {
		return []place{{path: library}}, true
	}
	if p := getenv(EnvLibrary); p != "" {
		return []place{{path: p}}, true
	}
	for _, s := range sonames {
		places = append(places, place{path: s})
	}
	for _, dir := range toolkitDirs(getenv) {
		places = append(places, dirPlaces(dir)...)
	}
	return places, false
}

// toolkitDirs lists the CUDA toolkit and pip-wheel directories that may
// hold libcupti but are usually not on the loader's path.
func toolkitDirs(getenv func(string) string) []string {
	var roots []string
	for _, env := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if r := getenv(env); r != "" {
			roots = append(roots, r)
		}
	}
	roots = append(roots, "/usr/local/cuda")
	target := "targets/x86_64-linux/lib"
	if runtime.GOARCH == "arm64" {
		target = "targets/sbsa-linux/lib"
	}
	var dirs []string
	for _, r := range roots {
		for _, sub := range []string{"extras/CUPTI/lib64", target} {
			d := filepath.Join(r, sub)
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	// pip wheels (nvidia-cuda-cupti-cu12, nvidia-cuda-cupti 13.x) in the
	// active virtualenv or conda env: a glob per env, cheap enough.
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		r := getenv(env)
		if r == "" {
			continue
		}
		for _, pat := range []string{"lib/python3*/site-packages/nvidia/cu13/lib", "lib/python3*/site-packages/nvidia/cuda_cupti/lib"} {
			m, _ := filepath.Glob(filepath.Join(r, pat))
			dirs = append(dirs, m...)
		}
	}
	return dirs
}

// dirPlaces lists the libcupti files in dir, preferred first, or a single
// entry saying why the directory did not help.
func dirPlaces(dir string) []place {
	ents, err := os.ReadDir(dir)
	if err != nil {
		reason := "no such directory"
		if !os.IsNotExist(err) {
			reason = err.Error()
		}
		return []place{{path: dir + "/", reason: reason}}
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "libcupti.so") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return []place{{path: dir + "/", reason: "no libcupti.so* in this directory"}}
	}
	slices.SortFunc(names, func(a, b string) int { return compareSonames(b, a) })
	out := make([]place, len(names))
	for i, n := range names {
		out[i] = place{path: filepath.Join(dir, n)}
	}
	return out
}

// compareSonames orders libcupti.so.X.Y names by version numbers; the bare
// libcupti.so sorts first (lowest).
func compareSonames(a, b string) int {
	pa := strings.Split(strings.TrimPrefix(a, "libcupti.so"), ".")
	pb := strings.Split(strings.TrimPrefix(b, "libcupti.so"), ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return strings.Compare(a, b)
}

// layoutFor decides which record layouts a library writes. The API version
// alone cannot tell 11.8 from 12.0/12.1 (both report 18), so the soname or
// the real file name (libcupti.so.2022.x is 11.8, 2023+ is 12) breaks the
// tie. Getting the tie wrong is harmless for what devprof reads: the
// fields gated on "12" do not exist, and those gated on "11.8" are present
// in both.
func layoutFor(version uint32, soname, resolved string) string {
	switch {
	case version >= 130000:
		return "13"
	case version >= 20:
		return "12"
	case version < 18:
		return "11"
	}
	if strings.Contains(soname, ".so.12") {
		return "12"
	}
	base := filepath.Base(resolved)
	if rest, ok := strings.CutPrefix(base, "libcupti.so."); ok {
		if year, _, _ := strings.Cut(rest, "."); len(year) == 4 {
			if y, err := strconv.Atoi(year); err == nil && y >= 2023 {
				return "12"
			}
		}
	}
	return "11.8"
}

// layoutAtLeast compares layout names in release order.
func layoutAtLeast(layout, min string) bool {
	rank := func(l string) int {
		switch l {
		case "11":
			return 0
		case "11.8":
			return 1
		case "12":
			return 2
		case "13":
			return 3
		}
		return -1
	}
	return rank(layout) >= rank(min)
}
