package main

// The devprof command reads and writes every kind of bucket log directory,
// so it links every cloud driver; a program that imports trace links
// only the ones it names itself (see the trace package's doc).
import (
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/s3blob"    // s3://
)
