module github.com/devprof/devprof

go 1.26.0

require google.golang.org/protobuf v1.36.12

require go.uber.org/goleak v1.3.0

require github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	go.yaml.in/yaml/v4 v4.0.0
)
