package main

// A DST in a bucket is downloaded through internal/runstore (the
// embedded DuckDB has no httpfs extension, and none can be fetched at
// run time), so every scheme devprof export writes is linked here too.
import (
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/s3blob"    // s3://
)
