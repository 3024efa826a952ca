#!/bin/sh
# Regenerates xplane.pb.go from xplane.proto. Needs protoc (Debian:
# protobuf-compiler) and protoc-gen-go v1.36.12 on PATH
# (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12).
set -eu
cd "$(dirname "$0")"
protoc --go_out=. --go_opt=paths=source_relative xplane.proto
