package analysis

import (
	"slices"
	"sort"
)

// HostReport is one host's analysis, as CompareHosts takes it: the
// report, and the Unix time of its timeline's zero so that the hosts'
// steps can be lined up.
type HostReport struct {
	Host   string
	Report *Report
	// WallOffsetNS is what turns the report's timeline into Unix
	// nanoseconds: a time t of the trace (Report.StartNS + a step's
	// StartNS) was at Unix time t + WallOffsetNS. 0 when the trace says
	// no wall clock (skew is then not measured for it).
	WallOffsetNS int64
}

// DefaultStraggler is how far (a fraction) a host's median step may
// exceed the median host's before CompareHosts calls it a straggler.
const DefaultStraggler = 0.10

// Hosts is the across-hosts section: each host's step times side by
// side, the stragglers, and the skew between the hosts' step starts.
type Hosts struct {
	// Hosts lists every host in name order.
	Hosts []HostSteps `json:"hosts"`
	// MedianStepNS is the median over the hosts (with steps) of their
	// median step time: the yardstick a straggler is measured by.
	MedianStepNS int64 `json:"median_step_ns"`
	// Stragglers names the hosts whose median step exceeds MedianStepNS
	// by more than the threshold, the slowest first.
	Stragglers []string `json:"stragglers"`
	// Threshold is the fraction a straggler exceeds the median by.
	Threshold float64 `json:"threshold"`
	// Skew is how far apart the hosts begin the same step; nil when
	// fewer than two hosts have wall clocks and step numbers in common.
	Skew *Skew `json:"skew,omitempty"`
}

// HostSteps is one host's steps beside the others'.
type HostSteps struct {
	Host string `json:"host"`
	// Steps counts the host's steps after its warm-up; Wall is their
	// distribution.
	Steps int          `json:"steps"`
	Wall  Distribution `json:"wall"`
	// Excess is how far the host's median step is from MedianStepNS, as
	// a fraction (0.25: a quarter slower; negative: faster).
	Excess    float64 `json:"excess"`
	Straggler bool    `json:"straggler"`
	// Slowest is the host's slowest step after its warm-up (nil with no
	// steps).
	Slowest *Step `json:"slowest,omitempty"`
	// LateNS is the host's median lateness in starting a step: over the
	// steps every host with a wall clock ran, how long after the earliest
	// host it began. 0 for the host that leads; -1 when not measured.
	LateNS int64 `json:"late_ns"`
}

// Skew is the spread of the hosts' step starts.
type Skew struct {
	// Steps counts the step numbers every host with a wall clock ran.
	Steps int `json:"steps"`
	// Spread is the distribution over those steps of the time between
	// the first host's start and the last one's.
	Spread Distribution `json:"spread"`
	// Worst is the step with the widest spread, with the hosts that
	// began it first and last.
	Worst      int64  `json:"worst_step"`
	WorstNS    int64  `json:"worst_ns"`
	WorstFirst string `json:"worst_first"`
	WorstLast  string `json:"worst_last"`
}

// CompareHosts puts the hosts' step times side by side and names the
// stragglers: hosts whose median step (after its warm-up) exceeds the
// median host's by more than threshold (a fraction; 0 means
// DefaultStraggler). A host with no steps is listed but neither
// measured nor a straggler. Skew lines the hosts' steps up by step
// number on the wall clock, so it needs the traces' clock anchors and
// the same step numbering on every host (a synchronous data-parallel
// job's).
func CompareHosts(hosts []HostReport, threshold float64) *Hosts {
	if threshold <= 0 {
		threshold = DefaultStraggler
	}
	hs := slices.Clone(hosts)
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].Host < hs[j].Host })
	out := &Hosts{Threshold: threshold, Hosts: make([]HostSteps, len(hs))}
	var medians []int64
	for i, h := range hs {
		row := HostSteps{Host: h.Host, LateNS: -1}
		if st := stepsOf(h.Report); st != nil && st.Wall.Count > 0 {
			row.Steps, row.Wall = st.Wall.Count, st.Wall
			medians = append(medians, st.Wall.P50)
			if len(st.Slowest) > 0 {
				s := st.Slowest[0]
				row.Slowest = &s
			}
		}
		out.Hosts[i] = row
	}
	if len(medians) == 0 {
		return out
	}
	slices.Sort(medians)
	out.MedianStepNS = medians[(len(medians)-1)/2] // the lower median: a straggler never moves it up among two hosts
	for i := range out.Hosts {
		row := &out.Hosts[i]
		if row.Steps == 0 || out.MedianStepNS <= 0 {
			continue
		}
		row.Excess = float64(row.Wall.P50-out.MedianStepNS) / float64(out.MedianStepNS)
		row.Straggler = len(medians) > 1 && row.Excess > threshold
	}
	var slow []HostSteps
	for _, row := range out.Hosts {
		if row.Straggler {
			slow = append(slow, row)
		}
	}
	sort.SliceStable(slow, func(i, j int) bool { return slow[i].Excess > slow[j].Excess })
	for _, row := range slow {
		out.Stragglers = append(out.Stragglers, row.Host)
	}
	out.Skew = skewOf(hs, out.Hosts)
	return out
}

// stepsOf returns a report's steps, nil without any.
func stepsOf(r *Report) *Steps {
	if r == nil {
		return nil
	}
	return r.Steps
}

// skewOf lines up the step starts of the hosts with a wall clock by step
// number, over the numbers they all ran after their warm-ups, and sets
// each row's LateNS.
func skewOf(hs []HostReport, rows []HostSteps) *Skew {
	type clocked struct {
		row    *HostSteps
		starts map[int64]int64 // step number → Unix ns
	}
	var cs []clocked
	for i, h := range hs {
		st := stepsOf(h.Report)
		if st == nil || h.WallOffsetNS == 0 || len(st.All) <= st.Warmup {
			continue
		}
		starts := make(map[int64]int64, len(st.All)-st.Warmup)
		for _, s := range st.All[st.Warmup:] {
			if _, dup := starts[s.Number]; !dup { // a number used twice (two loops) is matched by its first step
				starts[s.Number] = h.Report.StartNS + s.StartNS + h.WallOffsetNS
			}
		}
		cs = append(cs, clocked{&rows[i], starts})
	}
	if len(cs) < 2 {
		return nil
	}
	var common []int64
	for n := range cs[0].starts {
		all := true
		for _, c := range cs[1:] {
			if _, ok := c.starts[n]; !ok {
				all = false
				break
			}
		}
		if all {
			common = append(common, n)
		}
	}
	if len(common) == 0 {
		return nil
	}
	slices.Sort(common)
	sk := &Skew{Steps: len(common), Worst: -1}
	spreads := make([]int64, 0, len(common))
	late := make([][]int64, len(cs))
	for _, n := range common {
		first, last := 0, 0
		for i, c := range cs {
			if c.starts[n] < cs[first].starts[n] {
				first = i
			}
			if c.starts[n] > cs[last].starts[n] {
				last = i
			}
		}
		lo := cs[first].starts[n]
		spread := cs[last].starts[n] - lo
		spreads = append(spreads, spread)
		if sk.Worst < 0 || spread > sk.WorstNS {
			sk.Worst, sk.WorstNS, sk.WorstFirst, sk.WorstLast = n, spread, cs[first].row.Host, cs[last].row.Host
		}
		for i, c := range cs {
			late[i] = append(late[i], c.starts[n]-lo)
		}
	}
	sk.Spread = distribution(spreads)
	for i, c := range cs {
		c.row.LateNS = distribution(late[i]).P50
	}
	return sk
}
