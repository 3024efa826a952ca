//go:build !devprof_no_gcs

package runstore

// The gs:// driver; -tags devprof_no_gcs leaves it out (see the package doc).
import _ "gocloud.dev/blob/gcsblob"
