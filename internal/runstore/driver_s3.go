//go:build !devprof_no_s3

package runstore

// The s3:// driver; -tags devprof_no_s3 leaves it out (see the package doc).
import _ "gocloud.dev/blob/s3blob"
