#!/bin/sh
# Regenerates profiler_options.pb.go, profiler_service.pb.go and
# profiler_service_grpc.pb.go from the .proto files here. Needs protoc
# (Debian: protobuf-compiler; the committed code was made with 3.21.12),
# protoc-gen-go v1.36.12 and protoc-gen-go-grpc v1.6.2 on PATH:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
set -eu
cd "$(dirname "$0")"
protoc -I. --go_out=. --go_opt=paths=source_relative \
  --go-grpc_out=. --go-grpc_opt=paths=source_relative \
  profiler_options.proto profiler_service.proto
