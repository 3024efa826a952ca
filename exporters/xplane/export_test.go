package xplane

// DecodeSpace runs the reader's decoder alone, for BenchmarkDecodeXSpace.
func DecodeSpace(b []byte) error {
	_, err := decodeSpace(b)
	return err
}
