package gotrace

import (
	"math/rand/v2"
	"slices"

	xtrace "golang.org/x/exp/trace"
)

// goTable holds the state of each goroutine the converter keeps, by ID:
// the ones that exist, which a server trace creates and destroys by the
// million while only a few thousand are alive at once. It is open
// addressing with linear probing, at most half full, and deletion moves
// later slots back rather than leaving tombstones: a map's deleted
// entries piled up and made it rehash, a tenth of the conversion. It
// never shrinks, so its size follows the most goroutines alive at once.
type goTable struct {
	slots []goSlot // a power of two
	n     int
	// seed makes where an ID's slot is unknown to whoever wrote the
	// file: a trace made so that every goroutine's ID had one home
	// would make each lookup walk them all.
	seed uint64
}

// goSlot is a goroutine's state and its ID (g nil: an empty slot).
type goSlot struct {
	id xtrace.GoID
	g  *goState
}

// home is where goroutine id's slot is looked for first: IDs come in
// runs, and a mix of their bits with the seed spreads them.
func (t *goTable) home(id xtrace.GoID) int {
	x := (uint64(id) ^ t.seed) * 0xbf58476d1ce4e5b9
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return int(x & uint64(len(t.slots)-1))
}

// get returns goroutine id's state, nil if it has none.
func (t *goTable) get(id xtrace.GoID) *goState {
	if len(t.slots) == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.g == nil {
			return nil
		}
		if s.id == id {
			return s.g
		}
	}
}

// put sets goroutine id's state; id must have none.
func (t *goTable) put(id xtrace.GoID, g *goState) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for t.slots[i].g != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = goSlot{id, g}
	t.n++
}

// delete drops goroutine id's state, if it has one.
func (t *goTable) delete(id xtrace.GoID) {
	if len(t.slots) == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for {
		s := &t.slots[i]
		if s.g == nil {
			return
		}
		if s.id == id {
			break
		}
		i = (i + 1) & mask
	}
	// Move back each later slot of the run whose home is not between
	// the hole and it, so that every slot stays reachable from its home.
	for j := (i + 1) & mask; t.slots[j].g != nil; j = (j + 1) & mask {
		if h := t.home(t.slots[j].id); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = goSlot{}
	t.n--
}

func (t *goTable) grow() {
	old := t.slots
	if old == nil {
		t.seed = rand.Uint64()
	}
	t.slots = make([]goSlot, max(64, 2*len(old)))
	t.n = 0
	for _, s := range old {
		if s.g != nil {
			t.put(s.id, s.g)
		}
	}
}

// ids returns the IDs of the goroutines held, in order.
func (t *goTable) ids() []xtrace.GoID {
	ids := make([]xtrace.GoID, 0, t.n)
	for _, s := range t.slots {
		if s.g != nil {
			ids = append(ids, s.id)
		}
	}
	slices.Sort(ids)
	return ids
}
