module github.com/devprof/devprof

go 1.26.0

require google.golang.org/protobuf v1.36.12

require go.uber.org/goleak v1.3.0

require github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	github.com/google/pprof v0.0.0-20261105003125-4bf881d7fb0b
	go.yaml.in/yaml/v4 v4.0.0
	golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4
	gonum.org/v1/plot v0.17.0
	google.golang.org/grpc v1.85.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)
