package cuptisource

// corrTable maps CUPTI correlation ids to small values. CUPTI numbers the
// API calls of a process from 1, so the ids of one collection usually lie
// in a narrow range: then the table is a slice indexed from the smallest
// id, several times faster at Stop than a map over hundreds of thousands
// of records. Ids spread wider than a few times the records fall back to
// a map, so memory stays proportional to what was recorded.
type corrTable struct {
	base   uint32
	dense  []uint32 // value+1 at id-base; 0 = absent
	sparse map[uint32]uint32
}

// newCorrTable returns a table for ids in lo..hi, given n records.
func newCorrTable(lo, hi uint32, n int) *corrTable {
	if hi >= lo && uint64(hi-lo) < 4*uint64(n)+1024 {
		return &corrTable{base: lo, dense: make([]uint32, uint64(hi-lo)+1)}
	}
	return &corrTable{sparse: map[uint32]uint32{}}
}

func (t *corrTable) set(id, v uint32) {
	if t.dense != nil && id >= t.base && uint64(id-t.base) < uint64(len(t.dense)) && v != ^uint32(0) {
		t.dense[id-t.base] = v + 1
		return
	}
	if t.sparse == nil {
		t.sparse = map[uint32]uint32{}
	}
	t.sparse[id] = v
}

func (t *corrTable) get(id uint32) (uint32, bool) {
	if t.dense != nil && id >= t.base && uint64(id-t.base) < uint64(len(t.dense)) {
		if v := t.dense[id-t.base]; v != 0 {
			return v - 1, true
		}
	}
	v, ok := t.sparse[id]
	return v, ok
}
