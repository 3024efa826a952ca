//go:build !devprof_no_azure

package runstore

// The azblob:// driver; -tags devprof_no_azure leaves it out (see the package doc).
import _ "gocloud.dev/blob/azureblob"
