module github.com/devprof/devprof

go 1.26.0

require google.golang.org/protobuf v1.36.12

require go.uber.org/goleak v1.3.0
