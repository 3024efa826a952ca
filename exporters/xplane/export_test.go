package xplane

// DecodeSpace runs the reader's decoder alone, for BenchmarkDecodeXSpace.
func DecodeSpace(b []byte) error {
	_, err := decodeSpace(bytesSource(b))
	return err
}
